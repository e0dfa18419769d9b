"""Behaviour over Streamable HTTP: one `checkrein serve --transport http` subprocess in front of
real echo servers (stdio, stdio legacy-only, Streamable HTTP, one broken, one missing), driven by
the official SDK client in both protocol eras, plus raw HTTP for the guard (Origin, token)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp.types as types
import pytest
from gateway_support import (
    echo_server_config,
    free_port,
    http_status,
    start_echo_http,
    start_http_gateway,
    stop,
    wait_until,
    write_config,
)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.anyio

GW_TOKEN = "gw-secret-token"
CI_TOKEN = "ci-secret-token"
ERAS = ["legacy", "auto"]


@dataclass
class Gateway:
    url: str
    base: str
    directory: Path


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    directory = tmp_path_factory.mktemp("http-gateway")
    echo_port, sse_port, gw_port = free_port(), free_port(), free_port()
    procs: list[subprocess.Popen[bytes]] = [start_echo_http(echo_port), start_echo_http(sse_port, sse=True)]
    try:
        config = write_config(
            directory,
            [
                {**echo_server_config("a"), "timeout_s": 1.0},
                echo_server_config("b", "--legacy-only"),
                {"name": "h", "transport": "streamable-http", "url": f"http://127.0.0.1:{echo_port}/mcp"},
                {"name": "s", "transport": "sse", "url": f"http://127.0.0.1:{sse_port}/sse"},
                echo_server_config("broken", "--garbage"),
                {"name": "missing", "command": str(directory / "no-such-command")},
            ],
            gateway={"token": "${GW_TOKEN}", "allowed_origins": ["https://app.example"]},
            identities=[{"name": "ci", "token": "${CI_TOKEN}", "roles": ["bot"]}],
            policy={"allow": ["a__*", "b__echo", "b__crash", "h__*", "s__echo"], "deny": ["a__fail"]},
            tools={"h__add": {"roles": ["bot"]}},
        )
        procs.append(start_http_gateway(config, gw_port, GW_TOKEN=GW_TOKEN, CI_TOKEN=CI_TOKEN))
        yield Gateway(f"http://127.0.0.1:{gw_port}/mcp", f"http://127.0.0.1:{gw_port}", directory)
    finally:
        for p in reversed(procs):
            stop(p)


@asynccontextmanager
async def client(gw: Gateway, mode: str, token: str = GW_TOKEN) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30, trust_env=False)
    async with http:
        async with Client(streamable_http_client(gw.url, http_client=http), mode=mode, cache=None) as c:  # type: ignore[arg-type]
            yield c


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("mode", ERAS)
async def test_tools_list_is_namespaced_merged_and_filtered(gateway: Gateway, mode: str) -> None:
    with anyio.fail_after(30):
        async with client(gateway, mode) as c:
            names = {t.name for t in (await c.list_tools()).tools}
    assert {"a__echo", "a__add", "b__echo", "h__echo", "h__slow", "s__echo"} <= names
    assert "a__fail" not in names, "deny glob hides the tool"
    assert "b__add" not in names, "default deny hides the tool"
    assert "h__add" not in names, "role-restricted tool hidden from the gateway-token caller"
    assert not any(n.startswith(("broken__", "missing__")) for n in names)


@pytest.mark.parametrize("mode", ERAS)
async def test_same_tool_on_four_servers_over_every_upstream_transport(gateway: Gateway, mode: str) -> None:
    """a: stdio, b: stdio initialize-only, h: Streamable HTTP, s: legacy SSE."""
    with anyio.fail_after(30):
        async with client(gateway, mode) as c:
            for server in ("a", "b", "h", "s"):
                result = await c.call_tool(f"{server}__echo", {"text": f"hi {server}"})
                assert not result.is_error and text_of(result) == f"hi {server}"
            added = await c.call_tool("a__add", {"a": 2, "b": 3})
    assert added.structured_content == {"sum": 5}
    # The modern era stamps the answering server's identity: it must be checkrein, never the upstream.
    info = (added.meta or {}).get("io.modelcontextprotocol/serverInfo")
    assert info is None or info["name"] == "checkrein"


@pytest.mark.parametrize("mode", ERAS)
async def test_denials_unknown_tools_and_failed_servers_are_tool_errors(gateway: Gateway, mode: str) -> None:
    with anyio.fail_after(30):
        async with client(gateway, mode) as c:
            default = await c.call_tool("b__add", {"a": 1, "b": 2})
            denied = await c.call_tool("a__fail", {})
            unknown = await c.call_tool("nope__nothing", {})
            broken = await c.call_tool("broken__echo", {"text": "x"})
            missing = await c.call_tool("missing__echo", {"text": "x"})
    assert default.is_error and text_of(default).startswith("denied by checkrein: ")
    assert "default deny" in text_of(default) and text_of(default).endswith(")")
    assert denied.is_error and "a__fail" in text_of(denied) and "(rule deny:a__fail)" in text_of(denied)
    assert unknown.is_error and "(rule catalog:not_found)" in text_of(unknown)
    assert broken.is_error and "failed to start" in text_of(broken)
    assert missing.is_error and "failed to start" in text_of(missing)


async def test_slow_call_times_out_with_the_servers_timeout(gateway: Gateway) -> None:
    with anyio.fail_after(30):
        async with client(gateway, "auto") as c:
            result = await c.call_tool("a__slow", {"seconds": 20})
            after = await c.call_tool("a__echo", {"text": "still here"})
    assert result.is_error and "did not answer within 1 s" in text_of(result)
    assert text_of(after) == "still here"


async def test_crashed_upstream_gives_an_error_then_restarts(gateway: Gateway) -> None:
    with anyio.fail_after(45):
        async with client(gateway, "legacy") as c:
            crashed = await c.call_tool("b__crash", {})
            assert crashed.is_error
            while True:  # restarted on a later call, with backoff: bounded by fail_after
                again = await c.call_tool("b__echo", {"text": "back"})
                if not again.is_error:
                    break
                await anyio.sleep(0.2)
    assert text_of(again) == "back"


@pytest.mark.parametrize("mode", ERAS)
async def test_resources_and_prompts_are_namespaced(gateway: Gateway, mode: str) -> None:
    with anyio.fail_after(30):
        async with client(gateway, mode) as c:
            uris = [r.uri for r in (await c.list_resources()).resources]
            assert "checkrein://a/echo%3A%2F%2Freadme" in uris
            assert not any(u.startswith("checkrein://b/") for u in uris), "b's resources are not allowed"
            read = await c.read_resource("checkrein://a/echo%3A%2F%2Freadme")
            prompts = [p.name for p in (await c.list_prompts()).prompts]
            got = await c.get_prompt("a__greet", {"name": "bob"})
            with pytest.raises(MCPError, match="denied by checkrein"):
                await c.read_resource("checkrein://b/echo%3A%2F%2Freadme")
    content = read.contents[0]
    assert isinstance(content, types.TextResourceContents) and content.text == "hello"
    assert content.uri == "checkrein://a/echo%3A%2F%2Freadme"
    assert "a__greet" in prompts and "b__greet" not in prompts
    assert isinstance(got.messages[0].content, types.TextContent)
    assert got.messages[0].content.text == "Hello, bob!"


async def test_identity_tokens_map_to_roles_that_change_visible_tools(gateway: Gateway) -> None:
    with anyio.fail_after(30):
        async with client(gateway, "auto", token=CI_TOKEN) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            result = await c.call_tool("h__add", {"a": 1, "b": 1})
    assert "h__add" in names
    assert not result.is_error and text_of(result) == "2"


INIT = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
).encode()
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def test_health_answers_without_a_token(gateway: Gateway) -> None:
    status, body = http_status(gateway.base + "/health")
    assert status == 200
    doc = json.loads(body)
    assert doc["status"] == "ok" and doc["servers"] == 6 and doc["tools"] > 0


@pytest.mark.parametrize(
    "headers, expected",
    [
        ({}, 401),
        ({"Authorization": "Bearer wrong"}, 401),
        ({"Authorization": f"Basic {GW_TOKEN}"}, 401),
        ({"Authorization": f"Bearer {GW_TOKEN}", "Origin": "https://evil.example"}, 403),
        ({"Origin": "https://evil.example"}, 403),
        ({"Authorization": f"Bearer {GW_TOKEN}", "Origin": "http://localhost:5173"}, 200),
        ({"Authorization": f"Bearer {GW_TOKEN}", "Origin": "http://localhost"}, 200),
        ({"Authorization": f"Bearer {GW_TOKEN}", "Origin": "https://127.0.0.1:8443"}, 200),
        ({"Authorization": f"Bearer {GW_TOKEN}", "Origin": "https://app.example"}, 200),
        ({"Authorization": f"Bearer {CI_TOKEN}"}, 200),
    ],
)
def test_origin_and_token_guard(gateway: Gateway, headers: dict[str, str], expected: int) -> None:
    status, body = http_status(gateway.url, method="POST", headers={**MCP_HEADERS, **headers}, body=INIT)
    assert status == expected, body[:300]
    if expected == 401:
        assert b"bearer" in body.lower()


def test_health_is_guarded_by_origin_too(gateway: Gateway) -> None:
    assert http_status(gateway.base + "/health", headers={"Origin": "http://evil.example"})[0] == 403


@pytest.mark.parametrize("body", [b"this is not json", b'{"jsonrpc": "2.0", "id": 1}', b"[1, 2"])
def test_malformed_json_rpc_gets_a_json_rpc_error(gateway: Gateway, body: bytes) -> None:
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {GW_TOKEN}"}
    status, raw = http_status(gateway.url, method="POST", headers=headers, body=body)
    assert 400 <= status < 500
    doc = json.loads(raw)
    assert doc["jsonrpc"] == "2.0" and doc["error"]["code"] in (-32700, -32600, -32602)


def test_stats_needs_the_token_and_reports_counters_and_server_states(gateway: Gateway) -> None:
    assert http_status(gateway.base + "/stats")[0] == 401
    docs: list[dict[str, Any]] = []

    def both_broken_servers_failed() -> bool:
        status, body = http_status(gateway.base + "/stats", headers={"Authorization": f"Bearer {GW_TOKEN}"})
        assert status == 200
        docs.append(json.loads(body))
        states = {s["name"]: s["state"] for s in docs[-1]["servers"]}
        return states["broken"] == "failed" and states["missing"] == "failed"

    # A server that cannot start is "starting" during each attempt (the first, and every 10 s retry);
    # on a busy machine an attempt takes long enough for one read to land inside it.
    wait_until(both_broken_servers_failed, timeout=60, what="broken servers reported as failed")
    doc = docs[-1]
    assert {"policy_errors", "approval_failures", "upstream_timeouts", "retries"} <= set(doc["counters"])
    states = {s["name"]: s["state"] for s in doc["servers"]}
    assert states["h"] == "ready" and states["s"] == "ready"

    def broken_ones_failed() -> bool:
        # The gateway retries failed servers every 10 s: during a retry they are "starting".
        _, again = http_status(gateway.base + "/stats", headers={"Authorization": f"Bearer {GW_TOKEN}"})
        now = {s["name"]: s["state"] for s in json.loads(again)["servers"]}
        assert now["broken"] in ("failed", "starting") and now["missing"] in ("failed", "starting"), now
        return now["broken"] == "failed" and now["missing"] == "failed"

    wait_until(broken_ones_failed, timeout=60, what="broken servers reported failed")


async def test_a_session_id_works_only_for_the_identity_that_opened_it(gateway: Gateway) -> None:
    """Another identity's token with ci's session id is answered 404, as an unknown session; the
    owner goes on in its session, and after its DELETE the id is gone for everyone."""
    async with httpx2.AsyncClient(timeout=30, trust_env=False) as http:
        opened = await http.post(gateway.url, content=INIT, headers={**MCP_HEADERS, "Authorization": f"Bearer {CI_TOKEN}"})
        assert opened.status_code == 200, opened.text[:300]
        sid = opened.headers["mcp-session-id"]
        ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode()
        as_ci = {**MCP_HEADERS, "Authorization": f"Bearer {CI_TOKEN}", "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
        as_gw = {**as_ci, "Authorization": f"Bearer {GW_TOKEN}"}
        intruder = await http.post(gateway.url, content=ping, headers=as_gw)
        assert intruder.status_code == 404 and intruder.json()["error"]["message"] == "Session not found"
        assert (await http.delete(gateway.url, headers=as_gw)).status_code == 404, "nor can it end the session"
        owner = await http.post(gateway.url, content=ping, headers=as_ci)
        assert owner.status_code == 200, owner.text[:300]
        assert (await http.delete(gateway.url, headers=as_ci)).status_code in (200, 204)
        assert (await http.post(gateway.url, content=ping, headers=as_ci)).status_code == 404
