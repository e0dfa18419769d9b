"""Fixtures for the fleet suite: two replicas behind nginx, Redis, PostgreSQL, an OTLP receiver;
and the client both modules use."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import mcp.types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from checkrein.testing.fleet import Fleet
from checkrein.testing.otlp_receiver import OtlpReceiver

POLICY = """
[policy]
allow = ["echo__*"]
deny = ["echo__fail"]
"""


@asynccontextmanager
async def client(fleet: Fleet) -> AsyncIterator[Client]:
    """An MCP client through the fleet's load balancer (legacy era: one session, round robin)."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {fleet.token}"}, timeout=30, trust_env=False)
    async with http, Client(streamable_http_client(fleet.url, http_client=http), mode="legacy", cache=None) as c:  # type: ignore[arg-type]
        yield c


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def otlp() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as rx:
        yield rx


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory, otlp: OtlpReceiver) -> Iterator[Fleet]:
    with Fleet.start(tmp_path_factory.mktemp("fleet"), replicas=2, otlp_endpoint=otlp.endpoint, extra=POLICY) as f:
        yield f


class Webhook:
    """An approval webhook on loopback that allows everything and counts what it was asked."""

    def __init__(self) -> None:
        self.asked = 0
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
                hook.asked += 1
                body = json.dumps({"decision": "allow", "reason": "test webhook"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                del format, args

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/approve"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def webhook() -> Iterator[Webhook]:
    hook = Webhook()
    try:
        yield hook
    finally:
        hook.server.shutdown()
        hook.server.server_close()


SHARED = """
[policy]
allow = ["echo__*"]

[policy.tools."echo__add"]
approval = "ask"

[approval]
mode = "webhook"
webhook_url = "{url}"
ttl_s = 600

[policy.tools."echo__meta"]
flow = ["untrusted", "private"]

[policy.tools."echo__echo"]
flow = ["sink"]
flow_effect = "deny"

[[budgets.limits]]
scope = "tool"
match = "echo__header"
rate_per_s = 0.0001
burst = 5

[[budgets.limits]]
scope = "tool"
match = "echo__slow"
max_calls_per_session = 1000
"""


@pytest.fixture(scope="module")
def shared_fleet(tmp_path_factory: pytest.TempPathFactory, webhook: Webhook) -> Iterator[Fleet]:
    extra = SHARED.format(url=webhook.url)
    with Fleet.start(tmp_path_factory.mktemp("shared-fleet"), replicas=2, postgres=False, extra=extra) as f:
        yield f
