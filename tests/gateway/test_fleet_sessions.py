"""A Streamable HTTP session opened on one replica continues on another (shared state on a real
Redis, no affinity), is bound to the identity that opened it, and a DELETE ends it everywhere."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator

import anyio
import httpx2
import pytest
from gateway_support import echo_server_config, free_port, http_status, start_http_gateway, stop, write_config
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from checkrein.testing.services import RedisServer, shared_redis_url

pytestmark = pytest.mark.anyio

TOKEN, OTHER = "fleet-token", "other-token"


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    shared = shared_redis_url()
    if shared is not None:
        yield shared
        return
    with RedisServer.start(tmp_path_factory.mktemp("redis")) as server:
        yield server.url


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[list[str]]:
    directory = tmp_path_factory.mktemp("fleet")
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    configs = []
    for i in range(2):  # one config per replica: each writes its own audit (beside its config)
        (directory / f"r{i}").mkdir()
        config = write_config(
            directory / f"r{i}",
            [echo_server_config("a")],
            gateway={"token": "${GW_TOKEN}"},
            identities=[{"name": "other", "token": "${OTHER_TOKEN}"}],
            policy={"allow": ["a__*"]},
        )
        config.write_text(config.read_text() + f'\n[state]\nurl = "{redis_url}"\nkey_prefix = "{prefix}"\ntimeout_s = 5.0\n')
        configs.append(config)
    ports = [free_port(), free_port()]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for config, p in zip(configs, ports, strict=True):
            procs.append(start_http_gateway(config, p, GW_TOKEN=TOKEN, OTHER_TOKEN=OTHER))
        yield [f"http://127.0.0.1:{p}" for p in ports]
    finally:
        for proc in procs:
            stop(proc)


class Switch:
    """Sends every request to ``target``, whatever URL the client was given."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.seen: list[str] = []

    async def __call__(self, request: httpx2.Request) -> None:
        port = int(self.target.rsplit(":", 1)[1])
        request.url = request.url.copy_with(port=port)
        self.seen.append(f"{request.method} {port}")


def stats(base: str) -> dict[str, object]:
    status, body = http_status(base + "/stats", headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 200
    return json.loads(body)  # type: ignore[no-any-return]


async def test_a_session_opened_on_a_continues_on_b(replicas: list[str]) -> None:
    a, b = replicas
    switch = Switch(a)
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30, trust_env=False, event_hooks={"request": [switch]})
    with anyio.fail_after(60):
        async with http, Client(streamable_http_client(a + "/mcp", http_client=http), mode="legacy", cache=None) as c:  # type: ignore[arg-type]
            first = await c.call_tool("a__echo", {"text": "on a"})
            switch.target = b
            second = await c.call_tool("a__echo", {"text": "on b"})
            tools = await c.list_tools()
    assert not first.is_error and not second.is_error
    assert "a__echo" in [t.name for t in tools.tools]
    ports = {s.split()[1] for s in switch.seen}
    assert ports == {a.rsplit(":", 1)[1], b.rsplit(":", 1)[1]}
    metrics = stats(b)["metrics"]
    assert isinstance(metrics, dict) and metrics["checkrein_http_sessions_adopted_total"] >= 1


async def test_another_identity_cannot_use_the_session_and_delete_ends_it_everywhere(replicas: list[str]) -> None:
    a, b = replicas
    init = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
    }
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Authorization": f"Bearer {TOKEN}"}
    async with httpx2.AsyncClient(timeout=30, trust_env=False) as http:
        r = await http.post(a + "/mcp", json=init, headers=headers)
        assert r.status_code == 200
        sid = r.headers["mcp-session-id"]
        with_sid = {**headers, "mcp-session-id": sid, "MCP-Protocol-Version": "2025-11-25"}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(b + "/mcp", json=note, headers=with_sid)).status_code == 202
        ping = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        assert (await http.post(b + "/mcp", json=ping, headers=with_sid)).status_code == 200
        intruder = {**with_sid, "Authorization": f"Bearer {OTHER}"}
        assert (await http.post(b + "/mcp", json=ping, headers=intruder)).status_code == 404
        assert (await http.post(a + "/mcp", json=ping, headers=intruder)).status_code == 404
        assert (await http.delete(b + "/mcp", headers=with_sid)).status_code == 200
        assert (await http.post(a + "/mcp", json=ping, headers=with_sid)).status_code == 404
        assert (await http.post(b + "/mcp", json=ping, headers=with_sid)).status_code == 404
        unknown = {**with_sid, "mcp-session-id": uuid.uuid4().hex}
        assert (await http.post(b + "/mcp", json=ping, headers=unknown)).status_code == 404


async def test_answers_are_plain_json_on_the_replica_that_opened_the_session_and_on_one_that_adopted_it(
    replicas: list[str],
) -> None:
    """The fast path's JSON answers (`frontend/http_json.py`) hold for a fleet's sessions too."""
    a, b = replicas
    init = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
    }
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Authorization": f"Bearer {TOKEN}"}
    async with httpx2.AsyncClient(timeout=30, trust_env=False) as http:
        r = await http.post(a + "/mcp", json=init, headers=headers)
        with_sid = {**headers, "mcp-session-id": r.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
        assert (await http.post(a + "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=with_sid)).status_code == 202
        for i, base in enumerate((a, b, a), start=2):
            call = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "a__echo", "arguments": {"text": base}}}
            answer = await http.post(base + "/mcp", json=call, headers=with_sid)
            assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/json"), answer.text
            assert answer.json()["result"]["content"][0]["text"] == base
