"""McpUpstream over stdio against the real echo server: calls, eras, catalog, faults, restarts."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest

import checkrein.testing.echo_server as echo_server
from checkrein.config import ServerConfig, config_from_mapping
from checkrein.errors import UpstreamTimeout, UpstreamUnavailable
from checkrein.testing.echo_server import PAGE_SIZE
from checkrein.upstream import Backoff, McpUpstream, UpstreamRequestFailed
from checkrein.upstream.session import Era

pytestmark = pytest.mark.anyio

# Run as a script path, not `-m`: that skips importing the checkrein package in every child
# (about a quarter of the server's start-up), which matters for a suite that spawns many.
ECHO = (echo_server.__file__,)


def echo_config(name: str = "echo", *extra: str, env: dict[str, str] | None = None, **kw: Any) -> ServerConfig:
    return ServerConfig(name=name, command=sys.executable, args=(*ECHO, *extra), env=env or {}, **kw)

SERVER_INFO = "io.modelcontextprotocol/serverInfo"


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.changed: list[str] = []
        self.changed_event = anyio.Event()

    async def on_event(self, event: str, fields: dict[str, Any]) -> None:
        self.events.append((event, fields))

    async def on_tools_changed(self, server: str) -> None:
        self.changed.append(server)
        self.changed_event.set()

    def names(self) -> list[str]:
        return [e for e, _ in self.events]


@asynccontextmanager
async def running(
    config: ServerConfig, rec: Recorder | None = None, *, era: Era = "auto", start: bool = True, **kw: Any
) -> AsyncIterator[McpUpstream]:
    rec = rec or Recorder()
    async with McpUpstream(
        config, on_event=rec.on_event, on_tools_changed=rec.on_tools_changed, era=era, **kw
    ) as up:
        if start:
            with anyio.fail_after(30):
                await up.start()
        yield up


def text(result: Any) -> str:
    return str(result.content[0].text)


@pytest.fixture(scope="module")
async def shared() -> AsyncIterator[McpUpstream]:
    """One dual-era echo server (129 tools, description from a variable resolved at load) for read-only tests."""
    written = {"name": "echo", "command": sys.executable, "args": list(ECHO),
               "env": {"ECHO_SERVER_TOOLS": "120", "ECHO_SERVER_DESCRIPTION": "desc ${WHO}"}}
    cfg = config_from_mapping({"servers": [written]}, environ={"WHO": "expanded"}).servers[0]
    async with running(cfg) as up:
        yield up


@pytest.fixture(scope="module")
async def modern() -> AsyncIterator[McpUpstream]:
    """The echo server reached through server/discover (2026-07-28 era)."""
    async with running(echo_config(), era="modern") as up:
        yield up


async def test_call_forwards_arguments_and_returns_structured_content(shared: McpUpstream) -> None:
    result = await shared.call_tool("add", {"a": 2, "b": 40}, timeout_s=10)
    assert result.structured_content == {"sum": 42} and text(result) == "42"
    assert not result.is_error
    echoed = await shared.call_tool("echo", {"text": "héllo"}, timeout_s=10)
    assert text(echoed) == "héllo"
    failed = await shared.call_tool("fail", {}, timeout_s=10)
    assert failed.is_error, "an upstream tool error stays a result, not an exception"
    assert shared.info.state == "ready" and shared.info.server_name == "echo"


async def test_tools_resources_and_prompts_are_listed_once_and_cached(shared: McpUpstream) -> None:
    tools = await shared.tools()
    by_name = {t.name: t for t in tools}
    assert {"echo", "add", "slow", "crash", "fail", "mutate"} <= set(by_name)
    assert by_name["echo"].annotations == {"readOnlyHint": True}
    assert by_name["add"].output_schema is not None and by_name["add"].server == "echo"
    assert [str(r.uri) for r in await shared.list_resources()] == ["echo://readme"]
    assert [t.uri_template for t in await shared.list_resource_templates()] == ["echo://notes/{name}"]
    assert [p.name for p in await shared.list_prompts()] == ["greet"]
    read = await shared.read_resource("echo://readme", timeout_s=10)
    assert read.contents[0].text == "hello"  # type: ignore[union-attr]
    prompt = await shared.get_prompt("greet", {"name": "Ada"}, timeout_s=10)
    assert prompt.messages[0].content.text == "Hello, Ada!"  # type: ignore[union-attr]


async def test_tools_list_follows_next_cursor_across_pages(shared: McpUpstream) -> None:
    names = [t.name for t in await shared.tools()]
    assert len(names) == 129 > 2 * PAGE_SIZE
    assert len(set(names)) == 129 and "tool_119" in names


async def test_initialize_only_server_works_in_auto_era() -> None:
    """A server that speaks only the 2025-11-25 handshake (like an mcp 1.x server)."""
    async with running(echo_config("echo", "--legacy-only"), era="auto") as up:
        assert up.info.protocol_version == "2025-11-25"
        result = await up.call_tool("echo", {"text": "era"}, timeout_s=10)
        assert text(result) == "era"
        assert result.meta is None or SERVER_INFO not in result.meta, "upstream identity is stripped"


async def test_discover_only_server_is_reconnected_with_server_discover_in_auto_era() -> None:
    async with running(echo_config("echo", "--modern-only"), era="auto") as up:
        assert up.info.protocol_version == "2026-07-28"
        assert text(await up.call_tool("echo", {"text": "modern"}, timeout_s=10)) == "modern"


async def test_dual_era_server_is_reached_with_the_handshake_in_auto_era(shared: McpUpstream) -> None:
    assert shared.info.protocol_version == "2025-11-25"


async def test_modern_era_results_lose_the_server_info_stamp(modern: McpUpstream) -> None:
    assert modern.info.protocol_version == "2026-07-28"
    session = modern._link.session  # type: ignore[union-attr]
    raw = await session.call_tool("echo", {"text": "x"})
    assert raw.meta is not None and SERVER_INFO in raw.meta, "the upstream does stamp its identity"
    result = await modern.call_tool("echo", {"text": "x"}, timeout_s=10)
    assert result.meta is None or SERVER_INFO not in result.meta


@pytest.mark.parametrize("era", ["auto", "modern"])
async def test_list_changed_refetches_tools_and_calls_back(era: Era, tmp_path: Path) -> None:
    rec = Recorder()
    state = tmp_path / "description.txt"
    state.write_text("reviewed description")
    async with running(echo_config(env={"ECHO_SERVER_STATE": str(state)}), rec, era=era) as up:
        before = {t.name: t for t in await up.tools()}
        assert "added" not in before and before["echo"].description == "reviewed description"
        state.write_text("sneaky description")
        await up.call_tool("mutate", {}, timeout_s=10)
        with anyio.fail_after(10):
            await rec.changed_event.wait()
        after = {t.name: t for t in await up.tools()}
        assert rec.changed == ["echo"]
        assert "added" in after
        assert after["echo"].description == "sneaky description (mutated)"
        with anyio.fail_after(10):
            while len(await up.list_resources()) < 2:
                await anyio.sleep(0.02)  # resources/list_changed is refreshed in its own task
        assert {str(r.uri) for r in await up.list_resources()} == {"echo://readme", "echo://added"}
        assert after["echo"].digest != before["echo"].digest


async def test_env_values_resolved_at_load_reach_the_server(shared: McpUpstream) -> None:
    """A ${VAR} in a server's env is resolved by the loader and reaches the child process."""
    assert {t.name: t.description for t in await shared.tools()}["echo"] == "desc expanded"


