"""HTTP -> HTTP: relayed MCP features through a real `checkrein serve --transport http` in front of
the conformance fixture server over Streamable HTTP (with its event store, so answer streams can
be resumed), with the raw HTTP upstream lane (`checkrein.upstream.raw_http`) and with the fast
path off: progress, logging, sampling, elicitation, a stream closed mid-call and resumed."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp.types as types
import pytest
from gateway_support import (
    child_env,
    free_port,
    port_open,
    start_http_gateway,
    stop,
    wait_until,
    write_config,
)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def fixture_url() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "checkrein.testing.conformance_server", "--port", str(port)],
        env=child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_until(lambda: port_open(port), timeout=300, what="conformance server (http)", proc=proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)


@pytest.fixture(scope="module", params=["lane", "sdk"])
def gateway(request: pytest.FixtureRequest, fixture_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    directory: Path = tmp_path_factory.mktemp(f"relay-http-{request.param}")
    server = {"name": "fx", "transport": "streamable-http", "url": fixture_url, "timeout_s": 20.0, "prefix": ""}
    config = write_config(directory, [server], policy={"allow": ["*"]})
    port = free_port()
    env = {"CHECKREIN_FAST_PATH": "off"} if request.param == "sdk" else {}
    proc = start_http_gateway(config, port, **env)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)


@asynccontextmanager
async def client(url: str, **callbacks: Any) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(timeout=30, trust_env=False)
    async with http, Client(streamable_http_client(url, http_client=http), mode="legacy", cache=None, **callbacks) as c:  # type: ignore[arg-type]
        yield c


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def test_progress_reaches_the_caller(gateway: str) -> None:
    """Progress the upstream streams on the call's POST reaches the caller under its own token."""
    seen: list[tuple[float, float | None]] = []

    async def progress(p: float, total: float | None, message: str | None) -> None:
        seen.append((p, total))

    with anyio.fail_after(60):
        async with client(gateway) as c:
            result = await c.call_tool("test_tool_with_progress", {}, progress_callback=progress)
    assert not result.is_error and text(result) != "no progress token"
    assert [p for p, _ in seen] == [0, 50, 100] and seen[-1][1] == 100


async def test_log_messages_reach_the_caller(gateway: str) -> None:
    logs: list[Any] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    with anyio.fail_after(60):
        async with client(gateway, logging_callback=on_log) as c:
            await c.set_logging_level("debug")
            result = await c.call_tool("test_tool_with_logging", {})
    assert not result.is_error
    assert logs == ["Tool execution started", "Tool processing data", "Tool execution completed"]


async def test_sampling_and_elicitation_during_a_call_reach_the_caller(gateway: str) -> None:
    """The upstream's own requests on the call's stream are answered by the caller's callbacks."""

    async def sampling(ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="forty-two"), model="m")

    async def elicit(ctx: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})

    with anyio.fail_after(60):
        async with client(gateway, sampling_callback=sampling, elicitation_callback=elicit) as c:
            sampled = await c.call_tool("test_sampling", {"prompt": "What is six times seven?"})
            elicited = await c.call_tool("test_elicitation", {"message": "Who are you?"})
            again = await c.call_tool("test_simple_text", {})
    assert text(sampled) == "LLM response: forty-two"
    assert "action=accept" in text(elicited) and "ada@example.com" in text(elicited)
    assert text(again) == "This is a simple text response for testing."


async def test_an_answer_stream_closed_mid_call_is_resumed(gateway: str) -> None:
    """The upstream closes the call's SSE stream before answering; the answer still arrives."""
    with anyio.fail_after(60):
        async with client(gateway) as c:
            result = await c.call_tool("test_reconnection", {})
            after = await c.call_tool("test_simple_text", {})
    assert not result.is_error and "properly reconnected" in text(result)
    assert text(after) == "This is a simple text response for testing."
