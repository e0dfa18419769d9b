"""The fleet's audit in PostgreSQL (extra ``checkrein[postgres]``, psycopg 3).

Every replica keeps its local chained log as the source of truth and ships each line here
(`checkrein.audit.shipper`): one row per event, keyed by ``event_id``, with the replica's
``log_id`` and ``seq``, the exact stored ``line`` and, for SQL users, the event as ``jsonb`` plus
the columns fleet queries filter on. Rows are inserted with ``ON CONFLICT DO NOTHING``, so
shipping a line twice (at least once delivery) leaves one row.

Reading: `pg_query_events` and `pg_audit_stats` answer across every replica (behind
``checkrein audit query|stats --postgres DSN``); `pg_verify` checks that the table holds exactly
what one local chain holds: no row missing, altered or added (``audit verify --postgres DSN``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from checkrein.errors import AuditError

from .query import EventFilter, filter_sql, stats_of_events
from .segments import iter_lines, list_segments

__all__ = [
    "PgVerifyReport",
    "connect",
    "ensure_schema",
    "insert_lines",
    "pg_audit_stats",
    "pg_query_events",
    "pg_verify",
    "row_of",
    "valid_lines",
]

_COLUMNS = (
    "event_id", "log_id", "seq", "type", "time", "hash", "trace_id", "session_id", "exposed_name", "tool",
    "server", "outcome", "error_code", "effect", "rule_id", "duration_ms", "line", "event",
)


def connect(dsn: str, *, timeout_s: float = 5.0) -> Any:
    """A psycopg connection (autocommit off). Raises ``AuditError`` when psycopg is missing."""
    try:
        import psycopg
    except ImportError:
        raise AuditError("Postgres needs psycopg: pip install 'checkrein[postgres]'", code="audit.postgres_missing") from None
    return psycopg.connect(dsn, connect_timeout=max(1, int(timeout_s)), application_name="checkrein")


def ensure_schema(conn: Any, table: str) -> None:
    """Create the table and its indexes when missing (``table`` is a validated identifier)."""
    with conn.cursor() as cur:
        cur.execute(
            f"""CREATE TABLE IF NOT EXISTS {table} (
                event_id uuid PRIMARY KEY,
                log_id text NOT NULL,
                seq bigint NOT NULL,
                type text NOT NULL,
                time timestamptz NOT NULL,
                hash text NOT NULL,
                trace_id text, session_id text, exposed_name text, tool text, server text,
                outcome text, error_code text, effect text, rule_id text, duration_ms double precision,
                line text NOT NULL,
                event jsonb NOT NULL,
                shipped_at timestamptz NOT NULL DEFAULT now(),
                UNIQUE (log_id, seq)
            )"""
        )
        for col in ("time", "trace_id", "session_id"):
            cur.execute(f"CREATE INDEX IF NOT EXISTS {table}_{col} ON {table} ({col})")
    conn.commit()


def row_of(line: bytes) -> tuple[Any, ...]:
    """The row of one stored line. Raises ``ValueError`` for a line that is not an event."""
    text = line.decode("utf-8")
    e = json.loads(text)
    if not isinstance(e, dict) or not isinstance(e.get("seq"), int):
        raise ValueError("not an audit event")
    raw_d = e.get("decision")
    d: dict[str, Any] = raw_d if isinstance(raw_d, dict) else {}
    return (
        e.get("event_id"), e.get("log_id"), e["seq"], e.get("type"), e.get("time"), e.get("hash"),
        e.get("trace_id"), e.get("session_id"), e.get("exposed_name"), e.get("tool"), e.get("server"),
        e.get("outcome"), e.get("error_code"), d.get("effect"), d.get("rule_id"),
        e.get("duration_ms") if isinstance(e.get("duration_ms"), int | float) else None,
        text, text,
    )


def valid_lines(lines: Sequence[bytes]) -> tuple[list[str], int]:
    """The lines that are JSON objects with an integer ``seq`` (as text), and how many were not
    (left out: `audit verify` reports them locally; a bad line must never wedge shipping)."""
    good: list[str] = []
    bad = 0
    for line in lines:
        try:
            e = orjson.loads(line)
        except orjson.JSONDecodeError:
            bad += 1
            continue
        if isinstance(e, dict) and isinstance(e.get("seq"), int) and isinstance(e.get("event_id"), str):
            good.append(line.decode("utf-8"))
        else:
            bad += 1
    return good, bad


def insert_lines(conn: Any, table: str, log_id: str, lines: Sequence[str]) -> int:
    """Insert one batch in one statement and transaction; returns how many rows were new.

    The batch goes as ONE text value, a line each: Postgres splits and parses each line and derives the columns (so this
    process spends almost nothing per event). Events without a ``log_id`` get the replica's.
    """
    if not lines:
        return 0
    sql = f"""INSERT INTO {table} ({', '.join(_COLUMNS)})
        SELECT (e->>'event_id')::uuid, coalesce(e->>'log_id', %s), (e->>'seq')::bigint, e->>'type',
               (e->>'time')::timestamptz, e->>'hash', e->>'trace_id', e->>'session_id', e->>'exposed_name',
               e->>'tool', e->>'server', e->>'outcome', e->>'error_code', e->'decision'->>'effect',
               e->'decision'->>'rule_id',
               CASE WHEN jsonb_typeof(e->'duration_ms') = 'number' THEN (e->>'duration_ms')::float8 END,
               l.line, e
        FROM unnest(string_to_array(%s, E'\\n')) AS l(line), LATERAL (SELECT l.line::jsonb AS e) AS j
        ON CONFLICT DO NOTHING"""
    with conn.cursor() as cur:
        # One text parameter (stored lines never hold a raw newline): a text[] parameter would
        # be escaped element by element in Python, which cost more than everything else here.
        cur.execute(sql, (log_id, "\n".join(lines)))
        new = cur.rowcount if cur.rowcount is not None and cur.rowcount >= 0 else len(lines)
    conn.commit()
    return int(new)


# -- reading ---------------------------------------------------------------------------------


def _where(flt: EventFilter, log_id: str | None) -> tuple[str, list[Any]]:
    where, params = filter_sql(flt, "%s", "::timestamptz", server="server", user="event->'identity'->>'user'")
    if log_id is not None:
        where.append("log_id = %s")
        params.append(log_id)
    return (" WHERE " + " AND ".join(where)) if where else "", params


def _events(dsn: str, table: str, flt: EventFilter, *, log_id: str | None = None) -> Iterator[dict[str, Any]]:
    where, params = _where(flt, log_id)
    with connect(dsn) as conn, conn.cursor(name="checkrein_read") as cur:
        cur.itersize = 2000
        cur.execute(f"SELECT log_id, line FROM {table}{where} ORDER BY time, log_id, seq", params)
        for log_id_of_row, line in cur:
            e = json.loads(line)
            if isinstance(e, dict) and flt.matches(e):  # the tool glob is matched here
                e.setdefault("log_id", log_id_of_row)  # which replica: only genesis events carry it
                yield e


def pg_query_events(dsn: str, flt: EventFilter, *, limit: int | None = None, table: str = "checkrein_audit_events") -> list[dict[str, Any]]:
    """Events of every replica matching ``flt``, by time (the last ``limit`` when given); each
    carries its replica's ``log_id``."""
    out = list(_events(dsn, table, flt))
    return out[-limit:] if limit else out