async def test_the_upstream_expands_nothing_itself() -> None:
    """Resolution happens once, at load: a value the loader gave (here `${...}` kept literally
    through the `$${` escape) is passed to the server as it is."""
    written = {"name": "echo", "command": sys.executable, "args": list(ECHO), "env": {"ECHO_SERVER_DESCRIPTION": "$${WHO}"}}
    cfg = config_from_mapping({"servers": [written]}, environ={"WHO": "expanded"}).servers[0]
    async with running(cfg) as up:
        assert {t.name: t.description for t in await up.tools()}["echo"] == "${WHO}"


async def test_timeout_raises_upstream_timeout_and_the_session_keeps_serving(shared: McpUpstream) -> None:
    with anyio.fail_after(10):
        with pytest.raises(UpstreamTimeout, match="slow"):
            await shared.call_tool("slow", {"seconds": 30}, timeout_s=0.3)
    result = await shared.call_tool("echo", {"text": "still here"}, timeout_s=10)
    assert text(result) == "still here"
    assert shared.info.state == "ready" and shared.info.restarts == 0


async def test_crash_fails_the_in_flight_call_then_the_next_call_restarts(tmp_path: Path) -> None:
    rec = Recorder()
    state = tmp_path / "description.txt"
    state.write_text("before the crash")
    cfg = echo_config(env={"ECHO_SERVER_STATE": str(state)})
    async with running(cfg, rec, backoff=Backoff(initial_s=0.0)) as up:
        first_pid = up._link.process.pid  # type: ignore[union-attr]
        with anyio.fail_after(10):
            with pytest.raises(UpstreamUnavailable, match="crashing on purpose"):
                await up.call_tool("crash", {}, timeout_s=30)
        assert up.info.state == "crashed"
        crash_fields = dict(rec.events)["upstream.crash"]
        assert crash_fields["pid"] == first_pid and "exited with code 1" in crash_fields["error"]
        state.write_text("changed while it was down")
        results: list[str] = []

        async def call(i: int) -> None:
            results.append(text(await up.call_tool("echo", {"text": f"back {i}"}, timeout_s=20)))

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                for i in range(5):
                    tg.start_soon(call, i)
        assert sorted(results) == [f"back {i}" for i in range(5)]
        assert up.info.state == "ready" and up.info.restarts == 1, "concurrent callers share one restart"
        assert up._link.process.pid != first_pid  # type: ignore[union-attr]
        assert rec.names() == ["upstream.start", "upstream.crash", "upstream.restart"]
        assert rec.changed == ["echo"], "a restart that brings a different catalog reports it"
        assert {t.name: t.description for t in await up.tools()}["echo"] == "changed while it was down"


