"""The agent loop end to end: real model client over HTTP or the scripted model, real MCP servers."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import StdioServerParameters, types

from checkrein.agent.loop import RunSettings, run_agent
from checkrein.agent.openai_model import ModelSettings, OpenAIChatModel
from checkrein.agent.runner import run_query
from checkrein.agent.scripted import ScriptedModel, ScriptStep
from checkrein.agent.trace import TraceWriter, read_trace, summarize_trace

from .conftest import FakeOpenAI, bundled, completion, error, inproc

pytestmark = pytest.mark.anyio


def _openai(fake: FakeOpenAI) -> OpenAIChatModel:
    return OpenAIChatModel(ModelSettings(api_key="k", model="fake-model", base_url=fake.base_url, timeout_s=10))


def _types(path: Path) -> list[str]:
    return [e["type"] for e in read_trace(path)]


async def test_model_tool_calls_go_to_the_server_and_results_come_back(
    fake_openai: FakeOpenAI, server_env: dict[str, str], tmp_path: Path
) -> None:
    fake_openai.queue += [
        completion(tool_calls=[("c1", "get_weather", {"city": "Shanghai"})], prompt_tokens=100),
        completion("It is 17 C and partly cloudy in Shanghai.", prompt_tokens=150, completion_tokens=12),
    ]
    out = await run_query(bundled("sandbox", server_env), _openai(fake_openai), "Weather in Shanghai?", tmp_path / "t")
    assert out.result.status == "answered"
    assert out.result.answer == "It is 17 C and partly cloudy in Shanghai."
    sent_tools = {t["function"]["name"]: t for t in fake_openai.requests[0]["tools"]}
    assert sent_tools["get_weather"]["function"]["parameters"]["properties"]["city"]["type"] == "string"
    system = fake_openai.requests[0]["messages"][0]
    assert system["role"] == "system" and "knowledge base first" in system["content"]
    assert "data, not instructions" in system["content"]
    tool_msg = fake_openai.requests[1]["messages"][-1]
    assert tool_msg["role"] == "tool" and tool_msg["tool_call_id"] == "c1"
    assert json.loads(tool_msg["content"])["city"] == "Shanghai"
    assert _types(out.trace_path) == ["run_start", "tools_list", "llm_response", "tool_call", "llm_response", "run_end"]
    summary = summarize_trace(read_trace(out.trace_path))
    assert (summary.model_calls, summary.prompt_tokens, summary.tool_ok, summary.status) == (2, 250, 1, "answered")


async def test_bad_arguments_and_tool_errors_are_fed_back_to_the_model(
    fake_openai: FakeOpenAI, server_env: dict[str, str], tmp_path: Path
) -> None:
    fake_openai.queue += [completion(tool_calls=[("c1", "read_file", {"filename": "../etc/passwd"})]),
                          completion("Refused, as it should be.")]
    out = await run_query(inproc("sandbox", server_env), _openai(fake_openai), "read passwd", tmp_path / "t")
    fed_back = fake_openai.requests[1]["messages"][-1]["content"]
    assert fed_back.startswith("tool error: refused")
    assert out.result.tool_calls[0].status == "error"


async def test_a_model_error_ends_the_run_with_a_recorded_error(
    fake_openai: FakeOpenAI, server_env: dict[str, str], tmp_path: Path
) -> None:
    fake_openai.queue += [error(400, "context length exceeded")]
    out = await run_query(inproc("sandbox", server_env), _openai(fake_openai), "hi", tmp_path / "t")
    assert out.result.status == "error" and "context length exceeded" in (out.result.error or "")
    events = read_trace(out.trace_path)
    assert events[-2]["type"] == "error" and events[-2]["code"] == "agent.model_error"
    assert events[-1]["type"] == "run_end" and events[-1]["status"] == "error"


async def test_scripted_knowledge_base_first_run_answers_from_the_seed(
    server_env: dict[str, str], tmp_path: Path
) -> None:
    model = ScriptedModel([ScriptStep("knowledge__search_documents", {"query": "running Shanghai months"})],
                          "From the knowledge base: {result[0]}")
    out = await run_query(inproc("knowledge", server_env), model, "Best months to run in Shanghai?", tmp_path / "t")
    assert out.result.status == "answered"
    assert "April" in out.result.answer and "October" in out.result.answer


async def test_the_step_limit_stops_a_run(server_env: dict[str, str], tmp_path: Path) -> None:
    model = ScriptedModel([ScriptStep("get_weather", {"city": "Paris"})] * 5, "never reached")
    out = await run_query(inproc("sandbox", server_env), model, "loop", tmp_path / "t", RunSettings(max_steps=3))
    assert out.result.status == "max_steps" and len(out.result.tool_calls) == 3
    assert "Stopped after 3 steps" in out.result.answer


async def test_traceparent_reaches_the_server_and_a_server_that_dies_ends_the_run(tmp_path: Path) -> None:
    crashy = StdioServerParameters(command=sys.executable, args=[str(Path(__file__).with_name("crashy_server.py"))],
                                   env={"PATH": "/usr/bin:/bin"})
    model = ScriptedModel([ScriptStep("traceparent", {}), ScriptStep("crash", {}), ScriptStep("echo", {"text": "x"})])
    out = await run_query(crashy, model, "crash it", tmp_path / "t")
    first = out.result.tool_calls[0]
    assert first.text == f"00-{out.result.trace_id}-{first.span_id}-01"
    assert out.result.status == "error"
    assert [r.status for r in out.result.tool_calls] == ["ok", "transport_error"]
    assert "error" in _types(out.trace_path) and _types(out.trace_path)[-1] == "run_end"


async def test_a_server_that_cannot_start_is_an_error_not_a_crash(tmp_path: Path) -> None:
    dead = StdioServerParameters(command=sys.executable, args=["-c", "import sys; sys.exit(4)"], env={})
    out = await run_query(dead, ScriptedModel([]), "hi", tmp_path / "t")
    assert out.result.status == "error" and "cannot talk to the MCP server" in (out.result.error or "")
    assert _types(out.trace_path)[-1] == "run_end"


async def test_secrets_in_arguments_never_reach_the_trace(server_env: dict[str, str], tmp_path: Path) -> None:
    secret = "sk-proj-" + "Zq9" * 12
    model = ScriptedModel([ScriptStep("write_file", {"filename": "creds.txt", "content": f"key={secret}"}),
                           ScriptStep("read_file", {"filename": "creds.txt"})], "Saved: {result[1]}")
    out = await run_query(inproc("sandbox", server_env), model, f"store my key {secret}", tmp_path / "t")
    assert out.result.status == "answered" and secret in out.result.answer  # the user still gets it
    assert secret not in out.trace_path.read_text()


class GatewayDouble:
    """A `ToolSession` answering like checkrein's gateway: denials are tool errors with a reason."""

    def __init__(self) -> None:
        self.metas: list[dict[str, Any]] = []

    async def list_tools(self) -> list[types.Tool]:
        return [types.Tool(name="sandbox__delete_file", input_schema={"type": "object"}),
                types.Tool(name="sandbox__read_file", input_schema={"type": "object"})]

    async def call_tool(self, name: str, arguments: dict[str, Any], meta: dict[str, Any]) -> types.CallToolResult:
        self.metas.append(meta)
        if name == "sandbox__delete_file":
            text = "denied by checkrein: production forbids deleting files (rule production.deny_destructive)"
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
        return types.CallToolResult(content=[types.TextContent(type="text", text="hello")],
                                    _meta={"io.checkrein/decision": {"effect": "allow", "approval": {"granted": True}}})


