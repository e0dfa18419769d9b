"""Call caps through a real `checkrein serve --transport http` (issue 9, sessions belong to
identities): a sessionless 2026-era client is capped, and a legacy client cannot reset a
per-identity cap by reconnecting."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import anyio
import httpx2
import pytest
from gateway_support import echo_server_config, free_port, start_http_gateway, stop, write_config
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

pytestmark = pytest.mark.anyio

TOKEN = "caps-token"


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    directory = tmp_path_factory.mktemp("caps")
    config = write_config(directory, [echo_server_config("a")], gateway={"token": "${GW_TOKEN}"}, policy={"allow": ["a__*"]})
    with config.open("a", encoding="utf-8") as fh:
        fh.write(
            '\n[[budgets.limits]]\nscope = "tool"\nmatch = "a__echo"\nmax_calls_per_session = 2\n'
            '\n[[budgets.limits]]\nscope = "tool"\nmatch = "a__add"\nmax_calls_per_identity = 3\n'
        )
    port = free_port()
    proc = start_http_gateway(config, port, GW_TOKEN=TOKEN)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)


@asynccontextmanager
async def client(url: str, mode: str) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30, trust_env=False)
    async with http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as c:  # type: ignore[arg-type]
            yield c


async def test_a_sessionless_client_meets_its_per_session_cap(url: str) -> None:
    """2026-era requests carry no session id; they count as one session per identity."""
    with anyio.fail_after(60):
        async with client(url, "auto") as c:
            results = [await c.call_tool("a__echo", {"text": f"call {i}"}) for i in range(4)]
    assert [r.is_error for r in results] == [False, False, True, True]
    assert "cap of 2" in str(results[2].content[0])


async def test_reconnecting_does_not_reset_a_per_identity_cap(url: str) -> None:
    """Three legacy connections of one caller share its cap of three calls."""
    outcomes: list[bool] = []
    with anyio.fail_after(60):
        for _ in range(3):
            async with client(url, "legacy") as c:
                for _ in range(2):
                    outcomes.append((await c.call_tool("a__add", {"a": 1, "b": 2})).is_error)
    assert outcomes == [False, False, False, True, True, True]