async def test_process_killed_from_outside_is_noticed_and_calls_fail_fast_in_backoff(raw_server: Path) -> None:
    rec = Recorder()
    cfg = ServerConfig(name="raw", command=sys.executable, args=(str(raw_server),))
    async with running(cfg, rec, backoff=Backoff(initial_s=30.0, max_s=30.0)) as up:
        os.kill(up._link.process.pid, signal.SIGKILL)  # type: ignore[union-attr]
        with anyio.fail_after(10):
            while up.info.state != "crashed":
                await anyio.sleep(0.02)
        assert "code -9" in (up.info.error or "") and "upstream.crash" in rec.names()
        with anyio.fail_after(2):
            with pytest.raises(UpstreamUnavailable, match=r"(?s)crashed .*next restart attempt in \d"):
                await up.call_tool("echo", {"text": "x"}, timeout_s=30)


async def test_upstream_json_rpc_error_is_a_request_failure_not_a_crash(shared: McpUpstream) -> None:
    with pytest.raises(UpstreamRequestFailed) as info:
        await shared.read_resource("echo://nope", timeout_s=10)
    assert info.value.code == "upstream.request_failed" and isinstance(info.value.rpc_code, int)
    assert shared.info.state == "ready"


async def test_json_rpc_error_32000_is_the_servers_own_error_not_a_crash(shared: McpUpstream) -> None:
    """Regression (-32000 was taken for a closed connection: restart and backoff)."""
    restarts = shared.info.restarts
    with pytest.raises(UpstreamRequestFailed) as info:
        await shared.call_tool("server_error", {}, timeout_s=10)
    assert (info.value.rpc_code, info.value.rpc_message) == (-32000, "server busy, try later")
    assert info.value.rpc_data == {"retry_after_s": 1}
    assert shared.info.state == "ready" and shared.info.restarts == restarts
    assert not (await shared.call_tool("echo", {"text": "still up"}, timeout_s=10)).is_error


async def test_command_not_found_is_reported_clearly() -> None:
    rec = Recorder()
    cfg = ServerConfig(name="ghost", command="/nonexistent/checkrein-ghost-server")
    async with running(cfg, rec, start=False) as up:
        with pytest.raises(UpstreamUnavailable, match="command not found"):
            await up.start()
        info = up.info
        assert info.state == "failed" and "checkrein-ghost-server" in (info.error or "")
        assert rec.names() == ["upstream.failed"]