def pg_audit_stats(dsn: str, flt: EventFilter | None = None, *, table: str = "checkrein_audit_events") -> dict[str, Any]:
    """`audit_stats` over every replica, plus ``replicas``: events per log id."""
    flt = flt or EventFilter()
    per_log: dict[str, int] = {}

    def counted(events: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for e in events:
            key = str(e.get("log_id") or "?")
            per_log[key] = per_log.get(key, 0) + 1
            yield e

    # Stats need lifecycle events too (trail outages, the registry at gateway.stop): read all rows.
    stats = stats_of_events(counted(_events(dsn, table, EventFilter(since=flt.since))), flt)
    stats["replicas"] = per_log
    return stats


@dataclass
class PgVerifyReport:
    log_id: str | None
    local_events: int = 0
    rows: int = 0
    missing: list[int] = field(default_factory=list)
    """Seqs shipped (below the shipper's cursor) but not in Postgres: deleted."""
    unshipped: int = 0
    """Local events past the shipper's cursor and not in Postgres yet (lag, not tampering)."""
    altered: list[int] = field(default_factory=list)
    extra: list[int] = field(default_factory=list)
    """Rows of this log that no local line has."""
    problem: str | None = None

    @property
    def exit_code(self) -> int:
        if self.problem is not None and self.log_id is None:
            return 2
        return 1 if (self.missing or self.altered or self.extra or self.problem) else 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "log_id": self.log_id, "local_events": self.local_events, "rows": self.rows, "missing": self.missing,
            "unshipped": self.unshipped, "altered": self.altered, "extra": self.extra, "problem": self.problem,
            "valid": self.exit_code == 0,
        }


