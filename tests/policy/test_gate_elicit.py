"""Approval by MCP elicitation: a real in-memory MCP server asks a real MCP client."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

import anyio
import mcp.types as types
import pytest
from mcp import Client
from mcp.server.lowlevel import Server

from checkrein.gate.approval import ElicitApprover, InputRequired, SessionElicitor
from checkrein.gate.seams import ApprovalRequest
from checkrein.policy import Decision, Identity, ToolCall

pytestmark = pytest.mark.anyio

REQ = ApprovalRequest(
    ToolCall(Identity("alice"), "session-1", "t", "sp", "fs__rm", {"path": "x"}),
    Decision("ask", "risk:high", risk="high"),
    "sha256:args",
    "sha256:policy",
    "alice wants to call fs__rm",
)


def _server(elicitor: SessionElicitor, register: bool = True) -> Server[Any]:
    """A server whose one tool runs the elicit approver for REQ and returns granted/refused + reason."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="approve", input_schema={"type": "object"})])

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        if register:
            elicitor.register(REQ.call, ctx.session, ctx.request_id)
        try:
            result = await ElicitApprover(elicitor).approve(REQ)
        except InputRequired as pending:
            text = f"input_required: {pending.request.call.exposed_name}"
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)])
        finally:
            elicitor.unregister(REQ.call)
        text = f"{'granted' if result.granted else 'refused'}: {result.reason}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("elicit-test", on_list_tools=list_tools, on_call_tool=call_tool)


def _answer(action: Literal["accept", "decline", "cancel"], content: dict[str, Any] | None) -> Any:
    seen: list[str] = []

    async def callback(context: Any, params: Any) -> types.ElicitResult:
        seen.append(params.message)
        return types.ElicitResult(action=action, content=content)

    callback.seen = seen  # type: ignore[attr-defined]
    return callback


async def _run(server: Server[Any], mode: Literal["auto", "legacy"], callback: Any = None) -> str:
    kwargs: dict[str, Any] = {"mode": mode}
    if callback is not None:
        kwargs["elicitation_callback"] = callback
    with anyio.fail_after(20):
        async with Client(server, **kwargs) as client:
            result = await client.call_tool("approve", {})
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize(
    ("action", "content", "expected"),
    [
        ("accept", {"approve": True}, "granted: approved by the client"),
        ("accept", {"approve": False}, "refused: the client answered decline"),
        ("accept", None, "refused: the client answered decline"),
        ("decline", None, "refused: the client answered decline"),
        ("cancel", None, "refused: the client answered cancel"),
    ],
)
async def test_the_client_answers_the_approval_form(action: Any, content: Any, expected: str) -> None:
    callback = _answer(action, content)
    assert await _run(_server(SessionElicitor()), "legacy", callback) == expected
    assert callback.seen and "alice wants to call fs__rm" in callback.seen[0]


async def test_a_client_without_elicitation_is_refused() -> None:
    assert await _run(_server(SessionElicitor()), "legacy") == "refused: the client does not support elicitation"


async def test_the_2026_era_has_no_back_channel_and_is_asked_by_input_required() -> None:
    """A 2026-era client cannot be sent an elicitation request: the approver hands the call back to
    the gate, which answers with an input_required result (tests/gateway/test_input_required.py)."""
    callback = _answer("accept", {"approve": True})
    text = await _run(_server(SessionElicitor()), "auto", callback)
    assert text == "input_required: fs__rm"
    assert callback.seen == [], "no server-initiated elicitation in the 2026 era"


async def test_an_unregistered_session_is_refused() -> None:
    text = await _run(_server(SessionElicitor(), register=False), "legacy", _answer("accept", {"approve": True}))
    assert text == "refused: the client does not support elicitation"


class _Asked:
    """A client session that accepts every approval form and records which request it was related to."""

    def __init__(self) -> None:
        self.related: list[tuple[str, Any]] = []

    def check_client_capability(self, capability: types.ClientCapabilities) -> bool:
        return True

    async def elicit_form(
        self, message: str, requested_schema: dict[str, Any], related_request_id: types.RequestId | None = None
    ) -> types.ElicitResult:
        self.related.append((message, related_request_id))
        return types.ElicitResult(action="accept", content={"approve": True})


async def test_two_calls_of_one_session_are_each_asked_as_part_of_their_own_request() -> None:
    """Regression: the entry was per session, so the later call's request id was used for both and
    the first call to end took the entry the other still waited on (denied as unsupported)."""
    first = replace(REQ, call=replace(REQ.call, span_id="span-a", arguments={"path": "a"}), summary="ask-about-a")
    second = replace(REQ, call=replace(REQ.call, span_id="span-b", arguments={"path": "b"}), summary="ask-about-b")
    session, elicitor = _Asked(), SessionElicitor()
    elicitor.register(first.call, session, 7)
    elicitor.register(second.call, session, 8)
    assert await elicitor(first) == "accept"
    assert await elicitor(second) == "accept"
    elicitor.unregister(second.call)
    assert await elicitor(first) == "accept", "the end of one call leaves the other's entry"
    asked = [("a" if "ask-about-a" in message else "b", rid) for message, rid in session.related]
    assert asked == [("a", 7), ("b", 8), ("a", 7)]
    elicitor.unregister(first.call)
    assert await elicitor(first) == "unsupported"