async def test_server_dying_during_init_reports_exit_code_and_stderr_tail() -> None:
    script = "import sys\nfor i in range(30): print(f'line {i}', file=sys.stderr)\nsys.exit(3)"
    cfg = ServerConfig(name="dies", command=sys.executable, args=("-c", script))
    async with running(cfg, start=False) as up:
        with anyio.fail_after(20):
            with pytest.raises(UpstreamUnavailable) as info:
                await up.start()
        message = str(info.value)
        assert "exited with code 3" in message
        assert "line 29" in message and "line 10" in message and "line 9\n" not in message, "last 20 lines"
        assert up.stderr_tail(3) == ["line 27", "line 28", "line 29"]


async def test_garbage_on_stdout_is_named_in_the_error() -> None:
    async with running(echo_config("garbage", "--garbage"), start=False) as up:
        with anyio.fail_after(20):
            with pytest.raises(UpstreamUnavailable, match="non-JSON-RPC output on stdout: 'this is not JSON-RPC'"):
                await up.start()
        error = up.info.error or ""
        assert "garbage mode" in error and "exited with code 2" in error
        assert up.stats["bad_messages"] == 1


async def test_silent_server_times_out_the_handshake() -> None:
    # Reads its stdin and never answers; it exits when stdin closes, so teardown is quick.
    cfg = ServerConfig(name="mute", command=sys.executable, args=("-c", "import sys; sys.stdin.read()"))
    async with running(cfg, start=False, connect_timeout_s=0.5) as up:
        with anyio.fail_after(20):
            with pytest.raises(UpstreamUnavailable, match="no answer to the handshake within 0.5 s"):
                await up.start()


async def test_a_failed_server_is_retried_by_a_later_call_after_backoff(tmp_path: Path, raw_server: Path) -> None:
    cfg = ServerConfig(name="late", command=str(tmp_path / "server.sh"))
    async with running(cfg, start=False, backoff=Backoff(initial_s=0.01)) as up:
        with pytest.raises(UpstreamUnavailable):
            await up.start()
        script = tmp_path / "server.sh"
        script.write_text(f"#!/bin/sh\nexec {sys.executable} {raw_server}\n")
        script.chmod(0o755)
        with anyio.fail_after(30):
            while True:
                try:
                    result = await up.call_tool("echo", {"text": "up now"}, timeout_s=10)
                    break
                except UpstreamUnavailable:
                    await anyio.sleep(0.02)
        assert text(result) == "up now" and up.info.state == "ready"
        assert up.info.restarts == 0, "a first successful start is not a restart"
        await up.aclose()
        assert up.info.state == "closed"
        with pytest.raises(UpstreamUnavailable, match="closed"):
            await up.call_tool("echo", {"text": "x"}, timeout_s=5)




async def _same_as_sdk(up: McpUpstream) -> None:
    session = up._link.session  # type: ignore[union-attr]
    assert session.raw is not None
    sent = session.raw.sent
    for name, args in (("add", {"a": 5, "b": 6}), ("fail", {}), ("echo", {"text": "ü"})):
        lean = types.CallToolResult.model_validate(await session.forward_tool_call(name, args), by_name=False)
        sdk = await session.call_tool(name, args)
        assert lean.model_dump(exclude={"meta"}) == sdk.model_dump(exclude={"meta"})
        assert lean.meta == sdk.meta
    assert session.raw.sent == sent + 3, "over stdio the lean forward takes the raw lane"


async def test_lean_forward_matches_the_sdk_call_in_the_handshake_era(shared: McpUpstream) -> None:
    await _same_as_sdk(shared)


async def test_lean_forward_matches_the_sdk_call_in_the_discover_era(modern: McpUpstream) -> None:
    await _same_as_sdk(modern)


@pytest.mark.parametrize("fast", ["on", "off"])
async def test_the_raw_lane_follows_the_fast_path_switch(fast: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``CHECKREIN_FAST_PATH=off`` sends every request through the SDK's client (no raw lane), as
    on Streamable HTTP; on, a tools/call goes out on the raw lane."""
    monkeypatch.setenv("CHECKREIN_FAST_PATH", fast)
    async with running(echo_config()) as up:
        result = await up.call_tool_json("echo", {"text": "hi"}, timeout_s=10)
        link = up._link
        assert link is not None
        raw = link.session.raw
    assert result["content"][0]["text"] == "hi"
    if fast == "off":
        assert raw is None
    else:
        assert raw is not None and raw.sent == 1
