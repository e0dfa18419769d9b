"""The index's schema over time: a file written before the web view's indexes gains them."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import anyio
import pytest

from checkrein.audit import open_audit_trail
from checkrein.audit.query import EventFilter, count_events, query_events
from checkrein.audit.sqlite_index import INDEX_COLUMNS, IndexMismatch, SqliteIndex, events_at
from checkrein.audit.verify import verify_log

from .helpers import make_record, read_lines, settings, write_log


def _indexes(d: Path) -> set[str]:
    db = sqlite3.connect(d / "index.sqlite")
    try:
        return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    finally:
        db.close()


def test_an_older_index_file_is_migrated_when_a_writer_opens_it(tmp_path: Path) -> None:
    """The pre-0.2 single-column tool/outcome indexes are replaced, and the call indexes added."""
    d = tmp_path / "audit"
    write_log(d, [make_record(i) for i in range(5)])
    db = sqlite3.connect(d / "index.sqlite")
    db.executescript(
        "DROP INDEX events_tool_duration; DROP INDEX events_outcome_rule; DROP INDEX events_call_server;"
        "DROP INDEX events_call_user; CREATE INDEX events_tool ON events(exposed_name);"
        "CREATE INDEX events_outcome ON events(outcome);"
    )
    db.close()
    write_log(d, [make_record(i) for i in range(5, 8)])
    names = _indexes(d)
    assert {"events_tool_duration", "events_outcome_rule", "events_call_server", "events_call_user"} <= names
    assert not {"events_tool", "events_outcome"} & names
    assert count_events(d, EventFilter(server="fs")) == 8


def test_a_batch_meeting_rows_already_indexed_replaces_them(tmp_path: Path) -> None:
    """The plain insert refuses a seq already there; the batch is then written with replace, whole."""
    d = tmp_path / "audit"
    write_log(d, [make_record(i) for i in range(3)])
    index = SqliteIndex(d)
    try:
        last = list(index._db.execute(f"SELECT {', '.join(INDEX_COLUMNS)} FROM events ORDER BY seq DESC LIMIT 1"))[0]
        top, h = last[0], INDEX_COLUMNS.index("hash")
        changed = [(*last[:h], "f" * 64, *last[h + 1 :]), (top + 1, *last[1:])]
        index.insert(changed)
        got = list(index._db.execute("SELECT seq, hash FROM events WHERE seq >= ? ORDER BY seq", (top,)))
    finally:
        index.close()
    assert got == [(top, "f" * 64), (top + 1, last[h])]


_OLD_SCHEMA = """
CREATE TABLE events (seq INTEGER PRIMARY KEY, type TEXT NOT NULL, time TEXT NOT NULL, session_id TEXT, trace_id TEXT,
    tool TEXT, exposed_name TEXT, outcome TEXT, rule_id TEXT, duration_ms REAL, hash TEXT NOT NULL, line TEXT NOT NULL);
CREATE INDEX events_time ON events(time);
CREATE INDEX events_call_server ON events(json_extract(line, '$.server')) WHERE type = 'call';
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def _old_index(d: Path) -> None:
    """Replace the index by one of the schema that stored each line (as versions before 0.3 wrote)."""
    for f in d.glob("index.sqlite*"):
        f.unlink()
    db = sqlite3.connect(d / "index.sqlite")
    db.executescript(_OLD_SCHEMA)
    for line in read_lines(d):
        e = json.loads(line)
        db.execute("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", (
            e["seq"], e["type"], e["time"], e.get("session_id"), e.get("trace_id"), e.get("tool"), e.get("exposed_name"),
            e.get("outcome"), (e.get("decision") or {}).get("rule_id"), e.get("duration_ms"), e["hash"],
            line.decode().rstrip("\n")))
    db.commit()
    db.close()


def test_an_index_that_stored_lines_still_queries_and_is_rebuilt_by_a_writer(tmp_path: Path) -> None:
    """Before a writer opens it, queries read the log and verify says the index is old; a writer
    rebuilds it in the current schema, with every event, and verify checks it again."""
    d = tmp_path / "audit"
    write_log(d, [make_record(i) for i in range(6)])
    expected = query_events(d, EventFilter(calls_only=True))
    _old_index(d)
    assert query_events(d, EventFilter(calls_only=True)) == expected
    assert count_events(d, EventFilter(server="fs")) == 6
    report = verify_log(d)
    assert report.exit_code == 0 and report.index == "stale" and any("older schema" in w for w in report.warnings)
    write_log(d, [make_record(i) for i in range(6, 9)])
    db = sqlite3.connect(d / "index.sqlite")
    try:
        columns = tuple(r[1] for r in db.execute("PRAGMA table_info(events)"))
        n = db.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    finally:
        db.close()
    assert columns == INDEX_COLUMNS and n == len(read_lines(d))
    assert query_events(d, EventFilter(calls_only=True))[:6] == expected
    report = verify_log(d)
    assert report.exit_code == 0 and report.index == "ok" and report.sqlite_checked


def test_index_rows_point_at_their_lines_across_segments(tmp_path: Path) -> None:
    """Every row's segment, offset and length address exactly its line, in every segment."""
    d = tmp_path / "audit"
    write_log(d, [make_record(i, arguments={"pad": "x" * 300, "i": i}) for i in range(40)],
              segment_max_bytes=4096, batch_max=4)
    assert len(list(d.glob("segment-*.jsonl"))) > 2
    db = sqlite3.connect(d / "index.sqlite")
    try:
        places = list(db.execute("SELECT seq, segment, offset, length FROM events ORDER BY seq"))
    finally:
        db.close()
    assert events_at(d, places) == [json.loads(x) for x in read_lines(d)]
    assert verify_log(d).index == "ok"


def test_an_index_pointing_at_the_wrong_bytes_is_caught(tmp_path: Path) -> None:
    """A row moved off its line: queries fall back to the log (same answer), verify names the seq."""
    d = tmp_path / "audit"
    write_log(d, [make_record(i) for i in range(8)])
    expected = query_events(d, EventFilter(calls_only=True))
    db = sqlite3.connect(d / "index.sqlite")
    db.execute("UPDATE events SET offset = offset + 1 WHERE seq = 3")
    db.commit()
    db.close()
    with pytest.raises(IndexMismatch):
        events_at(d, [(3, *sqlite3.connect(d / "index.sqlite").execute(
            "SELECT segment, offset, length FROM events WHERE seq = 3").fetchone())])
    assert query_events(d, EventFilter(calls_only=True)) == expected
    report = verify_log(d)
    assert report.exit_code == 1 and report.problem is not None and report.problem.seq == 3


def test_a_trickle_of_events_reaches_the_index_without_closing(tmp_path: Path) -> None:
    """Sequential durable events are gathered into larger transactions, yet each reaches the index
    while the trail stays open (bounded wait on the row count), and closing does not wait."""
    d = tmp_path / "audit"

    async def run() -> int:
        trail = open_audit_trail(settings(d, durability="durable"), tmp_path)
        for i in range(5):
            await trail.record_call(make_record(i))
        with anyio.fail_after(20):
            while True:
                try:
                    n = count_events(d, EventFilter(calls_only=True))
                except sqlite3.Error:
                    n = 0
                if n == 5:
                    break
                await anyio.sleep(0.01)
        await trail.record_call(make_record(5))
        await trail.aclose()
        return int(count_events(d, EventFilter(calls_only=True)) or 0)

    assert anyio.run(run) == 6
