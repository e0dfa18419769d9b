"""The one writer: a thread that drains the queue in batches, chains, writes, syncs and indexes.

A thread rather than an anyio task because every step it takes blocks (write, fsync, SQLite), the
trail must be usable from synchronous code (`open_audit_trail` is not async), and
an event-loop task that hops to a worker thread per batch measured no faster (docs/performance.md).

Failure model: any ``OSError`` while opening, writing, syncing or truncating a segment puts the
writer in the *failing* state (`writable` False). The lines it had sealed stay pending, the file
is truncated back to the last synced size before each retry (so a torn or duplicate write never
survives), and the queue is not drained until the pending lines are on disk. When a write
succeeds again an ``audit.resumed`` event records the outage and what it cost.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from checkrein.errors import AuditError

from .chain import Chain
from .checkpoints import CheckpointPublisher
from .event import EventFactory
from .record import CallRecord, LifecycleRecord
from .schema import check_event
from .segments import LogFile, LogOpener, fsync_dir, segment_name
from .sqlite_index import Fields, IndexWorker, Row, SqliteIndex, row_for

__all__ = ["Waiter", "Writer"]

log = logging.getLogger("checkrein.audit")

Waiter = Callable[[BaseException | None], None]
"""Called from the writer thread once the item's line is synced (None) or failed (an error)."""

Item = tuple[CallRecord | LifecycleRecord | dict[str, Any], float, Waiter | None, tuple[str, ...]]

COUNTER_NAMES = (
    "events_queued", "events_written", "batches", "fsyncs", "bytes_written", "checkpoints",
    "segments_opened", "queue_max_seen", "dropped", "rejected_unwritable", "failed_open",
    "write_errors", "sqlite_errors", "sqlite_rows_behind", "event_build_errors",
    "secret_finder_failures", "recoveries", "recovered_cut_bytes",
)


