"""checkrein's agent runner: an LLM loop whose tool calls go through the gateway.

    run_query(gateway_target(config_path), model, query, trace_dir)   # one run, one trace file

Models implement the `Model` protocol: `OpenAIChatModel` (any OpenAI-compatible endpoint) and
`ScriptedModel` (replays scripted tool calls, offline). Traces are JSONL (`TraceWriter`) joined
to the gateway's audit by the W3C trace id sent in each call's `_meta.traceparent`.
"""

from .compression import CompressionOutcome, compress, count_tokens, estimate_tokens
from .loop import SYSTEM_PROMPT, RunResult, RunSettings, ToolCallRecord, ToolSession, run_agent
from .model import (
    AgentError,
    Model,
    ModelConfigError,
    ModelError,
    ModelReply,
    ScriptError,
    ToolRequest,
    Usage,
)
from .openai_model import ModelSettings, OpenAIChatModel, resolve_settings
from .runner import RunOutcome, choose_model, gateway_target, run_query, server_target, trace_dir_for
from .scripted import ScriptedModel, ScriptStep, load_script, script_from_data
from .trace import TraceSummary, TraceWriter, read_trace, summarize_trace, traceparent

__all__ = [
    "SYSTEM_PROMPT",
    "AgentError",
    "CompressionOutcome",
    "Model",
    "ModelConfigError",
    "ModelError",
    "ModelReply",
    "ModelSettings",
    "OpenAIChatModel",
    "RunOutcome",
    "RunResult",
    "RunSettings",
    "ScriptError",
    "ScriptStep",
    "ScriptedModel",
    "ToolCallRecord",
    "ToolRequest",
    "ToolSession",
    "TraceSummary",
    "TraceWriter",
    "Usage",
    "choose_model",
    "compress",
    "count_tokens",
    "estimate_tokens",
    "gateway_target",
    "load_script",
    "read_trace",
    "resolve_settings",
    "run_agent",
    "run_query",
    "script_from_data",
    "server_target",
    "summarize_trace",
    "trace_dir_for",
    "traceparent",
]
