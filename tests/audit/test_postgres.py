"""The fleet's audit in PostgreSQL: fleet-wide query and stats, and `verify --postgres` against a
tamper matrix on the rows (edit the line, the jsonb, a filter column; delete; insert)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import psycopg
import pytest
from typer.testing import CliRunner

from checkrein.audit import open_audit_trail
from checkrein.audit.postgres import pg_audit_stats, pg_query_events, pg_verify
from checkrein.audit.query import EventFilter
from checkrein.cli.main import app
from checkrein.config.fleet import PostgresAuditSettings

from .helpers import make_record, settings
from .pg_support import fresh_table, postgres_dsn

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def dsn() -> Iterator[str]:
    with postgres_dsn() as d:
        yield d


async def shipped_log(directory: Path, dsn: str, table: str, n: int, *, start: int = 0) -> None:
    pg = PostgresAuditSettings(dsn=dsn, table=table, poll_interval_s=0.05, retry_interval_s=0.1)
    trail = open_audit_trail(settings(directory, postgres=pg), directory.parent)
    for i in range(start, start + n):
        await trail.record_call(make_record(i, outcome="denied" if i % 4 == 0 else "ok"))
    await trail.aclose()


def execute(dsn: str, sql: str, *params: object) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute(sql, params)  # type: ignore[arg-type]


@pytest.fixture
async def one_log(tmp_path: Path, dsn: str) -> tuple[Path, str]:
    table = fresh_table()
    await shipped_log(tmp_path / "a", dsn, table, 12)
    return tmp_path / "a", table


async def test_a_faithful_copy_verifies(one_log: tuple[Path, str], dsn: str) -> None:
    directory, table = one_log
    report = pg_verify(directory, dsn, table=table)
    assert report.exit_code == 0, report.as_dict()
    assert report.rows == report.local_events > 12


@pytest.mark.parametrize(
    ("tamper", "kind"),
    [
        ("UPDATE {t} SET line = replace(line, 'contents of file 3', 'contents of file X') WHERE seq = 4", "altered"),
        ("UPDATE {t} SET event = jsonb_set(event, '{{outcome}}', '\"ok\"') WHERE seq = 1", "altered"),
        ("UPDATE {t} SET outcome = 'ok' WHERE seq = 1", "altered"),
        ("DELETE FROM {t} WHERE seq = 5", "missing"),
    ],
)
async def test_edited_and_deleted_rows_are_detected(one_log: tuple[Path, str], dsn: str, tamper: str, kind: str) -> None:
    directory, table = one_log
    execute(dsn, tamper.format(t=table))
    report = pg_verify(directory, dsn, table=table)
    assert report.exit_code == 1
    bad = report.altered if kind == "altered" else report.missing
    assert len(bad) == 1 and not report.extra


async def test_an_inserted_row_is_detected(one_log: tuple[Path, str], dsn: str) -> None:
    directory, table = one_log
    with psycopg.connect(dsn) as conn:
        (log_id, line) = conn.execute(f"SELECT log_id, line FROM {table} WHERE seq = 2").fetchone()  # type: ignore[misc]
    forged = json.loads(line)
    forged["seq"], forged["event_id"] = 999, str(uuid.uuid4())
    text = json.dumps(forged)
    execute(
        dsn,
        f"INSERT INTO {table} (event_id, log_id, seq, type, time, hash, line, event) VALUES (%s, %s, 999, 'call', now(), 'x', %s, %s::jsonb)",
        forged["event_id"], log_id, text, text,
    )
    report = pg_verify(directory, dsn, table=table)
    assert report.exit_code == 1 and report.extra == [999]


async def test_queries_and_stats_answer_across_replicas(tmp_path: Path, dsn: str) -> None:
    table = fresh_table()
    await shipped_log(tmp_path / "a", dsn, table, 6)
    await shipped_log(tmp_path / "b", dsn, table, 4, start=100)
    calls = pg_query_events(dsn, EventFilter(calls_only=True), table=table)
    assert len(calls) == 10 and len({c["log_id"] for c in calls}) == 2
    assert {c["trace_id"] for c in calls} >= {"trace-0", "trace-100"}
    only_write = pg_query_events(dsn, EventFilter(tool="fs__write_*"), table=table)
    assert only_write and all(e["exposed_name"] == "fs__write_file" for e in only_write)
    stats = pg_audit_stats(dsn, table=table)
    assert stats["calls"] == 10 and stats["outcomes"]["denied"] == 2 + 1
    assert len(stats["replicas"]) == 2


async def test_the_cli_reads_and_verifies_postgres(one_log: tuple[Path, str], dsn: str) -> None:
    directory, table = one_log
    runner = CliRunner()
    ok = runner.invoke(app, ["audit", "verify", str(directory), "--postgres", dsn, "--table", table])
    # The copy is faithful; the local log is unsigned, so the local check is unanchored (exit 3).
    assert ok.exit_code == 3 and "POSTGRES VALID" in ok.output and "UNANCHORED" in ok.output, ok.output
    q = runner.invoke(app, ["audit", "query", "--postgres", dsn, "--table", table, "--outcome", "denied", "--json"])
    assert q.exit_code == 0 and len(q.output.strip().splitlines()) == 3
    st = runner.invoke(app, ["audit", "stats", "--postgres", dsn, "--table", table, "--json"])
    assert st.exit_code == 0 and json.loads(st.output)["calls"] == 12
    await anyio.to_thread.run_sync(lambda: execute(dsn, f"DELETE FROM {table} WHERE seq = 3"))
    bad = runner.invoke(app, ["audit", "verify", str(directory), "--postgres", dsn, "--table", table])
    assert bad.exit_code == 1 and "POSTGRES INVALID" in bad.output and "missing seq 3" in bad.output
    down = runner.invoke(app, ["audit", "stats", "--postgres", "postgresql://postgres@127.0.0.1:1/none"])
    assert down.exit_code == 2 and "cannot read Postgres" in down.output