class Writer(threading.Thread):
    def __init__(
        self,
        *,
        directory: Path,
        chain: Chain,
        factory: EventFactory,
        opener: LogOpener,
        file: LogFile | None,
        segment_index: int,
        segment_size: int,
        index: SqliteIndex | None,
        clock: Callable[[], float],
        counters: dict[str, int],
        checkpoint_every: int,
        checkpoint_interval_s: float,
        segment_max_bytes: int,
        batch_max: int,
        retry_interval_s: float,
        close_timeout_s: float,
        first_bodies: list[dict[str, Any]],
        on_writable: Callable[[bool], None],
        lock_fd: int | None = None,
        publisher: CheckpointPublisher | None = None,
        group_commit_s: float = 0.0,
        batch_window_s: float = 0.0,
    ) -> None:
        super().__init__(name="checkrein-audit-writer", daemon=True)
        self.queue: collections.deque[Item] = collections.deque()
        self.wake = threading.Event()
        self.stop_wake = threading.Event()
        """Set by `request_stop`; while failing the writer sleeps on this, not on `wake`, so a stream
        of callers cannot turn the retry interval into a busy loop."""
        self.stop_requested = False
        self.stopped = threading.Event()
        self._dir = directory
        self._chain = chain
        self._factory = factory
        self._opener = opener
        self._file = file
        self._segment = segment_index
        self._good_size = segment_size
        self._dirty = False
        self._index = IndexWorker(index, counters) if index is not None else None
        self._clock = clock
        self._c = counters
        self._every = checkpoint_every
        self._interval = checkpoint_interval_s
        self._segment_max = segment_max_bytes
        self._batch_max = batch_max
        self._group_s = group_commit_s
        self._batch_s = batch_window_s
        """Batch mode's window (0 in durable mode): counted from the queue time of the oldest
        event, so an event waits at most this long before its batch is written and synced."""
        self._last_waiters = 0
        """Durable callers acknowledged by the last fsync (more than one: they are concurrent)."""
        self._retry = retry_interval_s
        self._close_timeout = close_timeout_s
        self._on_writable = on_writable
        self._lock_fd = lock_fd
        self._pending: list[bytes] = []
        self._pending_rows: list[Fields] = []
        """The index columns of each pending line (when indexing); where it lands is known once written."""
        self._pending_waiters: list[Waiter] = []
        self._publisher = publisher
        self._pending_checkpoints: list[tuple[int, bytes]] = []
        self._failing = False
        self._failed_since = 0.0
        self._last_error = ""
        self._outage_base: dict[str, int] = {}
        self._next_timer = clock() + checkpoint_interval_s
        self._synced_seq = chain.next_seq
        self.synced: tuple[int, int, int] = (segment_index, segment_size, chain.next_seq)
        """(segment index, bytes synced in it, next seq on disk): how far a reader (the Postgres
        shipper) may read. Replaced as one tuple, so another thread never sees half of it."""
        for body in first_bodies:
            self._seal(body)

    def request_stop(self) -> None:
        self.stop_requested = True
        self.stop_wake.set()
        self.wake.set()

    # --- thread body ------------------------------------------------------------------------------

    def start(self) -> None:
        if self._index is not None:
            self._index.start()
        super().start()

    def run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # noqa: BLE001 - the writer must never die silently: fail closed, loudly
            log.error("audit writer stopped: %s", type(exc).__name__)
            self._failing = True
            self._on_writable(False)
            self._fail_waiters(exc)
            for _, _, waiter, _ in self._drain(len(self.queue)):
                if waiter is not None:
                    waiter(exc)
        finally:
            self._close_files()
            if self._lock_fd is not None:
                os.close(self._lock_fd)  # releases the writer lock, last
                self._lock_fd = None
            self.stopped.set()

    def _loop(self) -> None:
        deadline: float | None = None
        while True:
            if self._failing:
                timeout = self._retry
            else:
                timeout = max(0.0, self._next_timer - self._clock())
            if self._failing and self.stop_requested:
                time.sleep(min(self._retry, 0.05))  # closing: bounded by close_timeout_s below
            elif self._failing:
                self.stop_wake.wait(timeout)
            elif not self.queue and not self.stop_requested and not self._pending:
                self.wake.wait(timeout)
                self._gather()
            elif not self.stop_requested and not self._pending:
                self._gather_batch()  # events queued during the last write: batch mode gathers too
            self.wake.clear()
            if self._failing and not self._retry_write():
                if self.stop_requested:
                    now = self._clock()
                    deadline = deadline if deadline is not None else now + self._close_timeout
                    if now >= deadline:
                        lost = len(self._pending) + len(self.queue)
                        log.error("audit writer closing with %d events unwritten: %s", lost, self._last_error)
                        self._c["dropped"] += lost
                        return
                continue
            if self._good_size >= self._segment_max and not self._pending:
                if not self._rotate():
                    continue
            items = self._drain(self._batch_max)
            for payload, now, waiter, degraded in items:
                self._seal_record(payload, now, degraded)
                if waiter is not None:
                    self._pending_waiters.append(waiter)
                if self._chain.since_checkpoint >= self._every:
                    self._seal(self._chain.checkpoint("count", self._clock()))
            now = self._clock()
            if now >= self._next_timer:
                self._seal(self._chain.checkpoint("timer", now))
            finishing = self.stop_requested and not self.queue
            if finishing:
                self._seal(self._chain.checkpoint("shutdown", now))
            if self._pending and not self._flush():
                continue
            if finishing:
                return

    def _gather(self) -> None:
        """Group commit: woken from idle by a first event, hold the batch open for the window
        (unless it is already full, or the trail is closing) so one fsync covers every event
        queued meanwhile. Events that queued while a batch was being written need no window.
        A durable caller whose last batch served no other waiter is alone: holding its fsync
        would only delay it, so its batch goes out at once."""
        q = self.queue
        if self._batch_s > 0:
            self._gather_batch()
            return
        if self._group_s <= 0 or not q or len(q) >= self._batch_max or self.stop_requested:
            return
        if q[0][2] is not None and self._last_waiters <= 1:
            return
        self.stop_wake.wait(self._group_s)

    def _gather_batch(self) -> None:
        """Batch mode (its callers were answered at queue time): hold the batch open until the
        oldest queued event is `batch_window_s` old, so one write + fsync (and one wake-up of the
        writer, and of the index thread) covers every event of that window instead of one each
        at call rate. Not when the batch is full or the trail is closing (`request_stop` sets
        `stop_wake`, which ends the wait at once). An event is thus written and synced within the
        window plus one write of a batch after it was queued."""
        q = self.queue
        if self._batch_s <= 0 or not q or len(q) >= self._batch_max or self.stop_requested:
            return
        left = self._batch_s - (self._clock() - q[0][1])
        if left > 0:
            self.stop_wake.wait(min(left, self._batch_s))

    def _drain(self, limit: int) -> list[Item]:
        q = self.queue
        items: list[Item] = []
        pop = q.popleft
        while q and len(items) < limit:
            items.append(pop())
        return items

    def _build(self, payload: CallRecord | LifecycleRecord | dict[str, Any], now: float, degraded: tuple[str, ...]) -> dict[str, Any]:
        if isinstance(payload, dict):
            return payload
        before = self._factory.finder_failures()
        try:
            if isinstance(payload, CallRecord):
                body = self._factory.call(payload, now, degraded)
            else:
                body = self._factory.lifecycle(payload, now, degraded)
        except Exception as exc:  # noqa: BLE001 - an unbuildable record still leaves a (value-free) event
            self._c["event_build_errors"] += 1
            if isinstance(payload, CallRecord):
                body = self._factory.fallback_call(payload, now, type(exc).__name__)
            else:
                body = EventFactory.lifecycle_body(
                    "audit.event_build_failed", {"error": type(exc).__name__}, now, degraded=["audit.event_build_failed"]
                )
        failures = self._factory.finder_failures() - before
        if failures:
            self._c["secret_finder_failures"] += failures
            body["degraded"].append("audit.secret_finder_failed")
        return body

    def _seal_record(self, payload: CallRecord | LifecycleRecord | dict[str, Any], now: float, degraded: tuple[str, ...]) -> None:
        body = self._build(payload, now, degraded)
        try:
            self._seal(body)
        except (TypeError, ValueError) as exc:
            # A value canonical JSON cannot hold slipped through: keep the event, without values.
            # (The chain advances only after a line renders, so nothing was half-sealed.)
            self._c["event_build_errors"] += 1
            if isinstance(payload, CallRecord):
                self._seal(self._factory.fallback_call(payload, now, type(exc).__name__))
            else:
                self._seal(EventFactory.lifecycle_body(
                    "audit.event_build_failed", {"error": type(exc).__name__}, now, degraded=["audit.event_build_failed"]))

    def _seal(self, body: dict[str, Any]) -> None:
        line, h, seq = self._chain.seal(body)
        if body["type"] != "call":
            # The rare event types are checked against the verifier's schema as they are written
            # (call events are built from the same field list and checked by the tests: the hot
            # path skips it). A failure is a writer bug: stop writing rather than log garbage.
            problem = check_event({**body, "hash": h})
            if problem is not None:
                raise AuditError(f"audit writer built an invalid {body['type']} event: {problem}", code="audit.internal")
        self._pending.append(line)
        if self._index is not None:
            self._pending_rows.append(row_for(body, seq, h))
        if body["type"] == "checkpoint":
            self._c["checkpoints"] += 1
            self._next_timer = self._clock() + self._interval
            if self._publisher is not None:
                self._pending_checkpoints.append((body["count"], bytes.fromhex(body["merkle_root"])))

    @property
    def last_error(self) -> str:
        return self._last_error

    def initial_flush(self) -> bool:
        """Open the current segment and write what the constructor sealed (genesis, recovery).
        Called once, before `start`, on the opening thread."""
        try:
            if self._file is None:
                self._file = self._opener(self._dir / segment_name(self._segment))
                self._good_size = self._file.size()
        except OSError as exc:
            self._enter_failing(exc)
            return False
        self.synced = (self._segment, self._good_size, self._synced_seq)
        return self._flush() if self._pending else True

    def close_files(self) -> None:
        self._close_files()

    # --- I/O --------------------------------------------------------------------------------------

    def _retry_write(self) -> bool:
        """One retry while failing: a rotation that could not open its file is retried first."""
        if not self._pending and self._good_size >= self._segment_max:
            if not self._rotate():
                return False
        return self._flush()

    def _flush(self) -> bool:
        """Write and sync every pending line; True on success. Never raises ``OSError``."""
        data = b"".join(self._pending)
        try:
            if self._file is None:
                self._file = self._opener(self._dir / segment_name(self._segment))
                self._good_size = self._file.size()
            if self._dirty:
                self._file.truncate(self._good_size)
                self._dirty = False
            self._dirty = True
            start = self._good_size
            self._file.write(data)
            self._file.sync()
            self._dirty = False
        except OSError as exc:
            self._enter_failing(exc)
            return False
        rows = self._located_rows(start)
        self._good_size += len(data)
        self._synced_seq += len(self._pending)
        self.synced = (self._segment, self._good_size, self._synced_seq)
        c = self._c
        c["events_written"] += len(self._pending)
        c["bytes_written"] += len(data)
        c["batches"] += 1
        c["fsyncs"] += 1
        self._pending = []
        waiters, self._pending_waiters = self._pending_waiters, []
        self._last_waiters = len(waiters)
        for waiter in waiters:
            waiter(None)
        if self._pending_checkpoints and self._publisher is not None:
            # Only now, with the checkpoint on disk, may anyone outside see it.
            published, self._pending_checkpoints = self._pending_checkpoints, []
            for size, root in published:
                self._publisher.submit(size, root)
        if rows and self._index is not None:
            self._index.submit(rows)
        if self._failing:
            self._leave_failing()
        return True

    def _located_rows(self, offset: int) -> list[Row]:
        """The index rows of the pending lines, just written at ``offset`` of the segment."""
        if self._index is None or not self._pending_rows:
            return []
        segment = self._segment
        rows: list[Row] = []
        append = rows.append
        for fields, line in zip(self._pending_rows, self._pending, strict=True):
            n = len(line)
            append((*fields, segment, offset, n - 1))
            offset += n
        self._pending_rows = []
        return rows

    def _rotate(self) -> bool:
        nxt = self._segment + 1
        try:
            new = self._opener(self._dir / segment_name(nxt))
            fsync_dir(self._dir)
        except OSError as exc:
            self._enter_failing(exc)
            return False
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:
                log.warning("closing audit segment failed: %s", exc.strerror)
        self._file, self._segment, self._good_size, self._dirty = new, nxt, 0, False
        self.synced = (nxt, 0, self._synced_seq)
        self._c["segments_opened"] += 1
        self._seal(self._chain.segment_link(nxt, self._clock()))
        return True

    def _enter_failing(self, exc: OSError) -> None:
        self._c["write_errors"] += 1
        self._last_error = f"{type(exc).__name__}: {exc.strerror or exc}"
        if not self._failing:
            self._failing = True
            self._failed_since = self._clock()
            self._outage_base = {k: self._c[k] for k in ("rejected_unwritable", "failed_open", "dropped")}
            log.error("audit log not writable, failing closed: %s", self._last_error)
            self._on_writable(False)
        self._fail_waiters(exc)

    def _fail_waiters(self, exc: BaseException) -> None:
        waiters, self._pending_waiters = self._pending_waiters, []
        for waiter in waiters:
            waiter(exc)

    def _leave_failing(self) -> None:
        self._failing = False
        now = self._clock()
        fields: dict[str, Any] = {
            "outage_s": round(max(0.0, now - self._failed_since), 3),
            "error": self._last_error,
            "write_errors": self._c["write_errors"],
        }
        for k, base in self._outage_base.items():
            fields[k] = self._c[k] - base
        self._on_writable(True)
        log.warning("audit log writable again after %.3fs", fields["outage_s"])
        self._seal(EventFactory.lifecycle_body("audit.resumed", fields, now))

    def _close_files(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:
                log.warning("closing audit segment failed: %s", exc.strerror)
            self._file = None
        if self._index is not None:
            if self._index.is_alive():
                self._index.stop()
                self._index.join()
            else:
                self._index.close_unstarted()
