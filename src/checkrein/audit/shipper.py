"""`PostgresShipper`: a thread that ships the local log to Postgres, at least once, never blocking
a call.

The local JSONL segments ARE the queue: the shipper reads lines the writer has synced, from a
persisted cursor (``postgres.cursor``: log id, segment, byte offset, seq), inserts them in
batches (one transaction each, ``ON CONFLICT DO NOTHING`` on ``event_id``), and only then moves
and saves the cursor. A crash between commit and save ships a batch twice, which leaves one
row. While Postgres is down the cursor stays put, the lines wait on disk, and the shipper retries
every ``retry_interval_s``; calls never wait for it. Lag (events and milliseconds behind the
writer) and errors are counters the metrics registry reads; an outage and its end are recorded
in the local chain (``audit.postgres_unavailable``, ``audit.postgres_resumed``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from checkrein.config.fleet import PostgresAuditSettings
from checkrein.errors import CheckreinError

from .segments import list_segments, replace_durably, segment_name

__all__ = ["CURSOR_FILE", "Cursor", "PostgresShipper", "SHIPPER_GAUGES", "read_cursor"]

log = logging.getLogger("checkrein.audit")

CURSOR_FILE = "postgres.cursor"

SHIPPER_GAUGES = ("postgres_lag_events", "postgres_lag_ms", "postgres_connected")

Synced = Callable[[], tuple[int, int, int]]
"""The writer's synced position: (segment index, bytes synced in it, next seq)."""

Notify = Callable[[str, dict[str, Any]], None]
"""Records a lifecycle event in the local chain (queued; never blocks)."""


@dataclass(frozen=True)
class Cursor:
    log_id: str
    segment: int
    offset: int
    seq: int
    """Seq of the next line to ship (everything before it is in Postgres)."""