def _local_log_id(directory: Path) -> str | None:
    for _, line in iter_lines(directory):
        e = json.loads(line)
        return str(e.get("log_id")) if isinstance(e, dict) and e.get("log_id") else None
    return None


def pg_verify(directory: Path, dsn: str, *, table: str = "checkrein_audit_events", shipped_seq: int | None = None) -> PgVerifyReport:
    """Compare the local chain in ``directory`` with its rows in Postgres, line for line.

    ``shipped_seq`` is the shipper's cursor (default: read from the directory): a row missing
    below it was deleted; at or above it, not shipped yet. Every row's ``line`` must equal the
    local line byte for byte, and its ``jsonb`` and filter columns must say the same as the line.
    """
    from .shipper import read_cursor

    if not directory.is_dir() or not list_segments(directory):
        return PgVerifyReport(None, problem=f"{directory}: no audit segments in this directory")
    log_id = _local_log_id(directory)
    if log_id is None:
        return PgVerifyReport(None, problem=f"{directory}: cannot tell which log this is (no genesis event)")
    if shipped_seq is None:
        cursor = read_cursor(directory)
        shipped_seq = cursor.seq if cursor is not None and cursor.log_id == log_id else 0
    report = PgVerifyReport(log_id)
    rows: dict[int, tuple[str, str, tuple[Any, ...]]] = {}
    cols = ", ".join(_COLUMNS[:-2])
    with connect(dsn) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT seq, line, event::text, {cols} FROM {table} WHERE log_id = %s", (log_id,))
        for seq, line, event, *rest in cur:
            rows[int(seq)] = (line, event, tuple(str(v) if v is not None else None for v in rest))
    report.rows = len(rows)
    for seq, line in iter_lines(directory):
        report.local_events += 1
        got = rows.pop(seq, None)
        if got is None:
            if seq < shipped_seq:
                report.missing.append(seq)
            else:
                report.unshipped += 1
            continue
        stored_line, stored_event, stored_cols = got
        text = line.decode("utf-8")
        expected = row_of(line)
        want_cols = tuple(str(v) if v is not None else None for v in (expected[0], log_id, *expected[2:-2]))
        if stored_line != text or json.loads(stored_event) != json.loads(text) or not _same_cols(stored_cols, want_cols):
            report.altered.append(seq)
    report.extra = sorted(rows)
    return report


def _same_cols(stored: tuple[Any, ...], want: tuple[Any, ...]) -> bool:
    """Filter columns as stored vs. as derived from the line (time and numbers compared as values)."""
    from datetime import datetime

    for i, (a, b) in enumerate(zip(stored, want, strict=True)):
        name = _COLUMNS[i]
        if a == b:
            continue
        if a is None or b is None:
            return False
        if name == "time":
            if datetime.fromisoformat(a) != datetime.fromisoformat(b.replace("Z", "+00:00")):
                return False
        elif name in ("seq", "duration_ms"):
            if float(a) != float(b):
                return False
        else:
            return False
    return True
