"""Handshake-era Streamable HTTP answers (`checkrein.frontend.http_json`), on raw HTTP against a real
`checkrein serve --transport http` in front of the conformance fixture server and an echo server:
plain JSON when nothing else is sent first, SSE as soon as progress, a log message or a server
request has to reach the client, and the SDK's streams everywhere with the fast path off."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from gateway_support import FIXTURE_SERVER as FIXTURE
from gateway_support import echo_server_config, free_port, start_http_gateway, stop, write_config

pytestmark = pytest.mark.anyio

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _gateway(directory: Path, servers: list[dict[str, Any]] | None = None, extra_toml: str = "", **env: str) -> Iterator[str]:
    """A `checkrein serve --transport http` in front of ``servers`` (the fixture and an echo server by
    default), every tool allowed, ``extra_toml`` appended to its config; yields its /mcp URL."""
    config = write_config(directory, servers or [FIXTURE, echo_server_config("a")], policy={"allow": ["*"]})
    if extra_toml:
        with config.open("a", encoding="utf-8") as f:
            f.write(extra_toml)
    port = free_port()
    proc: subprocess.Popen[bytes] = start_http_gateway(config, port, **env)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _gateway(tmp_path_factory.mktemp("http-json"))


@pytest.fixture(scope="module")
def sdk_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _gateway(tmp_path_factory.mktemp("http-json-off"), CHECKREIN_FAST_PATH="off")


class Session:
    def __init__(self, http: httpx2.AsyncClient, url: str) -> None:
        self.http, self.url, self.headers, self.ids = http, url, dict(ACCEPT), 1

    async def post(self, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        """POST one message; the response's content type and the JSON-RPC messages it carried."""
        response = await self.http.post(self.url, json=body, headers=self.headers)
        assert response.status_code < 300, response.text
        kind = response.headers.get("content-type", "").split(";")[0]
        if kind == "application/json":
            return kind, [response.json()] if response.content else []
        # SSE lines end at CR/LF only (str.splitlines would also split inside the JSON, at U+0085 and the like).
        lines = response.text.replace("\r\n", "\n").split("\n")
        events = [json.loads(line[5:]) for line in lines if line.startswith("data:") and line[5:].strip()]
        return kind, events

    async def call(self, name: str, arguments: dict[str, Any], meta: dict[str, Any] | None = None) -> tuple[str, list[dict[str, Any]]]:
        self.ids += 1
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        return await self.post({"jsonrpc": "2.0", "id": self.ids, "method": "tools/call", "params": params})


@asynccontextmanager
async def session(url: str) -> AsyncIterator[Session]:
    async with httpx2.AsyncClient(timeout=60, trust_env=False) as http:
        s = Session(http, url)
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        response = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}, headers=ACCEPT)
        s.headers["mcp-session-id"] = response.headers["mcp-session-id"]
        s.headers["mcp-protocol-version"] = "2025-11-25"
        await s.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield s


async def test_a_call_with_nothing_to_send_first_is_answered_with_plain_json(url: str) -> None:
    """An echo call and a listing come back as ``application/json`` bodies holding the result;
    a denied call too."""
    with anyio.fail_after(60):
        async with session(url) as s:
            kind, messages = await s.call("a__echo", {"text": "plain"})
            list_kind, listed = await s.post({"jsonrpc": "2.0", "id": 90, "method": "tools/list"})
            missing_kind, missing = await s.call("a__nope", {})
    assert kind == "application/json" and messages[0]["result"]["content"][0]["text"] == "plain"
    assert list_kind == "application/json" and any(t["name"] == "a__echo" for t in listed[0]["result"]["tools"])
    assert missing_kind == "application/json" and missing[0]["result"]["isError"] is True


async def test_progress_and_logs_turn_the_answer_into_a_stream(url: str) -> None:
    """With a progress token the progress arrives as SSE events before the result; a tool that
    logs streams its log messages; nothing is lost on the way."""
    with anyio.fail_after(60):
        async with session(url) as s:
            kind, events = await s.call("test_tool_with_progress", {}, meta={"progressToken": "p1"})
            log_kind, logged = await s.call("test_tool_with_logging", {})
    assert kind == "text/event-stream"
    progress = [e["params"]["progress"] for e in events if e.get("method") == "notifications/progress"]
    assert progress == [0, 50, 100] and events[-1]["id"] == s.ids - 1 and "result" in events[-1]
    assert log_kind == "text/event-stream"
    logs = [e["params"]["data"] for e in logged if e.get("method") == "notifications/message"]
    assert logs == ["Tool execution started", "Tool processing data", "Tool execution completed"]
    assert logged[-1]["result"]["content"][0]["text"] == "Tool with logging executed successfully"


async def test_a_json_rpc_error_is_answered_as_json(url: str) -> None:
    """Invalid params of a tools/call: the SDK's JSON-RPC error, as a JSON body."""
    with anyio.fail_after(60):
        async with session(url) as s:
            kind, messages = await s.post({"jsonrpc": "2.0", "id": 77, "method": "tools/call", "params": {"name": 5}})
    assert kind == "application/json" and messages[0]["id"] == 77 and messages[0]["error"]["code"] == -32602


async def test_with_the_fast_path_off_every_answer_is_the_sdks_stream(sdk_url: str) -> None:
    """``CHECKREIN_FAST_PATH=off``: the same call is answered on an SSE stream, with the same result."""
    with anyio.fail_after(60):
        async with session(sdk_url) as s:
            kind, events = await s.call("a__echo", {"text": "plain"})
    assert kind == "text/event-stream" and events[-1]["result"]["content"][0]["text"] == "plain"
