"""The SQLite copy of the log: an index for queries, rebuilt from the JSONL chain at will.

One table ``events`` keyed by ``seq`` holding the columns queries filter on (time, session, trace,
tool, server, user, outcome, rule, duration) and where the event's line is: its segment, byte
offset and length. The line itself is read from the segment (`events_at`), never copied here: an
index written before (with a ``line`` column) is dropped and rebuilt from the segments when a
writer opens it. Only calls have an outcome and a duration, so the (outcome, rule) and (tool,
duration) indexes cover the web view's charts; its server and user filters have partial indexes
over calls (older `events_tool` / `events_outcome` indexes are replaced when a writer opens the
file). WAL mode; ``synchronous=NORMAL`` because the JSONL segments, not this file, are what must
survive a crash.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .segments import INDEX_FILE, iter_located_lines, iter_located_lines_at, lock_directory, segment_name

__all__ = [
    "INDEX_COLUMNS", "SERVER_EXPR", "USER_EXPR", "Fields", "IndexMismatch", "IndexWorker", "Row", "SqliteIndex", "events_at",
    "rebuild_index", "row_for", "row_from_line",
]

log = logging.getLogger("checkrein.audit")

Fields = tuple[int, str, str, str | None, str | None, str | None, str | None, str | None, str | None, str | None,
               str | None, float | None, str]
"""An event's indexed columns, ``seq`` to ``hash`` (`row_for`)."""
Row = tuple[int, str, str, str | None, str | None, str | None, str | None, str | None, str | None, str | None,
            str | None, float | None, str, int, int, int]
"""`Fields` plus where the line is: segment index, byte offset, length without the newline."""

SERVER_EXPR = "server"
USER_EXPR = "identity_user"
"""The server and user columns: a query must spell them (with ``type = 'call'``) for SQLite to use
their partial indexes."""

INDEX_COLUMNS = (
    "seq", "type", "time", "session_id", "trace_id", "tool", "exposed_name", "server", "identity_user", "outcome",
    "rule_id", "duration_ms", "hash", "segment", "offset", "length",
)
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY,
    type TEXT NOT NULL,
    time TEXT NOT NULL,
    session_id TEXT,
    trace_id TEXT,
    tool TEXT,
    exposed_name TEXT,
    server TEXT,
    identity_user TEXT,
    outcome TEXT,
    rule_id TEXT,
    duration_ms REAL,
    hash TEXT NOT NULL,
    segment INTEGER NOT NULL,
    offset INTEGER NOT NULL,
    length INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS events_time ON events(time);
CREATE INDEX IF NOT EXISTS events_session ON events(session_id);
CREATE INDEX IF NOT EXISTS events_trace ON events(trace_id);
DROP INDEX IF EXISTS events_tool;
DROP INDEX IF EXISTS events_outcome;
CREATE INDEX IF NOT EXISTS events_tool_duration ON events(exposed_name, duration_ms);
CREATE INDEX IF NOT EXISTS events_outcome_rule ON events(outcome, rule_id);
CREATE INDEX IF NOT EXISTS events_call_server ON events({SERVER_EXPR}) WHERE type = 'call';
CREATE INDEX IF NOT EXISTS events_call_user ON events({USER_EXPR}) WHERE type = 'call';
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_VALUES = "VALUES (" + ",".join("?" * len(INDEX_COLUMNS)) + ")"
_INSERT = "INSERT INTO events " + _VALUES
_REPLACE = "INSERT OR REPLACE INTO events " + _VALUES
"""`_INSERT` is the hot path: ``OR REPLACE`` costs SQLite a slower insert into every index (37 vs 16 µs
per row measured, docs/performance.md), so it runs only for a batch that meets a row already there."""


class IndexMismatch(sqlite3.DatabaseError):
    """The index points at bytes of a segment that are not the event it names (stale or damaged:
    `checkrein audit reindex` rebuilds it). A ``sqlite3.Error``, so readers fall back to the log."""


