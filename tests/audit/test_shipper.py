"""Shipping the local chain to a real PostgreSQL: at least once, idempotent by event_id, never
blocking calls; an outage queues on disk and drains when the server returns."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import psycopg
import pytest

from checkrein.audit import open_audit_trail
from checkrein.audit.postgres import pg_verify
from checkrein.audit.segments import iter_lines
from checkrein.audit.shipper import CURSOR_FILE
from checkrein.audit.trail import AuditTrailImpl
from checkrein.config.fleet import PostgresAuditSettings
from checkrein.testing.services import PostgresServer

from .helpers import make_record, settings
from .pg_support import fresh_table, postgres_dsn, rows

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def dsn() -> Iterator[str]:
    with postgres_dsn() as d:
        yield d


def pg_settings(directory: Path, dsn: str, table: str, **over: object) -> object:
    return settings(directory, postgres=PostgresAuditSettings(dsn=dsn, table=table, poll_interval_s=0.05, retry_interval_s=0.1), **over)


def wait_for(check: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(check) and check():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {timeout} s")


def local_lines(directory: Path) -> list[str]:
    return [line.decode() for _, line in iter_lines(directory)]


async def record(trail: AuditTrailImpl, start: int, n: int) -> None:
    for i in range(start, start + n):
        await trail.record_call(make_record(i))


async def test_every_local_line_arrives_once_and_verifies(tmp_path: Path, dsn: str) -> None:
    table = fresh_table()
    d = tmp_path / "audit"
    trail = open_audit_trail(pg_settings(d, dsn, table), tmp_path)  # type: ignore[arg-type]
    await record(trail, 0, 25)
    await trail.aclose()
    got = rows(dsn, table)
    assert [r[2] for r in got] == local_lines(d)
    assert [r[1] for r in got] == list(range(len(got)))
    report = pg_verify(d, dsn, table=table)
    assert report.exit_code == 0 and report.unshipped == 0 and report.local_events == len(got)
    assert trail.counters["postgres_shipped"] == len(got) and trail.counters["postgres_lag_events"] == 0


async def test_an_outage_never_blocks_calls_and_loses_nothing(tmp_path: Path) -> None:
    table = fresh_table()
    d = tmp_path / "audit"
    with PostgresServer.start() as pg:
        trail = open_audit_trail(pg_settings(d, pg.dsn, table), tmp_path)  # type: ignore[arg-type]
        await record(trail, 0, 5)
        await anyio.to_thread.run_sync(lambda: wait_for(lambda: trail.counters["postgres_lag_events"] == 0, 60, "first ship"))
        await anyio.to_thread.run_sync(pg.stop)
        with anyio.fail_after(30):  # bounded, not timed: calls go on while Postgres is down
            await record(trail, 5, 20)
        await anyio.to_thread.run_sync(lambda: wait_for(lambda: trail.counters["postgres_connected"] == 0, 60, "outage seen"))
        assert trail.counters["postgres_lag_events"] > 0 and trail.counters["postgres_errors"] >= 1
        await anyio.to_thread.run_sync(pg.restart)
        await anyio.to_thread.run_sync(lambda: wait_for(lambda: trail.counters["postgres_lag_events"] == 0, 60, "drained"))
        await trail.aclose()
        got = rows(pg.dsn, table)
        lines = local_lines(d)
        assert [r[2] for r in got] == lines  # nothing lost, none twice
        with psycopg.connect(pg.dsn) as conn:
            (n, distinct) = conn.execute(f"SELECT count(*), count(DISTINCT event_id) FROM {table}").fetchone()  # type: ignore[misc]
        assert n == distinct == len(lines)
        events = [json.loads(line) for line in lines]
        names = [e.get("event") for e in events if e.get("type") == "lifecycle"]
        assert "audit.postgres_unavailable" in names and "audit.postgres_resumed" in names
        assert pg_verify(d, pg.dsn, table=table).exit_code == 0


async def test_a_backlog_left_at_shutdown_ships_on_the_next_start(tmp_path: Path) -> None:
    table = fresh_table()
    d = tmp_path / "audit"
    with PostgresServer.start() as pg:
        await anyio.to_thread.run_sync(pg.stop)
        trail = open_audit_trail(pg_settings(d, pg.dsn, table, close_timeout_s=0.2), tmp_path)  # type: ignore[arg-type]
        await record(trail, 0, 10)
        await trail.aclose()
        cursor = json.loads((d / CURSOR_FILE).read_text()) if (d / CURSOR_FILE).exists() else {"seq": 0}
        assert cursor["seq"] == 0
        await anyio.to_thread.run_sync(pg.restart)
        trail = open_audit_trail(pg_settings(d, pg.dsn, table), tmp_path)  # type: ignore[arg-type]
        await record(trail, 10, 3)
        await trail.aclose()
        assert [r[2] for r in rows(pg.dsn, table)] == local_lines(d)


async def test_a_lost_cursor_reships_without_duplicates(tmp_path: Path, dsn: str) -> None:
    table = fresh_table()
    d = tmp_path / "audit"
    trail = open_audit_trail(pg_settings(d, dsn, table), tmp_path)  # type: ignore[arg-type]
    await record(trail, 0, 8)
    await trail.aclose()
    (d / CURSOR_FILE).unlink()  # as after a crash between commit and saving the cursor
    trail = open_audit_trail(pg_settings(d, dsn, table), tmp_path)  # type: ignore[arg-type]
    await trail.aclose()
    assert trail.counters["postgres_duplicates"] > 0
    assert [r[2] for r in rows(dsn, table)] == local_lines(d)


async def test_segments_rotate_and_the_shipper_follows(tmp_path: Path, dsn: str) -> None:
    table = fresh_table()
    d = tmp_path / "audit"
    trail = open_audit_trail(pg_settings(d, dsn, table, segment_max_bytes=4096, durability="durable"), tmp_path)  # type: ignore[arg-type]
    await record(trail, 0, 40)
    await trail.aclose()
    assert len(list(d.glob("segment-*.jsonl"))) > 2
    assert [r[2] for r in rows(dsn, table)] == local_lines(d)