def read_cursor(directory: Path) -> Cursor | None:
    """The persisted cursor, or None when there is none (or it is unreadable: then ship from 0)."""
    try:
        raw = json.loads((directory / CURSOR_FILE).read_text(encoding="utf-8"))
        return Cursor(str(raw["log_id"]), int(raw["segment"]), int(raw["offset"]), int(raw["seq"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_cursor(directory: Path, cursor: Cursor) -> None:
    replace_durably(directory / CURSOR_FILE, json.dumps(asdict(cursor), sort_keys=True).encode())


class PostgresShipper(threading.Thread):
    def __init__(
        self,
        settings: PostgresAuditSettings,
        directory: Path,
        log_id: str,
        synced: Synced,
        *,
        notify: Notify | None = None,
        close_timeout_s: float = 5.0,
    ) -> None:
        super().__init__(name="checkrein-audit-postgres", daemon=True)
        self.settings = settings
        self.directory = directory
        self.log_id = log_id
        self._synced = synced
        self._notify = notify
        self._close_timeout = close_timeout_s
        self._stop_requested = False
        self._wake = threading.Event()
        self._conn: Any = None
        self._failing_since: float | None = None
        self._last_error = ""
        self._pending_since: float | None = None
        self.counters: dict[str, int] = {
            "postgres_shipped": 0, "postgres_duplicates": 0, "postgres_batches": 0, "postgres_errors": 0,
            "postgres_bad_lines": 0, "postgres_outages": 0,
        }
        cursor = read_cursor(directory)
        if cursor is None or cursor.log_id != log_id or not self._valid(cursor):
            cursor = Cursor(log_id, list_segments(directory)[0][0] if list_segments(directory) else 1, 0, 0)
        self.cursor = cursor

    # -- the outside -------------------------------------------------------------------------

    def stats(self) -> dict[str, int]:
        """Counters plus lag (for the metrics registry, via the trail's counters)."""
        out = dict(self.counters)
        behind = max(0, self._synced()[2] - self.cursor.seq)
        out["postgres_lag_events"] = behind
        now = time.monotonic()
        if behind == 0:
            self._pending_since = None
        elif self._pending_since is None:
            self._pending_since = now
        out["postgres_lag_ms"] = int((now - self._pending_since) * 1000) if self._pending_since is not None else 0
        out["postgres_connected"] = int(self._conn is not None and self._failing_since is None)
        return out

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        """Ship what is synced (bounded by ``close_timeout_s`` while Postgres fails), then stop."""
        self._stop_requested = True
        self._wake.set()
        self.join(self._close_timeout + self.settings.retry_interval_s + 10)

    # -- the thread --------------------------------------------------------------------------

    def run(self) -> None:
        deadline: float | None = None
        try:
            while True:
                shipped = self._step()
                if self._stop_requested:
                    caught_up = self.cursor.seq >= self._synced()[2]
                    if caught_up:
                        return
                    deadline = deadline if deadline is not None else time.monotonic() + self._close_timeout
                    if time.monotonic() >= deadline:
                        log.warning("postgres shipper stopping %d events behind (shipped on next start)",
                                    self._synced()[2] - self.cursor.seq)
                        return
                if not shipped:
                    wait = self.settings.retry_interval_s if self._failing_since is not None else self.settings.poll_interval_s
                    self._wake.wait(min(wait, 0.05) if self._stop_requested else wait)
                    self._wake.clear()
        finally:
            self._close()

    def _step(self) -> bool:
        """Ship one batch; True when something was shipped."""
        lines, nxt = self._read_batch()
        if not lines:
            return False
        from .postgres import insert_lines, valid_lines

        rows, bad = valid_lines(lines)
        try:
            if self._conn is None:
                self._open()
            new = insert_lines(self._conn, self.settings.table, self.log_id, rows)
        except Exception as exc:  # noqa: BLE001 - any failure: keep the lines on disk, retry later
            self._failed(exc)
            return False
        if self._failing_since is not None:
            # Queued before the cursor moves, so nobody sees "caught up" before this event exists.
            outage = time.monotonic() - self._failing_since
            self._failing_since = None
            log.warning("postgres reachable again after %.1f s", outage)
            self._record("audit.postgres_resumed", {"outage_s": round(outage, 3), "error": self._last_error})
        self.cursor = nxt
        try:
            _write_cursor(self.directory, nxt)
        except OSError as exc:  # the rows are in; a lost cursor only re-ships (idempotent)
            log.warning("cannot save the postgres cursor: %s", exc)
        c = self.counters
        c["postgres_shipped"] += len(rows)
        c["postgres_duplicates"] += len(rows) - new
        c["postgres_bad_lines"] += bad  # `audit verify` reports those lines locally
        c["postgres_batches"] += 1
        return True

    def _open(self) -> None:
        from .postgres import connect, ensure_schema

        conn = connect(self.settings.dsn)
        try:
            ensure_schema(conn, self.settings.table)
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    def _failed(self, exc: Exception) -> None:
        self.counters["postgres_errors"] += 1
        self._last_error = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        if isinstance(exc, CheckreinError):
            self._last_error = exc.message
        self._close()
        if self._failing_since is None:
            self._failing_since = time.monotonic()
            self.counters["postgres_outages"] += 1
            log.error("postgres audit sink unavailable (events wait on disk): %s", self._last_error)
            self._record("audit.postgres_unavailable", {"error": self._last_error, "behind_seq": self.cursor.seq})

    def _record(self, event: str, fields: dict[str, Any]) -> None:
        if self._notify is not None:
            try:
                self._notify(event, fields)
            except Exception:
                log.warning("could not record %s", event, exc_info=True)

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:
                log.debug("closing the postgres connection failed", exc_info=True)

    # -- reading the local log ---------------------------------------------------------------

    def _valid(self, cursor: Cursor) -> bool:
        path = self.directory / segment_name(cursor.segment)
        try:
            if cursor.offset == 0:
                return path.exists() or cursor.seq == 0
            with path.open("rb") as f:
                f.seek(cursor.offset - 1)
                return f.read(1) == b"\n"
        except OSError:
            return False

    def _read_batch(self) -> tuple[list[bytes], Cursor]:
        """Up to ``batch_max`` complete, synced lines from the cursor on, and the cursor after them."""
        cur = self.cursor
        seg_synced, size_synced, _ = self._synced()
        limit = self.settings.batch_max
        lines: list[bytes] = []
        segment, offset, seq = cur.segment, cur.offset, cur.seq
        while len(lines) < limit:
            path = self.directory / segment_name(segment)
            end: int | None = size_synced if segment == seg_synced else None
            if segment > seg_synced:
                break
            try:
                with path.open("rb") as f:
                    f.seek(offset)
                    budget = (end - offset) if end is not None else -1
                    if budget == 0:
                        data = b""
                    else:
                        data = f.read(budget if budget > 0 else -1)
            except FileNotFoundError:
                data = b""
            except OSError as exc:
                log.warning("cannot read %s: %s", path, exc)
                break
            usable = data[: data.rfind(b"\n") + 1] if data else b""
            for raw in usable.splitlines(keepends=True):
                if len(lines) >= limit:
                    break
                lines.append(raw[:-1])
                offset += len(raw)
                seq += 1
            if len(lines) >= limit:
                break
            if segment < seg_synced:
                segment, offset = segment + 1, 0  # that segment is complete: go on with the next
                continue
            break
        return lines, Cursor(self.log_id, segment, offset, seq)
