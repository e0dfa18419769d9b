"""McpUpstream over Streamable HTTP and legacy SSE against the echo server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from checkrein.config import ServerConfig, config_from_mapping
from checkrein.errors import UpstreamRequestFailed, UpstreamTimeout, UpstreamUnavailable
from checkrein.upstream import Backoff, McpUpstream
from checkrein.upstream.session import Era

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def running(config: ServerConfig, *, era: Era = "auto", **kw: Any) -> AsyncIterator[McpUpstream]:
    async with McpUpstream(config, era=era, **kw) as up:
        with anyio.fail_after(30):
            await up.start()
        yield up


def text(result: Any) -> str:
    return str(result.content[0].text)


def http(url: str, **kw: Any) -> ServerConfig:
    return ServerConfig(name="web", transport="streamable-http", url=url + "/mcp", **kw)


@pytest.mark.parametrize("era", ["auto", "modern"])
async def test_streamable_http_calls_and_lists_in_both_eras(http_echo_url: str, era: Era) -> None:
    async with running(http(http_echo_url), era=era) as up:
        assert up.info.state == "ready" and up.info.transport == "streamable-http"
        assert up.info.protocol_version == ("2026-07-28" if era == "modern" else "2025-11-25")
        result = await up.call_tool("add", {"a": 1, "b": 2}, timeout_s=10)
        assert result.structured_content == {"sum": 3}
        assert result.meta is None or "io.modelcontextprotocol/serverInfo" not in result.meta
        assert "echo" in {t.name for t in await up.tools()}
        assert [p.name for p in await up.list_prompts()] == ["greet"]


async def test_headers_resolved_at_load_reach_the_server(http_echo_url: str) -> None:
    """A ${VAR} in a header is resolved by the loader and sent to the server."""
    written = {"name": "web", "transport": "streamable-http", "url": http_echo_url + "/mcp",
               "headers": {"X-Api-Key": "key-${CHECKREIN_TEST_KEY}"}}
    cfg = config_from_mapping({"servers": [written]}, environ={"CHECKREIN_TEST_KEY": "s3cret"}).servers[0]
    async with running(cfg) as up:
        assert text(await up.call_tool("header", {"name": "x-api-key"}, timeout_s=10)) == "key-s3cret"


async def test_http_timeout_raises_upstream_timeout(http_echo_url: str) -> None:
    async with running(http(http_echo_url)) as up:
        with anyio.fail_after(10):
            with pytest.raises(UpstreamTimeout):
                await up.call_tool("slow", {"seconds": 20}, timeout_s=0.3)
        assert text(await up.call_tool("echo", {"text": "ok"}, timeout_s=10)) == "ok"


async def test_http_list_changed_refreshes_tools(http_echo_url: str) -> None:
    changed = anyio.Event()

    async def on_changed(server: str) -> None:
        changed.set()

    async with running(http(http_echo_url), on_tools_changed=on_changed) as up:
        await up.call_tool("mutate", {}, timeout_s=10)
        with anyio.fail_after(10):
            await changed.wait()
        assert "added" in {t.name for t in await up.tools()}


async def test_unreachable_url_fails_the_start_clearly(unused_port: int) -> None:
    cfg = ServerConfig(name="nowhere", transport="streamable-http", url=f"http://127.0.0.1:{unused_port}/mcp")
    async with McpUpstream(cfg) as up:
        with anyio.fail_after(20):
            with pytest.raises(UpstreamUnavailable, match="cannot connect"):
                await up.start()
        assert up.info.state == "failed" and "nowhere (streamable-http) failed to start" in (up.info.error or "")


async def test_legacy_sse_transport_calls_lists_and_survives_a_server_restart(fresh_sse_echo: Any) -> None:
    cfg = ServerConfig(name="old", transport="sse", url=fresh_sse_echo.url + "/sse")
    async with running(cfg) as up:
        assert up.info.transport == "sse" and up.info.protocol_version == "2025-11-25"
        assert text(await up.call_tool("echo", {"text": "over sse"}, timeout_s=10)) == "over sse"
        assert len(await up.tools()) >= 6
        fresh_sse_echo.stop()
        with anyio.fail_after(10):
            while not up._link.session.connection_closed():  # type: ignore[union-attr]
                await anyio.sleep(0.02)  # the dropped event stream is noticed while idle
        fresh_sse_echo.start()
        with anyio.fail_after(30):
            result = await up.call_tool("echo", {"text": "after restart"}, timeout_s=10)
        assert text(result) == "after restart", "a request never sent goes out on a fresh connection"
        assert up.info.restarts == 1


async def test_http_server_going_away_fails_the_call_then_reconnects_and_resumes_transparently(fresh_http_echo: Any) -> None:
    events: list[str] = []

    async def on_event(event: str, fields: dict[str, Any]) -> None:
        events.append(event)

    async with running(http(fresh_http_echo.url), on_event=on_event, backoff=Backoff(initial_s=0.01)) as up:
        assert text(await up.call_tool("echo", {"text": "a"}, timeout_s=10)) == "a"
        fresh_http_echo.stop()
        with anyio.fail_after(10):
            with pytest.raises(UpstreamUnavailable):
                await up.call_tool("echo", {"text": "b"}, timeout_s=10)
        assert up.info.state in ("crashed", "failed")
        fresh_http_echo.start()
        with anyio.fail_after(30):
            while True:
                try:
                    result = await up.call_tool("echo", {"text": "c"}, timeout_s=10)
                    break
                except UpstreamUnavailable:
                    await anyio.sleep(0.05)
        assert text(result) == "c" and up.info.restarts == 1
        assert events[0] == "upstream.start" and events[-1] == "upstream.restart" and "upstream.crash" in events
        # Restarted while we were idle: it no longer knows our session. That call never ran, so
        # it is sent again on a fresh session and the caller does not notice.
        fresh_http_echo.stop()
        fresh_http_echo.start()
        with anyio.fail_after(30):
            assert text(await up.call_tool("echo", {"text": "d"}, timeout_s=10)) == "d"
        assert up.info.restarts == 2 and up.info.state == "ready"


async def test_an_http_refusal_keeps_its_status_in_the_error(refusing_http_echo_url: str) -> None:
    """A 401 or 501 answer to a POST reaches the caller as that status, not the SDK's one generic text."""
    async with running(http(refusing_http_echo_url)) as up:
        for tool, status in (("fail", "HTTP 401 Unauthorized"), ("crash", "HTTP 501 Not Implemented")):
            with anyio.fail_after(20), pytest.raises(UpstreamRequestFailed) as info:
                await up.call_tool(tool, {}, timeout_s=10)
            assert status in str(info.value) and info.value.rpc_data == {"http_status": int(status.split()[1])}
        assert text(await up.call_tool("echo", {"text": "still here"}, timeout_s=10)) == "still here"
        assert up.info.state == "ready", "a refused request is not a crash"
