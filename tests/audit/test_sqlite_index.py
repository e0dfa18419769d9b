"""The index's schema over time: a file written before the web view's indexes gains them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from checkrein.audit.query import EventFilter, count_events
from checkrein.audit.sqlite_index import SqliteIndex

from .helpers import make_record, write_log


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
        rows = list(index._db.execute("SELECT * FROM events ORDER BY seq"))
        top = rows[-1][0]
        changed = [(*rows[-1][:-2], "f" * 64, rows[-1][-1]), (top + 1, *rows[-1][1:])]
        index.insert(changed)
        got = list(index._db.execute("SELECT seq, hash FROM events WHERE seq >= ? ORDER BY seq", (top,)))
    finally:
        index.close()
    assert got == [(top, "f" * 64), (top + 1, rows[-1][-2])]
