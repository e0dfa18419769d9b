"""The frontend's MCP server in process (JSON-RPC over memory streams): what becomes of each request."""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp.types as types
import pytest
from gateway_support import CapturingTrail, make_config
from mcp import Client
from mcp.client.session import IncomingMessage

from checkrein.catalog import ToolDefinition
from checkrein.frontend import CallFactory, GatewayServer
from checkrein.frontend.context import local_identity
from checkrein.gate.pipeline import Gate
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