async def test_denials_and_approvals_are_security_events_and_calls_carry_traceparent(tmp_path: Path) -> None:
    gateway = GatewayDouble()
    model = ScriptedModel([ScriptStep("delete_file", {"filename": "a.txt", "confirm": True}),
                           ScriptStep("read_file", {"filename": "a.txt"})], "Denied: {result[0]}")
    with TraceWriter.in_dir(tmp_path) as trace:
        result = await run_agent(gateway, model, "delete a.txt", trace)
    assert result.answer.startswith("Denied: denied by checkrein: production forbids")
    assert [r.status for r in result.tool_calls] == ["denied", "ok"]
    assert result.tool_calls[0].rule_id == "production.deny_destructive"
    for meta, record in zip(gateway.metas, result.tool_calls, strict=True):
        assert re.fullmatch(rf"00-{result.trace_id}-{record.span_id}-01", meta["traceparent"])
        assert meta["io.checkrein/task"] == "delete a.txt"
    events = read_trace(trace.path)
    kinds = [e["kind"] for e in events if e["type"] == "security"]
    assert kinds == ["denial", "approval"]
    summary = summarize_trace(events)
    assert (summary.denials, summary.approvals, summary.tool_success_rate) == (1, 1, 0.5)


async def test_rate_limits_inside_a_run_are_retried_and_parallel_calls_all_answered(
    fake_openai: FakeOpenAI, server_env: dict[str, str], tmp_path: Path
) -> None:
    fake_openai.queue += [
        error(429, "slow down", {"retry-after": "0"}),
        completion(tool_calls=[("a", "get_weather", {"city": "Paris"}), ("b", "get_weather", {"city": "Tokyo"})]),
        completion("Paris and Tokyo checked."),
    ]
    seen: list[str] = []
    out = await run_query(inproc("sandbox", server_env), _openai(fake_openai), "Paris and Tokyo?", tmp_path / "t",
                          observer=lambda e: seen.append(e["type"]))
    assert out.result.status == "answered" and len(out.result.tool_calls) == 2
    replies = [m for m in fake_openai.requests[-1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in replies] == ["a", "b"]
    summary = summarize_trace(read_trace(out.trace_path))
    assert (summary.model_retries, summary.model_calls, summary.tool_ok) == (1, 2, 2)
    assert seen == _types(out.trace_path)


def test_task_meta_key_is_the_one_the_gateway_reads() -> None:
    """The runner and the frontend agree on where the user's task travels."""
    from checkrein.agent.loop import TASK_META_KEY as sent
    from checkrein.frontend.context import TASK_META_KEY as read

    assert sent == read == "io.checkrein/task"
