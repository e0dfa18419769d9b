"""The raw HTTP request lane (`checkrein.upstream.raw_http`) of McpUpstream against the echo server
over Streamable HTTP on 127.0.0.1: which calls take it, that it answers exactly what the SDK's
path answers, its connection reuse, and its failures."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.from_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkrein.config import ServerConfig
from checkrein.errors import UpstreamRequestFailed
from checkrein.upstream import McpUpstream
from checkrein.upstream.raw_http import RawHttpRequests
from checkrein.upstream.session import Era

pytestmark = pytest.mark.anyio


def http(url: str) -> ServerConfig:
    return ServerConfig(name="web", transport="streamable-http", url=url + "/mcp")


@asynccontextmanager
async def running(config: ServerConfig, *, era: Era = "auto") -> AsyncIterator[McpUpstream]:
    async with McpUpstream(config, era=era) as up:
        with anyio.fail_after(30):
            await up.start()
        yield up


def lane(up: McpUpstream) -> RawHttpRequests | None:
    link = up._link
    assert link is not None
    return link.session.raw_http


async def test_handshake_era_calls_take_the_raw_lane_and_modern_era_calls_do_not(http_echo_url: str) -> None:
    """A 2025-era session POSTs tools/call on the raw lane; a 2026-era one keeps the SDK's path."""
    async with running(http(http_echo_url), era="legacy") as up:
        raw = lane(up)
        assert raw is not None and raw.sent == 0
        for i in range(3):
            result = await up.call_tool_json("add", {"a": i, "b": 2}, timeout_s=10)
            assert result["structuredContent"] == {"sum": i + 2}
        assert raw.sent == 3
    async with running(http(http_echo_url), era="modern") as up:
        raw = lane(up)
        assert raw is not None
        result = await up.call_tool_json("add", {"a": 1, "b": 2}, timeout_s=10)
        assert result["structuredContent"] == {"sum": 3} and raw.sent == 0


async def test_the_lane_is_off_with_the_fast_path_off(http_echo_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``CHECKREIN_FAST_PATH=off``: no raw lane, every call through the SDK's client."""
    monkeypatch.setenv("CHECKREIN_FAST_PATH", "off")
    async with running(http(http_echo_url)) as up:
        assert lane(up) is None
        assert (await up.call_tool_json("echo", {"text": "sdk"}, timeout_s=10))["content"][0]["text"] == "sdk"


async def test_sequential_calls_reuse_one_connection(http_echo_url: str) -> None:
    """The SSE answer is read to its end, so the POST's connection goes back to the pool (the SDK's
    client closes it after the answer event, and every call opened a new one)."""
    async with running(http(http_echo_url)) as up:
        raw = lane(up)
        assert raw is not None and raw._client is not None
        pool = raw._client._transport._pool  # type: ignore[attr-defined]
        await up.call_tool_json("echo", {"text": "warm"}, timeout_s=10)
        before = len(pool.connections)
        for i in range(20):
            assert (await up.call_tool_json("echo", {"text": str(i)}, timeout_s=10))["content"][0]["text"] == str(i)
        assert raw.sent == 21
        assert raw._direct is not None, "the POSTs went through the pool directly (checkrein.upstream.http_post)"
        # The GET stream holds one connection, the POSTs share another: no growth, no churn.
        assert len(pool.connections) <= max(before, 2)


async def test_server_errors_and_tool_errors_come_back_as_on_the_sdk_path(http_echo_url: str) -> None:
    """A JSON-RPC error from the server is an ``UpstreamRequestFailed`` with its code; a tool error
    is a result with ``isError``; the connection stays ready."""
    async with running(http(http_echo_url)) as up:
        failed = await up.call_tool_json("fail", {}, timeout_s=10)
        assert failed["isError"] is True
        with anyio.fail_after(20), pytest.raises(UpstreamRequestFailed) as info:
            await up.call_tool_json("server_error", {}, timeout_s=10)
        assert info.value.rpc_code is not None
        assert up.info.state == "ready" and (lane(up) or RawHttpRequests()).sent == 2


class Pair:
    """One upstream with the raw lane and one without, on one echo server, driven from a portal."""

    def __init__(self, portal: anyio.from_thread.BlockingPortal, fast: McpUpstream, sdk: McpUpstream) -> None:
        self.portal, self.fast, self.sdk = portal, fast, sdk

    def both(self, name: str, arguments: dict[str, Any]) -> tuple[Any, Any]:
        async def one(up: McpUpstream) -> Any:
            try:
                return await up.call_tool_json(name, arguments, timeout_s=20)
            except UpstreamRequestFailed as exc:
                return ("error", exc.rpc_code, exc.rpc_message)

        return self.portal.call(one, self.fast), self.portal.call(one, self.sdk)


@pytest.fixture(scope="module")
def pair(http_echo_url: str) -> Iterator[Pair]:
    import os

    with anyio.from_thread.start_blocking_portal() as portal:
        fast_cm = portal.wrap_async_context_manager(running(http(http_echo_url)))
        fast = fast_cm.__enter__()
        os.environ["CHECKREIN_FAST_PATH"] = "off"
        try:
            sdk_cm = portal.wrap_async_context_manager(running(http(http_echo_url)))
            sdk = sdk_cm.__enter__()
        finally:
            del os.environ["CHECKREIN_FAST_PATH"]
        try:
            assert lane(fast) is not None and lane(sdk) is None
            yield Pair(portal, fast, sdk)
        finally:
            sdk_cm.__exit__(None, None, None)
            fast_cm.__exit__(None, None, None)


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.one_of(
        st.tuples(st.just("echo"), st.fixed_dictionaries({"text": st.text(max_size=300)})),
        st.tuples(st.just("add"), st.fixed_dictionaries({"a": st.integers(-(10**6), 10**6), "b": st.integers(-(10**6), 10**6)})),
        st.tuples(st.just("meta"), st.fixed_dictionaries({"key": st.sampled_from(["progressToken", "traceparent", "x"])})),
        st.tuples(st.just("header"), st.fixed_dictionaries({"name": st.sampled_from(["mcp-protocol-version", "accept", "content-type"])})),
        st.tuples(st.sampled_from(["echo", "add", "no_such_tool"]), st.dictionaries(st.text(max_size=8), _json, max_size=3)),
    )
)
def test_the_raw_lane_answers_what_the_sdk_path_answers(pair: Pair, call: tuple[str, dict[str, Any]]) -> None:
    """For any call (valid, invalid arguments, unknown tool), the raw lane's result or error is the
    SDK client's, field for field."""
    fast, sdk = pair.both(*call)
    assert fast == sdk


async def test_an_integer_past_64_bits_in_a_result_stays_exact_on_the_lane(http_echo_url: str) -> None:
    """The answer is parsed as the SDK parses it: a sum of 10**30 + 1 is that int, not a float."""
    big = 10**30 + 1
    async with running(http(http_echo_url), era="legacy") as up:
        raw = lane(up)
        assert raw is not None
        result = await up.call_tool_json("add", {"a": big, "b": 0}, timeout_s=10)
        assert raw.sent == 1
    total = result["structuredContent"]["sum"]
    assert type(total) is int and total == big, total
