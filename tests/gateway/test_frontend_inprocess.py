"""The frontend's MCP server in process (JSON-RPC over memory streams): what becomes of each request."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from gateway_support import CapturingTrail, make_config
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp.server.session import ServerSession

from checkrein.catalog import ToolDefinition
from checkrein.frontend import CallFactory, GatewayServer
from checkrein.frontend.context import local_identity
from checkrein.gate.approval import ElicitApprover, SessionElicitor
from checkrein.gate.chain import CallContext, CallNext, CallOutcome
from checkrein.gate.pipeline import Gate
from checkrein.gate.steps import ApprovalStep
from checkrein.policy import ToolCall
from checkrein.testing.memory_upstream import MemoryUpstream

pytestmark = pytest.mark.anyio

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"


async def front_for(tmp_path: Path) -> tuple[GatewayServer, MemoryUpstream, CapturingTrail]:
    up = MemoryUpstream("a")
    up.add_tool("echo", lambda a: str(a.get("text", "")))
    trail = CapturingTrail()
    gate = Gate(make_config(tmp_path, {"allow": ["a__*"]}), [up], trail)
    await gate.start()
    return GatewayServer(gate, CallFactory.for_stdio()), up, trail


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_call_carries_identity_session_and_the_callers_trace(tmp_path: Path, mode: str) -> None:
    front, _, trail = await front_for(tmp_path)
    with anyio.fail_after(10):
        async with Client(front.server, mode=mode) as c:  # type: ignore[arg-type]
            await c.call_tool("a__echo", {"text": "x"}, meta={"traceparent": f"00-{TRACE}-{PARENT}-01"})
            await c.call_tool("a__echo", {"text": "y"})
    first, second = [c for c in trail.calls if c.kind == "tool"]
    assert (first.trace_id, first.parent_span_id) == (TRACE, PARENT)
    assert len(first.span_id) == 16 and first.span_id != PARENT
    assert second.trace_id != TRACE and len(second.trace_id) == 32 and second.parent_span_id is None
    assert first.identity["user"] == local_identity().user and first.identity["source"] == "stdio"
    assert first.session_id == second.session_id and first.session_id.startswith("stdio-")


async def test_catalog_change_reaches_a_connected_client_as_list_changed(tmp_path: Path) -> None:
    front, up, _ = await front_for(tmp_path)
    changed = anyio.Event()

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    with anyio.fail_after(10):
        async with Client(front.server, mode="legacy", message_handler=on_message, cache=None) as c:  # type: ignore[arg-type]
            assert [t.name for t in (await c.list_tools()).tools] == ["a__echo"]
            await up.change_tool(ToolDefinition("a", "echo", description="changed"))
            await front.gate.refresh("a")
            await changed.wait()
            assert (await c.list_tools()).tools == []


async def test_gate_without_upstreams_still_answers(tmp_path: Path) -> None:
    gate = Gate(make_config(tmp_path), [], CapturingTrail())
    await gate.start()
    front = GatewayServer(gate, CallFactory.for_stdio())
    with anyio.fail_after(10):
        async with Client(front.server, mode="legacy") as c:  # type: ignore[arg-type]
            assert (await c.list_tools()).tools == []
            result = await c.call_tool("x__y", {})
    assert result.is_error


def _before_approval(step: Any) -> Callable[[list[Any]], list[Any]]:
    def insert(steps: list[Any]) -> list[Any]:
        at = next(i for i, s in enumerate(steps) if isinstance(s, ApprovalStep))
        return [*steps[:at], step, *steps[at:]]

    return insert


@pytest.mark.parametrize("order", ["together", "one_after_the_other"])
async def test_two_calls_of_one_session_are_each_approved_as_part_of_their_own_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, order: str
) -> None:
    """Regression: the elicitor kept one entry per session, so two calls of one session waiting for
    approval were both asked under the later call's request id (``together``), and the first to end
    removed the entry the other still needed, which was then denied (``one_after_the_other``)."""
    up = MemoryUpstream("a")
    up.add_tool("echo", lambda a: str(a.get("text", "")))
    config = make_config(tmp_path, {"allow": ["a__*"], "tools": {"a__echo": {"approval": "ask"}}}, approval={"mode": "elicit"})
    both_in, b_ended = anyio.Event(), anyio.Event()
    entered: list[str] = []

    class HoldBeforeApproval:
        """Lets a call reach approval only once both are in flight (call a, in order
        ``one_after_the_other``, only after call b has ended)."""

        async def __call__(self, ctx: CallContext, call_next: CallNext) -> CallOutcome:
            if ctx.call.kind == "tool":
                entered.append(ctx.call.arguments["text"])
                if len(entered) == 2:
                    both_in.set()
                await both_in.wait()
                if order == "one_after_the_other" and ctx.call.arguments["text"] == "a":
                    await b_ended.wait()
            return await call_next(ctx)

    elicitor = SessionElicitor()
    gate = Gate(config, [up], CapturingTrail(), approver=ElicitApprover(elicitor), steps=_before_approval(HoldBeforeApproval()))
    gate.elicitor = elicitor
    await gate.start()
    front = GatewayServer(gate, CallFactory.for_stdio())

    request_ids: dict[str, Any] = {}
    call_tool_json = front.call_tool_json

    async def recording_call_tool_json(call: ToolCall, downstream: Any, session: Any, request_id: Any) -> Any:
        request_ids[call.arguments["text"]] = request_id
        try:
            return await call_tool_json(call, downstream, session, request_id)
        finally:
            if call.arguments["text"] == "b":
                b_ended.set()

    asked: dict[str, Any] = {}
    elicit_form = ServerSession.elicit_form

    async def recording_elicit_form(self: ServerSession, message: str, schema: Any, related_request_id: Any = None) -> Any:
        asked["a" if '"text":"a"' in message else "b"] = related_request_id
        return await elicit_form(self, message, schema, related_request_id)

    monkeypatch.setattr(front, "call_tool_json", recording_call_tool_json)
    monkeypatch.setattr(ServerSession, "elicit_form", recording_elicit_form)

    async def approve(ctx: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"approve": True})

    results: dict[str, types.CallToolResult] = {}
    with anyio.fail_after(20):
        async with Client(front.server, mode="legacy", elicitation_callback=approve) as c:  # type: ignore[arg-type]

            async def call(text: str) -> None:
                results[text] = await c.call_tool("a__echo", {"text": text})

            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "a")
                tg.start_soon(call, "b")
    for text in ("a", "b"):
        assert not results[text].is_error, results[text]
    assert asked == request_ids and request_ids["a"] != request_ids["b"], "each asked as part of its own request"
