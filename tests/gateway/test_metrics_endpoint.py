"""`GET /metrics` over real HTTP: on the HTTP frontend (same Origin and token rules as /stats) and
on `--metrics-port` beside a stdio gateway; the text parses with `prometheus_client.parser`, and
the closing audit event holds the same registry's snapshot."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from gateway_support import (
    echo_server_config,
    free_port,
    gateway_stdio_params,
    http_status,
    port_open,
    start_http_gateway,
    stop,
    wait_until,
    write_config,
)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from prometheus_client.parser import text_string_to_metric_families

from checkrein.audit.query import audit_stats

pytestmark = pytest.mark.anyio

TOKEN = "metrics-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def tool_calls(got: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> float:
    """Tool calls counted by the latency histogram (the gate also counts listings as calls)."""
    return sum(v for (name, labels), v in got.items()
               if name == "checkrein_call_duration_seconds_count" and ("kind", "tool") in labels)


def parse(body: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(body.decode())
        for s in f.samples
    }


@pytest.fixture
def http_gateway(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str, Path]]:
    config = write_config(
        tmp_path,
        [echo_server_config("a")],
        gateway={"token": TOKEN, "allowed_origins": ["https://app.example"]},
        policy={"allow": ["a__*"], "deny": ["a__fail"]},
        audit={"dir": "audit"},
    )
    port = free_port()
    proc = start_http_gateway(config, port)
    try:
        yield proc, f"http://127.0.0.1:{port}", tmp_path / "audit"
    finally:
        stop(proc)


async def test_metrics_on_the_http_frontend_parse_and_match_stats(http_gateway: tuple[subprocess.Popen[bytes], str, Path]) -> None:
    proc, base, audit = http_gateway
    http = httpx2.AsyncClient(headers=AUTH, timeout=30, trust_env=False)
    with anyio.fail_after(60):
        async with http, Client(streamable_http_client(base + "/mcp", http_client=http), mode="legacy", cache=None) as c:  # type: ignore[arg-type]
            assert not (await c.call_tool("a__echo", {"text": "x"})).is_error
            assert (await c.call_tool("a__fail", {})).is_error
    assert http_status(base + "/metrics")[0] == 401
    assert http_status(base + "/metrics", headers={**AUTH, "Origin": "https://evil.example"})[0] == 403
    status, body = http_status(base + "/metrics", headers={**AUTH, "Origin": "https://app.example"})
    assert status == 200
    got = parse(body)
    assert tool_calls(got) == 2
    assert got[("checkrein_gate_calls_total", ())] >= 2  # tool calls and the listings the client made
    assert got[("checkrein_gate_denials_total", ())] == 1
    denied = {dict(k[1])["rule"]: v for k, v in got.items() if k[0] == "checkrein_decisions_total" and ("effect", "deny") in k[1]}
    assert sum(denied.values()) == 1
    assert got[("checkrein_upstream_up", (("server", "a"), ("transport", "stdio")))] == 1
    assert got[("checkrein_audit_events_queued_total", ())] >= 2
    assert ("checkrein_audit_queue_depth", ()) in got
    status, raw = http_status(base + "/stats", headers=AUTH)
    doc = json.loads(raw)
    calls = doc["counters"]["calls"]
    assert calls >= 2 and doc["metrics"]["checkrein_gate_calls_total"] == calls
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    stops = [
        json.loads(line)
        for seg in sorted(audit.glob("*.jsonl"))
        for line in seg.read_text().splitlines()
        if '"gateway.stop"' in line
    ]
    assert stops and stops[-1]["fields"]["metrics"]["checkrein_gate_calls_total"] == calls
    assert audit_stats(audit)["registry"]["checkrein_gate_calls_total"] == calls  # `audit stats` reads it back


async def test_metrics_port_beside_a_stdio_gateway(tmp_path: Path) -> None:
    config = write_config(tmp_path, [echo_server_config("a")], gateway={"token": TOKEN}, policy={"allow": ["a__*"]})
    port = free_port()
    params = gateway_stdio_params(config)
    params.args = [*params.args, "--metrics-port", str(port)]
    with anyio.fail_after(60):
        async with Client(params, mode="legacy", cache=None) as c:  # type: ignore[arg-type]
            await c.call_tool("a__echo", {"text": "x"})
            await anyio.to_thread.run_sync(lambda: wait_until(lambda: port_open(port), timeout=30, what="metrics port"))
            unauth = await anyio.to_thread.run_sync(lambda: http_status(f"http://127.0.0.1:{port}/metrics"))
            status, body = await anyio.to_thread.run_sync(lambda: http_status(f"http://127.0.0.1:{port}/metrics", headers=AUTH))
    assert unauth[0] == 401
    assert status == 200
    got = parse(body)
    assert tool_calls(got) == 1
    assert got[("checkrein_call_duration_seconds_count", (("kind", "tool"), ("outcome", "ok"), ("tool", "a__echo")))] == 1
