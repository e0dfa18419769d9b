"""Two replicas behind nginx (round robin, no affinity) on a real Redis and PostgreSQL: sessions
move between replicas, /metrics parses, spans reach the collector, a Postgres outage loses
nothing, `audit verify --postgres` catches edited and deleted rows, a killed Redis fails closed."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys

import anyio
import httpx2
import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from checkrein.audit.segments import iter_lines
from checkrein.testing.fleet import Fleet
from checkrein.testing.otlp_receiver import OtlpReceiver

from .conftest import client, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def get(url: str, token: str) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=30, trust_env=False) as http:
        return await http.get(url, headers={"Authorization": f"Bearer {token}"})


async def stats(fleet: Fleet, i: int) -> dict[str, object]:
    r = await get(fleet.replica_urls[i] + "/stats", fleet.token)
    assert r.status_code == 200
    return r.json()  # type: ignore[no-any-return]


async def test_one_session_is_served_by_both_replicas(fleet: Fleet) -> None:
    with anyio.fail_after(90):
        async with client(fleet) as c:
            results = [text_of(await c.call_tool("echo__echo", {"text": f"call {i}"})) for i in range(6)]
    assert results == [f"call {i}" for i in range(6)]
    calls = [int((await stats(fleet, i))["counters"]["calls"]) for i in range(2)]  # type: ignore[index, call-overload]
    assert all(n > 0 for n in calls) and sum(calls) >= 6  # round robin: both replicas served the session
    adopted = [(await stats(fleet, i))["metrics"].get("checkrein_http_sessions_adopted_total", 0) for i in range(2)]  # type: ignore[union-attr]
    assert sum(adopted) >= 1


async def test_metrics_through_the_load_balancer_parse(fleet: Fleet) -> None:
    r = await get(fleet.base + "/metrics", fleet.token)
    assert r.status_code == 200
    names = {f.name for f in text_string_to_metric_families(r.text)}
    assert {"checkrein_gate_calls", "checkrein_decisions", "checkrein_audit_postgres_lag_events", "checkrein_upstream_up"} <= names
    assert (await get(fleet.base + "/metrics", "wrong")).status_code == 401


async def test_spans_arrive_with_the_callers_trace(fleet: Fleet, otlp: OtlpReceiver) -> None:
    trace_id, parent = secrets.token_hex(16), secrets.token_hex(8)
    with anyio.fail_after(90):
        async with client(fleet) as c:
            await c.call_tool("echo__echo", {"text": "traced"}, meta={"traceparent": f"00-{trace_id}-{parent}-01"})
        await anyio.to_thread.run_sync(lambda: otlp.wait_for(
            lambda r: any(s.trace_id == trace_id and s.parent_span_id == parent for s in r.spans), timeout=60, what="span"))
    (server,) = [s for s in otlp.spans if s.trace_id == trace_id and s.parent_span_id == parent]
    assert server.name == "tools/call echo__echo" and server.attributes["network.transport"] == "tcp"
    assert any(s.parent_span_id == server.span_id for s in otlp.spans if s.trace_id == trace_id)


def pg_lines(fleet: Fleet, log_id: str) -> list[str]:
    assert fleet.postgres is not None
    with psycopg.connect(fleet.postgres.dsn) as conn:
        return [r[0] for r in conn.execute("SELECT line FROM checkrein_audit_events WHERE log_id = %s ORDER BY seq", (log_id,))]


def local(fleet: Fleet, i: int) -> tuple[str, list[str]]:
    lines = [line.decode() for _, line in iter_lines(fleet.audit_dir(i))]
    return json.loads(lines[0])["log_id"], lines


async def test_postgres_stopped_mid_run_loses_nothing(fleet: Fleet) -> None:
    assert fleet.postgres is not None
    with anyio.fail_after(240):
        async with client(fleet) as c:
            for i in range(4):
                await c.call_tool("echo__echo", {"text": f"before {i}"})
            await anyio.to_thread.run_sync(fleet.postgres.stop)
            for i in range(6):  # calls go on while Postgres is down
                assert text_of(await c.call_tool("echo__echo", {"text": f"during {i}"})) == f"during {i}"
            lag = [(await stats(fleet, i))["metrics"]["checkrein_audit_postgres_lag_events"] for i in range(2)]  # type: ignore[index]
            assert sum(lag) > 0  # type: ignore[arg-type]
            await anyio.to_thread.run_sync(fleet.postgres.restart)
            await anyio.to_thread.run_sync(fleet.wait_shipped)
    for i in range(2):
        log_id, lines = local(fleet, i)
        shipped = pg_lines(fleet, log_id)
        assert shipped == lines[: len(shipped)] and len(shipped) >= len(lines) - 2  # the tail may still be moving
        assert len(set(shipped)) == len(shipped)


async def test_a_killed_redis_refuses_unknown_sessions_and_recovers(fleet: Fleet) -> None:
    assert fleet.redis is not None
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "Authorization": f"Bearer {fleet.token}"}
    with anyio.fail_after(240):
        async with client(fleet) as held, httpx2.AsyncClient(timeout=30, trust_env=False) as http:
            for i in range(4):  # round robin: both replicas now hold this session
                assert text_of(await held.call_tool("echo__echo", {"text": f"held {i}"})) == f"held {i}"
            r = await http.post(fleet.replica_urls[0] + "/mcp", json=init, headers=headers)
            sid = r.headers["mcp-session-id"]  # opened on replica 0 only
            await anyio.to_thread.run_sync(fleet.redis.kill)
            ping = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
            with_sid = {**headers, "mcp-session-id": sid, "MCP-Protocol-Version": "2025-11-25"}
            refused = await http.post(fleet.replica_urls[1] + "/mcp", json=ping, headers=with_sid)
            assert refused.status_code == 503 and "state.unavailable" in refused.text
            for _ in range(2):  # a session both replicas hold goes on while Redis is down...
                assert "echo__echo" in {t.name for t in (await held.list_tools()).tools}
                # ...but its calls are refused: their flow state is in Redis (fail closed).
                down = await held.call_tool("echo__echo", {"text": "down"})
                assert down.is_error and "state:unavailable" in text_of(down)
            await anyio.to_thread.run_sync(fleet.redis.restart)
            # The restarted Redis is empty (no persistence): the replicas write the records of the
            # sessions they hold again, so the held session goes on across both replicas.
            for i in range(4):
                assert text_of(await held.call_tool("echo__echo", {"text": f"after {i}"})) == f"after {i}"
    republished = [(await stats(fleet, i))["metrics"].get("checkrein_http_sessions_republished_total", 0) for i in range(2)]  # type: ignore[union-attr]
    assert sum(republished) >= 1
    with anyio.fail_after(90):
        async with client(fleet) as c:  # and a new session works across replicas again
            assert text_of(await c.call_tool("echo__echo", {"text": "new"})) == "new"
            assert text_of(await c.call_tool("echo__echo", {"text": "again"})) == "again"


async def test_verify_against_postgres_catches_an_edited_and_a_deleted_row(fleet: Fleet) -> None:
    assert fleet.postgres is not None
    await anyio.to_thread.run_sync(lambda: fleet.stop_replica(0))  # a closed chain, fully shipped
    log_id, lines = local(fleet, 0)
    assert pg_lines(fleet, log_id) == lines
    key = fleet.audit_dir(0).parent / "checkrein.audit-key"  # anchored: an unanchored log exits 3
    cmd = [sys.executable, "-m", "checkrein", "audit", "verify", str(fleet.audit_dir(0)), "--key", str(key),
           "--postgres", fleet.postgres.dsn]
    ok = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and "POSTGRES VALID" in ok.stdout, ok.stdout + ok.stderr
    edited = next(json.loads(line)["seq"] for line in lines if '"outcome":"ok"' in line and '"type":"call"' in line)
    with psycopg.connect(fleet.postgres.dsn) as conn:
        conn.execute(
            "UPDATE checkrein_audit_events SET line = replace(line, '\"outcome\":\"ok\"', '\"outcome\":\"denied\"') "
            "WHERE log_id = %s AND seq = %s",
            (log_id, edited),
        )
        conn.execute("DELETE FROM checkrein_audit_events WHERE log_id = %s AND seq = 1", (log_id,))
    bad = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "POSTGRES INVALID" in bad.stdout
    assert "missing seq 1," in bad.stdout and f"altered seq {edited}," in bad.stdout, bad.stdout
