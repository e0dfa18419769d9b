"""McpUpstream parts that need no server: backoff, hook failures, calls before start."""

from __future__ import annotations

from typing import Any

import pytest

from checkrein.config import ServerConfig
from checkrein.errors import UpstreamUnavailable
from checkrein.upstream import Backoff, McpUpstream

pytestmark = pytest.mark.anyio

CFG = ServerConfig(name="never", command="/nonexistent/never-run")


def test_backoff_doubles_from_the_initial_delay_up_to_the_cap() -> None:
    b = Backoff()
    assert [b.delay(n) for n in range(0, 9)] == [0.0, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0]
    assert Backoff(initial_s=1, factor=3, max_s=10).delay(3) == 9


async def test_a_raising_tools_changed_callback_is_counted_and_reported_not_raised() -> None:
    events: list[tuple[str, dict[str, Any]]] = []

    async def broken(server: str) -> None:
        raise RuntimeError("gate exploded")

    async def on_event(event: str, fields: dict[str, Any]) -> None:
        events.append((event, fields))

    async with McpUpstream(CFG, on_tools_changed=broken, on_event=on_event) as up:
        await up._listings.tools_changed()
        assert up.stats["hook_errors"] == 1
        assert events[0][0] == "upstream.refresh_failed" and "gate exploded" in events[0][1]["error"]


async def test_a_raising_lifecycle_hook_does_not_break_the_upstream() -> None:
    async def on_event(event: str, fields: dict[str, Any]) -> None:
        raise RuntimeError("audit down")

    async with McpUpstream(CFG, on_event=on_event) as up:
        with pytest.raises(UpstreamUnavailable, match="command not found"):
            await up.start()
        assert up.stats["hook_errors"] == 1 and up.info.state == "failed"


async def test_start_outside_the_context_manager_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="async with"):
        await McpUpstream(CFG).start()


async def test_calls_to_a_server_that_never_started_try_to_start_it() -> None:
    async with McpUpstream(CFG, backoff=Backoff(initial_s=60)) as up:
        with pytest.raises(UpstreamUnavailable, match="command not found"):
            await up.call_tool("x", {}, timeout_s=1)
        with pytest.raises(UpstreamUnavailable, match="next restart attempt in"):
            await up.call_tool("x", {}, timeout_s=1)
        assert up.info.restarts == 0
