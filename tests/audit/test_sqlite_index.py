"""The index's schema over time: a file written before the web view's indexes gains them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from checkrein.audit.query import EventFilter, count_events

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
