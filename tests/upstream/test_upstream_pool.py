"""UpstreamPool: concurrent start, per-server failure, lookups, and shutdown."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import checkrein.testing.echo_server as echo_server
from checkrein.config import ServerConfig
from checkrein.errors import UpstreamUnavailable
from checkrein.testing.memory_upstream import MemoryUpstream
from checkrein.upstream import McpUpstream, UpstreamPool

pytestmark = pytest.mark.anyio

# Run as a script path, not `-m`: that skips importing the checkrein package in every child
# (about a quarter of the server's start-up), which matters for a suite that spawns many.
ECHO = (echo_server.__file__,)


def echo(name: str, **kw: Any) -> ServerConfig:
    return ServerConfig(name=name, command=sys.executable, args=ECHO, **kw)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_start_all_reports_failures_and_keeps_serving_the_rest(raw_server: Path) -> None:
    events: list[tuple[str, str]] = []

    async def on_event(event: str, fields: dict[str, Any]) -> None:
        events.append((event, fields["server"]))

    mem = MemoryUpstream("mem")
    mem.add_tool("ping", lambda args: "pong")
    configs = [
        ServerConfig(name="good", command=sys.executable, args=(str(raw_server),), timeout_s=7),
        ServerConfig(name="missing", command="/nonexistent/checkrein-missing"),
        ServerConfig(name="dies", command=sys.executable, args=("-c", "import sys; print('bad config', file=sys.stderr); sys.exit(4)")),
        ServerConfig(name="off", command="/nonexistent/never-started", enabled=False),
    ]
    async with UpstreamPool(configs, on_event=on_event, upstreams=[mem]) as pool:
        assert sorted(pool) == ["dies", "good", "mem", "missing"], "disabled servers are left out"
        with anyio.fail_after(60):
            infos = await pool.start_all()
        assert infos["good"].state == "ready" and infos["mem"].state == "ready"
        assert infos["missing"].state == "failed" and "command not found" in (infos["missing"].error or "")
        assert infos["dies"].state == "failed" and "bad config" in (infos["dies"].error or "")
        assert "exited with code 4" in (infos["dies"].error or "")
        assert sorted(events) == [
            ("upstream.failed", "dies"),
            ("upstream.failed", "missing"),
            ("upstream.start", "good"),
        ]
        result = await pool.call_tool("good", "echo", {"text": "through the pool"})
        assert result.content[0].text == "through the pool"  # type: ignore[union-attr]
        assert (await pool.call_tool("mem", "ping", {})).content[0].text == "pong"  # type: ignore[union-attr]
        assert pool.timeout_for("good") == 7 and pool.timeout_for("mem", 3.0) == 3.0
        with pytest.raises(UpstreamUnavailable, match="missing"):
            await pool.call_tool("missing", "anything", {})
        with pytest.raises(UpstreamUnavailable, match=r"no upstream server named 'nope' \(known: dies, good, mem, missing\)"):
            pool.require("nope")
        assert {i.name: i.state for i in pool.infos()}["good"] == "ready"
        # The raw server writes one stray non-JSON line on stdout during tools/list.
        assert pool.stats()["good"] == {"restarts": 0, "bad_messages": 1, "hook_errors": 0, "refresh_failures": 0}
        assert "mem" not in pool.stats(), "only configured servers have counters"
        good = pool["good"]
        assert isinstance(good, McpUpstream)
        pid = good._link.process.pid  # type: ignore[union-attr]
        assert pid_alive(pid)
    assert not pid_alive(pid), "closing the pool stops its server processes"
    assert mem.info.state == "closed"


def test_duplicate_names_are_rejected() -> None:
    with pytest.raises(ValueError, match="duplicate upstream name 'a'"):
        UpstreamPool([echo("a"), echo("a")])
    with pytest.raises(ValueError, match="duplicate upstream name 'a'"):
        UpstreamPool([echo("a")], upstreams=[MemoryUpstream("a")])


async def test_start_all_needs_the_pool_entered() -> None:
    with pytest.raises(RuntimeError, match="async with"):
        await UpstreamPool([echo("a")]).start_all()