def row_for(body: dict[str, Any], seq: int, hash_hex: str) -> Fields:
    """The indexed columns of one event."""
    if body.get("type") == "call":
        decision = body.get("decision")
        rule = decision.get("rule_id") if isinstance(decision, dict) else None
        ident = body.get("identity")
        user = ident.get("user") if isinstance(ident, dict) else None
        return (
            seq, "call", body["time"], body.get("session_id"), body.get("trace_id"), body.get("tool"),
            body.get("exposed_name"), body.get("server"), user, body.get("outcome"), rule, body.get("duration_ms"),
            hash_hex,
        )
    name = body.get("event") if body.get("type") == "lifecycle" else None
    return (seq, str(body.get("type")), str(body.get("time")), None, None, None, name, None, None, None, None, None,
            hash_hex)


def row_from_line(seq: int, segment: int, offset: int, line: bytes) -> Row:
    """The index row of the line at ``offset`` of segment ``segment`` (without its newline)."""
    body = json.loads(line)
    return (*row_for(body, seq, str(body.get("hash"))), segment, offset, len(line))


def events_at(directory: Path, places: Iterable[tuple[int, int, int, int]]) -> list[dict[str, Any]]:
    """The events at (seq, segment, offset, length) places the index gave, in that order, read
    from the segments. Raises `IndexMismatch` when a place does not hold the event with its seq."""
    fds: dict[int, int] = {}
    out: list[dict[str, Any]] = []
    try:
        for seq, segment, offset, length in places:
            fd = fds.get(segment)
            if fd is None:
                fd = fds[segment] = os.open(directory / segment_name(segment), os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            data = os.pread(fd, length + 1, offset)
            if len(data) != length + 1 or data[-1:] != b"\n":
                raise IndexMismatch(f"{INDEX_FILE}: no line of {length} bytes at {segment_name(segment)}:{offset}")
            event = json.loads(data)
            if not isinstance(event, dict) or event.get("seq") != seq:
                raise IndexMismatch(f"{INDEX_FILE}: seq {seq} is not at {segment_name(segment)}:{offset}")
            out.append(event)
    except (OSError, ValueError) as exc:
        raise IndexMismatch(f"{INDEX_FILE}: cannot read an indexed line: {exc}") from None
    finally:
        for fd in fds.values():
            os.close(fd)
    return out


class SqliteIndex:
    """Owned by one thread at a time (the trail's writer). Methods raise ``sqlite3.Error``."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / INDEX_FILE
        # Created 0600 before SQLite opens it: its -wal and -shm files copy the database's mode.
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        columns = tuple(r[1] for r in self._db.execute("PRAGMA table_info(events)"))
        if columns and columns != INDEX_COLUMNS:
            # Written by an older version (the line stored in the row): the index is derived, so
            # it is rebuilt from the segments (`catch_up` refills the empty table).
            log.warning("audit index %s has an older schema: rebuilding it from the segments", self.path)
            self._db.execute("DROP TABLE events")
        self._db.executescript(_SCHEMA)

    def log_id(self) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key='log_id'").fetchone()
        return str(row[0]) if row else None

    def max_seq(self) -> int:
        row = self._db.execute("SELECT MAX(seq) FROM events").fetchone()
        return -1 if row is None or row[0] is None else int(row[0])

    def insert(self, rows: Sequence[Row]) -> None:
        """All rows in one transaction; a row whose seq is already indexed replaces it."""
        try:
            self._insert(_INSERT, rows)
        except sqlite3.IntegrityError:
            self._insert(_REPLACE, rows)

    def _insert(self, sql: str, rows: Sequence[Row]) -> None:
        db = self._db
        db.execute("BEGIN")
        try:
            db.executemany(sql, rows)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def catch_up(self, directory: Path, log_id: str | None, next_seq: int) -> int:
        """Make the index agree with the JSONL chain of ``next_seq`` events: drop rows past it (a
        crash can only leave the index behind, but be sure) and add missing ones. Returns the
        number of rows added."""
        db = self._db
        if log_id is not None and self.log_id() not in (None, log_id):
            db.execute("DELETE FROM events")
        db.execute("DELETE FROM events WHERE seq >= ?", (next_seq,))
        if log_id is not None:
            db.execute("INSERT OR REPLACE INTO meta VALUES ('log_id', ?)", (log_id,))
        start = self.max_seq() + 1
        added = 0
        batch: list[Row] = []
        for seq, segment, offset, line in iter_located_lines(directory, start):
            if seq >= next_seq:
                break
            batch.append(row_from_line(seq, segment, offset, line))
            if len(batch) >= 5000:
                self.insert(batch)
                added += len(batch)
                batch = []
        if batch:
            self.insert(batch)
            added += len(batch)
        return added

    def set_log_id(self, log_id: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta VALUES ('log_id', ?)", (log_id,))

    def close(self) -> None:
        self._db.close()


def rebuild_index(directory: Path) -> int:
    """Delete and rebuild ``index.sqlite`` from the segments; returns the number of events indexed.
    Refuses while a writer has the log open (``AuditError``). Raises ``OSError``/``sqlite3.Error``/
    ``ValueError`` for unreadable input."""
    lock_fd = lock_directory(directory)
    try:
        return _rebuild_locked(directory)
    finally:
        os.close(lock_fd)


def _rebuild_locked(directory: Path) -> int:
    for suffix in ("", "-wal", "-shm"):
        (directory / (INDEX_FILE + suffix)).unlink(missing_ok=True)
    index = SqliteIndex(directory)
    try:
        log_id: str | None = None
        count = 0
        for count, (_, _, _, line) in enumerate(iter_located_lines(directory), start=1):
            if count == 1:
                first = json.loads(line)
                log_id = first.get("log_id") if isinstance(first, dict) else None
        return index.catch_up(directory, log_id, count) if count else 0
    finally:
        index.close()


def iter_rows(directory: Path, sql: str, params: Iterable[Any]) -> list[tuple[Any, ...]]:
    """Read-only query helper for `query`/`stats`."""
    db = sqlite3.connect(f"file:{directory / INDEX_FILE}?mode=ro", uri=True)
    try:
        return list(db.execute(sql, tuple(params)))
    finally:
        db.close()


class IndexWorker(threading.Thread):
    """Inserts rows into the index on its own thread, so SQLite's C work overlaps the writer's
    Python work on a second core. Failures are counted (``sqlite_errors``) and the rows kept in a
    bounded backlog (rows dropped from a full one are read back from the segments once inserts
    work again; a gap still open when the trail closes is what `audit verify` reports and `audit
    reindex` repairs); calls are never denied for the index (it is derived)."""

    BACKLOG_MAX = 100_000
    RETRY_S = 1.0
    RETRY_MAX_S = 30.0
    """After a failed insert the rows kept (and any new ones) are tried again after `RETRY_S`, new
    rows or not (the last events before a quiet spell would otherwise stay out of the index until
    the next one), the wait doubling with each failure up to `RETRY_MAX_S`. The first failure of a
    spell is logged as a warning, and its end."""
    GATHER_ROWS = 512
    """A transaction of this many rows costs ~12 µs CPU per row, one of a single row ~80 (seven
    indexes; docs/performance.md): fewer rows than this wait up to `gather_s` for more."""

    FILL_ROWS = 5000
    """Rows per transaction when the rows dropped from a full backlog are read back from the log."""

    def __init__(self, index: SqliteIndex, counters: dict[str, int], *, gather_s: float = 0.05) -> None:
        super().__init__(name="checkrein-audit-index", daemon=True)
        self._index = index
        self._c = counters
        self._batches: collections.deque[list[Row]] = collections.deque()
        self._wake = threading.Event()
        self._stop_wake = threading.Event()
        self._stopping = False
        self._behind: list[Row] = []
        self._gather_s = gather_s
        self._retry_s = self.RETRY_S
        self._failures = 0
        """Failed inserts since the last one that worked."""
        self._gap: tuple[int, int, int, int] | None = None
        """Rows dropped from the backlog, read back from the segments once the index takes rows
        again (so a long failure leaves no hole in it): the first one's seq, segment and offset,
        and the last one's seq. Moves on with each transaction of the read-back."""

    def close_unstarted(self) -> None:
        try:
            self._index.close()
        except sqlite3.Error as exc:
            log.warning("closing audit index failed: %s", exc)

    def submit(self, rows: list[Row]) -> None:
        self._batches.append(rows)
        self._wake.set()

    def stop(self) -> None:
        self._stopping = True
        self._stop_wake.set()
        self._wake.set()

    def run(self) -> None:
        try:
            while True:
                if (self._behind or self._gap is not None) and not self._stopping:
                    # Failing: the next try waits its turn, whatever arrives meanwhile (closing does not).
                    self._stop_wake.wait(self._retry_s)
                else:
                    self._wake.wait()
                    if self._gather_s > 0 and not self._stopping and self._queued() < self.GATHER_ROWS:
                        # A trickle (sequential callers): gather rows for one larger transaction.
                        # The index lags the log by at most this long; closing does not wait.
                        self._stop_wake.wait(self._gather_s)
                self._wake.clear()
                rows: list[Row] = self._behind
                while self._batches:
                    rows.extend(self._batches.popleft())
                if rows:
                    self._insert(rows)
                if self._gap is not None and not self._behind and not self._stopping:
                    self._fill_gap()
                if self._stopping and not self._batches:
                    if self._gap is not None:
                        log.warning("audit index closed without seqs %d-%d (dropped from its backlog): run `checkrein "
                                    "audit reindex %s` while no gateway writes the log", self._gap[0], self._gap[3],
                                    self._index.path.parent)
                    return
        finally:
            try:
                self._index.close()
            except sqlite3.Error as exc:
                log.warning("closing audit index failed: %s", exc)

    def _queued(self) -> int:
        return len(self._behind) + sum(len(b) for b in list(self._batches))

    def _insert(self, rows: list[Row]) -> None:
        try:
            self._index.insert(rows)
            self._behind = []
            self._worked()
        except sqlite3.Error as exc:
            self._failed("write", exc)
            if len(rows) > self.BACKLOG_MAX:
                dropped, last = rows[0], rows[-self.BACKLOG_MAX - 1][0]
                if self._gap is None:
                    self._gap = (dropped[0], dropped[13], dropped[14], last)
                    log.warning("audit index backlog full: rows from seq %d on will be read back from the log", dropped[0])
                else:  # the rows dropped before these are still to read back: the gap grows at its end
                    self._gap = (*self._gap[:3], max(self._gap[3], last))
            self._behind = rows[-self.BACKLOG_MAX :]
            if self._stopping:
                return
        self._c["sqlite_rows_behind"] = len(self._behind)

    def _failed(self, what: str, exc: BaseException) -> None:
        """Counted every time, a warning for the first failure of a spell, a doubling wait after."""
        self._c["sqlite_errors"] += 1
        self._failures += 1
        if self._failures == 1:
            log.warning("audit index %s failed: %s (retrying, at most %.0f s apart)", what, exc, self.RETRY_MAX_S)
        else:
            log.debug("audit index %s failed again (%d): %s", what, self._failures, exc)
            self._retry_s = min(2 * self._retry_s, self.RETRY_MAX_S)

    def _worked(self) -> None:
        """A spell of failures ends once nothing is behind any more (no backlog, no gap)."""
        if self._behind or self._gap is not None:
            return
        if self._failures:
            log.warning("audit index writes resumed after %d failed", self._failures)
        self._failures, self._retry_s = 0, self.RETRY_S

    def _fill_gap(self) -> None:
        """Index the rows dropped from the backlog, read from the segments where the first of them
        starts, a transaction at a time (the gap moves on after each; closing stops between two);
        on a failure the rest waits for the next try."""
        assert self._gap is not None
        seq, segment, offset, last = self._gap
        batch: list[Row] = []
        try:
            for located in iter_located_lines_at(self._index.path.parent, seq, segment, offset):
                if located[0] > last:
                    break
                batch.append(row_from_line(*located))
                if len(batch) >= self.FILL_ROWS or located[0] == last:
                    self._index.insert(batch)
                    end = batch[-1]
                    self._gap = (end[0] + 1, end[13], end[14] + end[15] + 1, last)
                    batch = []
                    if self._stopping:
                        return
            if self._gap[0] <= last:
                raise ValueError(f"the log ends before seq {last}")
        except Exception as exc:  # noqa: BLE001 - a damaged segment must not end the index thread: counted, logged, retried
            self._failed(f"read-back of seqs {self._gap[0]}-{last}", exc)
            return
        log.warning("audit index: the rows dropped from its backlog, up to seq %d, are read back from the log", last)
        self._gap = None
        self._worked()
