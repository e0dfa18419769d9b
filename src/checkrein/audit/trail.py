"""`open_audit_trail` and `AuditTrailImpl`: the gate-facing `AuditTrail` over the one writer.

`record_call` takes no lock and does no I/O: it checks `writable`, timestamps the record and
appends it to the writer's queue; redaction, hashing and writing happen on the writer thread. In
`durable` mode it then awaits the fsync of the batch holding its event.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from checkrein.config.audit import DEFAULT_AUDIT_DIR, AuditSettings
from checkrein.errors import AuditError, AuditUnavailable

from .chain import Chain
from .checkpoints import CheckpointPublisher, CheckpointStore, default_origin
from .event import EventFactory
from .note import NoteError
from .proofs import MerkleTree
from .record import CallRecord, LifecycleRecord
from .redact import Redactor
from .secrets import SecretFinder
from .segments import LogOpener, OsLogFile, lock_directory, scan_tail, segment_name
from .signing import CheckpointSigner, SigningKey
from .sqlite_index import SqliteIndex
from .witness import WitnessTransport
from .writer import COUNTER_NAMES, Item, Waiter, Writer

if TYPE_CHECKING:
    from .shipper import PostgresShipper

__all__ = ["DEFAULT_DIR_NAME", "AuditTrailImpl", "open_audit_trail", "resolve_audit_dir"]

log = logging.getLogger("checkrein.audit")
DEFAULT_DIR_NAME = DEFAULT_AUDIT_DIR


def resolve_audit_dir(settings: AuditSettings, base_dir: Path) -> Path:
    """``[audit] dir`` relative to ``base_dir`` (the config file's folder)."""
    return (base_dir / (settings.dir or DEFAULT_DIR_NAME)).resolve()


class AuditTrailImpl:
    """Implements `checkrein.audit.record.AuditTrail`. Create with `open_audit_trail`."""

    def __init__(self, settings: AuditSettings, directory: Path, clock: Callable[[], float]) -> None:
        self.settings = settings
        self.directory = directory
        self._clock = clock
        self._writable = True
        self._closed = False
        self._counters: dict[str, int] = dict.fromkeys(COUNTER_NAMES, 0)
        self._writer: Writer | None = None
        self._publisher: CheckpointPublisher | None = None
        self._transport_owned: Any = None
        self.origin: str | None = None
        """The C2SP origin of this log's checkpoints (None when unsigned)."""
        self.vkey: str | None = None
        """The signed-note verifier key a witness operator needs (None when unsigned)."""
        self._shipper: PostgresShipper | None = None

    # --- AuditTrail protocol ----------------------------------------------------------------------

    async def record_call(self, record: CallRecord) -> None:
        """Queue the event of one finished call. Raises ``AuditUnavailable`` when the log cannot be
        written (or the queue is full) and ``on_failure`` is ``deny``; in ``durable`` mode returns
        only once the event is fsynced (and raises ``AuditUnavailable`` if that write fails)."""
        degraded: tuple[str, ...] = ()
        if self._closed:
            self._counters["rejected_unwritable"] += 1
            raise AuditUnavailable(self._unavailable_message())
        if not self._writable or self._queue_full():
            if self.settings.on_failure == "deny":
                self._counters["rejected_unwritable"] += 1
                raise AuditUnavailable(self._unavailable_message())
            self._counters["failed_open"] += 1
            degraded = ("audit.failed_open",)
            if self._queue_full():
                self._counters["dropped"] += 1
                return
            self._enqueue((record, self._clock(), None, degraded))
            return
        await self._submit(record)

    async def record_lifecycle(self, record: LifecycleRecord) -> None:
        """Queue a lifecycle event. Never raises for an unwritable log (the event waits in the
        queue, or is dropped and counted when the queue is full); waits for the fsync in
        ``durable`` mode while the log is writable."""
        if self._closed:
            raise AuditError("audit trail is closed", code="audit.closed")
        if self._queue_full():
            self._counters["dropped"] += 1
            return
        if not self._writable:
            self._enqueue((record, self._clock(), None, ()))
            return
        try:
            await self._submit(record)
        except AuditUnavailable:
            log.warning("lifecycle event %s queued while the audit log is failing", record.event)

    def writable(self) -> bool:
        return self._writable and not self._closed

    async def aclose(self) -> None:
        """Write the shutdown checkpoint, sync, and stop the writer (bounded by `close_timeout_s`
        while the log is failing). Idempotent."""
        if self._closed:
            return
        self._closed = True
        writer = self._writer
        if writer is None:
            return
        writer.request_stop()
        await anyio.to_thread.run_sync(writer.join, abandon_on_cancel=True)
        await anyio.to_thread.run_sync(self._close_publisher, abandon_on_cancel=True)
        if self._shipper is not None:
            await anyio.to_thread.run_sync(self._shipper.stop, abandon_on_cancel=True)

    def close(self) -> None:
        """Synchronous `aclose` for scripts and tests outside an event loop."""
        if self._closed:
            return
        self._closed = True
        if self._writer is not None:
            self._writer.request_stop()
            self._writer.join()
        self._close_publisher()

    def _close_publisher(self) -> None:
        """Let the publisher sign and witness the shutdown checkpoint, bounded in time."""
        if self._publisher is None:
            return
        w = self.settings.witness
        self._publisher.close(max(self.settings.close_timeout_s, 2 * w.timeout_s * len(w.urls)) + 1.0)
        if self._transport_owned is not None:
            self._transport_owned.close()
        if self._shipper is not None:
            self._shipper.stop()

    @property
    def counters(self) -> dict[str, int]:
        """Snapshot of every counter (for `checkrein stats` / `audit stats`)."""
        out = dict(self._counters)
        depth = len(self._writer.queue) if self._writer else 0
        out["queue_depth"] = depth
        out["writable"] = int(self.writable())
        if self._shipper is not None:
            out.update(self._shipper.stats())
        return out

    # --- internals ----------------------------------------------------------------------------

    def _queue_full(self) -> bool:
        return self._writer is not None and len(self._writer.queue) >= self.settings.max_queue

    def _unavailable_message(self) -> str:
        if self._closed:
            return "audit trail is closed; calls are denied"
        if not self._writable:
            return f"audit log in {self.directory} cannot be written; calls are denied until it can"
        return "audit queue is full; calls are denied until the writer catches up"

    def _enqueue(self, item: Item) -> None:
        writer = self._writer
        if writer is None:
            raise AuditUnavailable("audit trail was not opened with open_audit_trail")
        writer.queue.append(item)
        c = self._counters
        c["events_queued"] += 1
        depth = len(writer.queue)
        if depth > c["queue_max_seen"]:
            c["queue_max_seen"] = depth
        if not writer.wake.is_set():
            writer.wake.set()

    async def _submit(self, record: CallRecord | LifecycleRecord) -> None:
        if self.settings.durability != "durable":
            self._enqueue((record, self._clock(), None, ()))
            return
        waiter, wait = _make_waiter()
        self._enqueue((record, self._clock(), waiter, ()))
        await wait()

    def _set_writable(self, ok: bool) -> None:
        self._writable = ok

    def _record_from_thread(self, event: str, fields: dict[str, Any]) -> None:
        """A lifecycle event from a helper thread (the Postgres shipper): queued, never awaited."""
        writer = self._writer
        if writer is None or writer.stopped.is_set() or writer.stop_requested:
            return
        if len(writer.queue) >= self.settings.max_queue:
            self._counters["dropped"] += 1
            return
        self._enqueue((LifecycleRecord(event, fields), self._clock(), None, ()))


def _make_waiter() -> tuple[Waiter, Callable[[], Any]]:
    """A (thread-side callback, awaitable factory) pair resolving once the event is on disk."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is not None:
        fut: asyncio.Future[None] = loop.create_future()

        def resolve(exc: BaseException | None) -> None:
            try:
                loop.call_soon_threadsafe(_settle, fut, exc)
            except RuntimeError:  # loop closed: nobody is waiting any more
                pass

        async def wait_fut() -> None:
            await fut

        return resolve, wait_fut
    done = threading.Event()
    box: list[BaseException | None] = [None]

    def resolve_thread(exc: BaseException | None) -> None:
        box[0] = exc
        done.set()

    async def wait_thread() -> None:
        await anyio.to_thread.run_sync(done.wait)
        if box[0] is not None:
            raise _as_unavailable(box[0])

    return resolve_thread, wait_thread


def _settle(fut: asyncio.Future[None], exc: BaseException | None) -> None:
    if fut.done():
        return
    if exc is None:
        fut.set_result(None)
    else:
        fut.set_exception(_as_unavailable(exc))


def _as_unavailable(exc: BaseException) -> AuditUnavailable:
    err = AuditUnavailable(f"audit event could not be written: {type(exc).__name__}")
    err.__cause__ = exc
    return err


def open_audit_trail(
    settings: AuditSettings,
    base_dir: Path,
    *,
    secret_finder: SecretFinder | None = None,
    secret_prefilter: Callable[[str], bool] | None = None,
    clock: Callable[[], float] = time.time,
    opener: LogOpener | None = None,
    signing_key: SigningKey | None = None,
    witness_transport: WitnessTransport | None = None,
) -> AuditTrailImpl:
    """Open (creating, or recovering after a crash) the log under ``[audit] dir`` and start its
    writer. A torn tail is cut and recorded in an ``audit.recovery`` event; the chain continues.

    ``secret_finder`` is the policy engine's ``find_secrets`` when wired by the gate (default: the
    built-in pattern set); ``secret_prefilter`` is that finder's necessary condition (False only
    when it finds nothing in the text: the analyzer's ``may_find``), which spares the full scan of
    most strings. ``opener`` replaces how segment files are opened (fault injection, see
    `checkrein.testing.faulty_file`). ``signing_key`` (from `prepare_signing_key`) overrides
    ``[audit] signing_key``; with a key, every checkpoint is also published as a C2SP signed note
    in ``checkpoints/`` and pushed to ``[audit.witness] urls`` (over ``witness_transport``,
    default HTTP). Raises ``AuditError`` (bad key, damaged log) and ``AuditUnavailable``
    (directory not writable while ``on_failure = "deny"``).
    """
    directory = resolve_audit_dir(settings, base_dir)
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise AuditUnavailable(f"cannot create audit directory {directory}: {exc.strerror}") from None
    if signing_key is None and isinstance(settings.signing_key, str):
        signing_key = SigningKey(base_dir / settings.signing_key)
    signer = CheckpointSigner.from_file(signing_key.path) if signing_key is not None else None
    try:
        lock_fd = lock_directory(directory)
    except OSError as exc:
        raise AuditUnavailable(f"cannot lock audit directory {directory}: {exc.strerror}") from None
    try:
        trail, writer = _prepare_locked(
            settings, directory, signer, lock_fd, secret_finder, clock, opener, signing_key, witness_transport,
            secret_prefilter=secret_prefilter)
    except BaseException:
        os.close(lock_fd)
        raise
    if trail._publisher is not None:
        trail._publisher.start()
    writer.start()
    if trail._shipper is not None:
        trail._shipper.start()
    return trail


def _prepare_locked(
    settings: AuditSettings,
    directory: Path,
    signer: CheckpointSigner | None,
    lock_fd: int,
    secret_finder: SecretFinder | None,
    clock: Callable[[], float],
    opener: LogOpener | None,
    signing_key: SigningKey | None = None,
    witness_transport: WitnessTransport | None = None,
    *,
    secret_prefilter: Callable[[str], bool] | None = None,
) -> tuple[AuditTrailImpl, Writer]:
    try:
        tail = scan_tail(directory)
    except OSError as exc:
        raise AuditUnavailable(f"cannot read audit log in {directory}: {exc.strerror}") from None
    redactor = Redactor(secret_finder=secret_finder, secret_prefilter=secret_prefilter, extra_keys=settings.redact_keys,
                        max_chars=settings.preview_chars)
    factory = EventFactory(redactor)
    trail = AuditTrailImpl(settings, directory, clock)
    now = clock()
    first: list[dict[str, Any]] = []
    new_log = tail.next_seq == 0
    log_id = tail.log_id or Chain.new_log_id()
    tree = MerkleTree() if signer is not None else None
    chain = Chain(
        log_id=log_id,
        next_seq=tail.next_seq,
        head_hash=tail.head_hash,
        hashes=tail.hashes,
        signer=signer,
        tree=tree,
    )
    if new_log:
        first.append(chain.genesis(now))
    else:
        if tail.log_id is None:
            raise AuditError(f"cannot tell which log {directory} holds (no genesis/segment event)", code="audit.log_corrupt")
        if tail.last_segment_lines == 0:
            first.append(chain.segment_link(tail.last_segment, now))
        clean = tail.last_type == "checkpoint" and tail.last_reason == "shutdown" and not tail.cut_bytes
        if not clean:
            trail._counters["recoveries"] += 1
            trail._counters["recovered_cut_bytes"] += tail.cut_bytes
            first.append(
                EventFactory.lifecycle_body(
                    "audit.recovery",
                    {
                        "segment": segment_name(tail.last_segment),
                        "last_seq": tail.next_seq - 1,
                        "cut_bytes": tail.cut_bytes,
                        "cut_lines": tail.cut_lines,
                        "cut_sha256": tail.cut_sha256,
                        "clean_shutdown": False,
                    },
                    now,
                )
            )
    if signer is not None and tree is not None:
        key_event = _prepare_publisher(trail, settings, directory, log_id, signer, tree, signing_key,
                                       witness_transport, now)
        if signing_key is not None and signing_key.created:
            first.append(key_event)
    index: SqliteIndex | None = None
    if settings.sqlite:
        index = _open_index(directory, chain.log_id, tail.next_seq, trail)
    writer = Writer(
        directory=directory,
        chain=chain,
        factory=factory,
        opener=opener or OsLogFile,
        file=None,
        segment_index=tail.last_segment,
        segment_size=0,
        index=index,
        clock=clock,
        counters=trail._counters,
        checkpoint_every=settings.checkpoint_every,
        checkpoint_interval_s=settings.checkpoint_interval_s,
        segment_max_bytes=settings.segment_max_bytes,
        batch_max=settings.batch_max,
        group_commit_s=settings.group_commit_ms / 1000.0,
        batch_window_s=settings.batch_window_ms / 1000.0 if settings.durability == "batch" else 0.0,
        retry_interval_s=settings.retry_interval_s,
        close_timeout_s=settings.close_timeout_s,
        first_bodies=first,
        on_writable=trail._set_writable,
        lock_fd=lock_fd,
        publisher=trail._publisher,
    )
    trail._writer = writer
    if settings.postgres is not None:
        from .shipper import PostgresShipper

        trail._shipper = PostgresShipper(
            settings.postgres,
            directory,
            chain.log_id,
            lambda: writer.synced,
            notify=trail._record_from_thread,
            close_timeout_s=settings.close_timeout_s,
        )
    if not writer.initial_flush() and settings.on_failure == "deny":
        writer.close_files()
        raise AuditUnavailable(f"cannot write the audit log in {directory}: {writer.last_error}")
    return trail, writer


def _prepare_publisher(
    trail: AuditTrailImpl,
    settings: AuditSettings,
    directory: Path,
    log_id: str,
    signer: CheckpointSigner,
    tree: MerkleTree,
    key: SigningKey | None,
    transport: WitnessTransport | None,
    now: float,
) -> dict[str, Any]:
    """Set up note publishing; return the ``audit.signing_key`` event that records it (written
    when this open created the key)."""
    store = CheckpointStore(directory)
    try:
        stored = store.read_origin()
    except OSError as exc:
        raise AuditUnavailable(f"cannot read {store.dir}: {exc.strerror}") from None
    if stored is not None and settings.origin is not None and settings.origin != stored:
        raise AuditError(
            f"[audit] origin {settings.origin!r} differs from this log's origin {stored!r} "
            f"({store.dir}/origin): a log keeps its origin for life", code="audit.origin_changed")
    origin = stored or settings.origin or default_origin(log_id)
    try:
        note_signer = signer.note_signer(origin)
    except NoteError as exc:
        raise AuditError(f"[audit] origin: {exc}", code="audit.origin_invalid") from None
    if stored is None:
        try:
            store.write_origin(origin)
        except OSError as exc:
            raise AuditUnavailable(f"cannot write {store.dir}: {exc.strerror}") from None
    w = settings.witness
    if w.urls and transport is None:
        from .witness_http import HttpWitnessTransport  # the one network module, loaded only when needed

        transport = trail._transport_owned = HttpWitnessTransport()
    trail._publisher = CheckpointPublisher(
        store=store, signer=note_signer, tree=tree, counters=trail._counters, witnesses=w.urls,
        quorum=w.needed, transport=transport, timeout_s=w.timeout_s)
    trail.origin, trail.vkey = origin, note_signer.vkey.encode()
    fields: dict[str, Any] = {
        "origin": origin, "vkey": trail.vkey, "key_id": signer.key_id,
        "path": str(key.path) if key is not None else None, "created": bool(key and key.created),
        "witnesses": list(w.urls), "quorum": w.needed,
    }
    return EventFactory.lifecycle_body("audit.signing_key", fields, now)


def _open_index(directory: Path, log_id: str, next_seq: int, trail: AuditTrailImpl) -> SqliteIndex | None:
    try:
        index = SqliteIndex(directory)
        index.catch_up(directory, log_id, next_seq)
        index.set_log_id(log_id)
        return index
    except (sqlite3.Error, OSError, ValueError) as exc:
        # The index is derived; a broken one must not stop auditing. `audit reindex` repairs it.
        trail._counters["sqlite_errors"] += 1
        log.warning("audit index unavailable (%s); run `checkrein audit reindex %s`", type(exc).__name__, directory)
        return None
