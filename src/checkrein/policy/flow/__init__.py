"""Session flow rules: the Rule of Two per session and value provenance (pure: values in, values out).

- `labels`  which tools read untrusted input, read private data, or are sinks, and why
- `values`  how argument and result text is normalized and traced
- `state`   a session's legs and the bounded texts it has seen (`FlowState`, immutable)
- `rule`    `check_call` before a call and `after_call` once it was answered
- `plan`    `compile_flow`: every tool's labels and effects, once per compiled policy

The gate (`checkrein.gate.flow`) keeps one `FlowState` per session and identity and feeds it each
call's arguments and what result inspection delivered.
"""

from .labels import FLOW_LABELS, LabelReason, ToolFlow, kind_flow, tool_flow
from .plan import FlowPlan, compile_flow, template_flow_effect
from .rule import FlowLimits, FlowVerdict, ProvenanceHit, after_call, check_call, trace
from .state import FlowState, ResultSeen, Seen, TextLog, observe_task
from .values import candidates, normalize

__all__ = [
    "FLOW_LABELS",
    "FlowLimits",
    "FlowPlan",
    "FlowState",
    "FlowVerdict",
    "LabelReason",
    "ProvenanceHit",
    "ResultSeen",
    "Seen",
    "TextLog",
    "ToolFlow",
    "after_call",
    "candidates",
    "check_call",
    "compile_flow",
    "kind_flow",
    "normalize",
    "observe_task",
    "template_flow_effect",
    "tool_flow",
    "trace",
]
