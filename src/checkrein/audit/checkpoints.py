"""Checkpoints as C2SP signed notes under ``<audit dir>/checkpoints/``, and their publisher.

    checkpoints/origin                     the log's origin line, fixed when the log is first signed
    checkpoints/checkpoint-<size>.note     the signed checkpoint, then any witness cosignatures

The writer hands each checkpoint to `CheckpointPublisher` only once the checkpoint's event is
fsynced (a witness must never see a tree the log could still lose in a crash). The publisher's
own thread signs the note, writes it (temp file, fsync, rename), pushes it to every configured
witness with a consistency proof, and rewrites the note with the cosignatures that came back. It
never blocks the writer or a call: failures are counted (``witness_*``, ``note_errors``) and
logged. A note is derived data (Ed25519 is deterministic); the cosignatures are not, which is
why they are kept with it.
"""

from __future__ import annotations

import collections
import logging
import os
import platform
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from .note import NoteError, NoteSigner, SignedNote, checkpoint_text, parse_note
from .proofs import MerkleTree
from .segments import replace_durably
from .witness import PushResult, WitnessTransport, push_checkpoint

__all__ = [
    "CHECKPOINT_DIR",
    "PUBLISHER_COUNTERS",
    "CheckpointPublisher",
    "CheckpointStore",
    "default_origin",
    "witness_note",
]

log = logging.getLogger("checkrein.audit")

CHECKPOINT_DIR = "checkpoints"
ORIGIN_FILE = "origin"
_NOTE_RE = re.compile(r"checkpoint-(\d{12})\.note\Z")
PUBLISHER_COUNTERS = (
    "notes_written", "note_errors", "witness_pushes", "witness_cosigned", "witness_failures",
    "witness_quorum_missed", "witness_ahead", "witness_forks",
)


def default_origin(log_id: str, host: str | None = None) -> str:
    """``checkrein/<host>/<log id>``, the host reduced to characters an origin may hold."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", host if host is not None else platform.node()) or "localhost"
    return f"checkrein/{name}/{log_id}"


class CheckpointStore:
    """The ``checkpoints/`` folder of one log. Methods raise ``OSError`` (and ``NoteError`` for a
    note file that does not parse)."""

    def __init__(self, audit_dir: Path) -> None:
        self.dir = audit_dir / CHECKPOINT_DIR

    def path(self, size: int) -> Path:
        return self.dir / f"checkpoint-{size:012d}.note"

    def sizes(self) -> list[int]:
        try:
            names = os.listdir(self.dir)
        except FileNotFoundError:
            return []
        return sorted(int(m.group(1)) for n in names if (m := _NOTE_RE.match(n)))

    def load(self, size: int) -> SignedNote:
        return parse_note(self.path(size).read_bytes())

    def newest(self) -> tuple[int, SignedNote] | None:
        sizes = self.sizes()
        return (sizes[-1], self.load(sizes[-1])) if sizes else None

    def save(self, size: int, note: SignedNote) -> Path:
        self._write(self.path(size), note.render().encode("utf-8"))
        return self.path(size)

    def read_origin(self) -> str | None:
        try:
            text = (self.dir / ORIGIN_FILE).read_text("utf-8").strip()
        except FileNotFoundError:
            return None
        return text or None

    def write_origin(self, origin: str) -> None:
        self._write(self.dir / ORIGIN_FILE, origin.encode("utf-8") + b"\n")

    def _write(self, path: Path, data: bytes) -> None:
        self.dir.mkdir(mode=0o700, exist_ok=True)
        replace_durably(path, data)


def witness_note(
    note: SignedNote,
    tree: MerkleTree,
    urls: Sequence[str],
    transport: WitnessTransport,
    *,
    known: dict[str, int] | None = None,
    timeout_s: float = 10.0,
) -> tuple[SignedNote, list[PushResult]]:
    """Push ``note`` to each witness; return it with every cosignature that came back, and the
    result per witness. ``known`` maps URL -> size that witness last cosigned (updated)."""
    known = known if known is not None else {}
    results: list[PushResult] = []
    for url in urls:
        r = push_checkpoint(transport, url, note, tree.consistency_proof, known_size=known.get(url, 0),
                            timeout_s=timeout_s)
        if r.witness_size is not None:
            known[url] = r.witness_size
        results.append(r)
        if r.outcome == "cosigned":
            note = note.with_signatures(r.signatures)
    return note, results


class CheckpointPublisher(threading.Thread):
    """Signs, stores and witnesses checkpoints on its own thread (see the module docstring)."""

    def __init__(
        self,
        *,
        store: CheckpointStore,
        signer: NoteSigner,
        tree: MerkleTree,
        counters: dict[str, int],
        witnesses: Sequence[str] = (),
        quorum: int = 0,
        transport: WitnessTransport | None = None,
        timeout_s: float = 10.0,
        on_result: Callable[[int, list[PushResult]], None] | None = None,
    ) -> None:
        super().__init__(name="checkrein-audit-checkpoints", daemon=True)
        self.store = store
        self.signer = signer
        self.tree = tree
        self.witnesses = tuple(witnesses)
        self.quorum = quorum
        self._transport = transport
        self._timeout = timeout_s
        self._c = counters
        for name in PUBLISHER_COUNTERS:
            counters.setdefault(name, 0)
        self._queue: collections.deque[tuple[int, bytes]] = collections.deque()
        self._wake = threading.Event()
        self._stopping = False
        self._known: dict[str, int] = {}
        self._on_result = on_result
        self.last_results: list[PushResult] = []

    @property
    def origin(self) -> str:
        return self.signer.vkey.name

    def submit(self, size: int, root: bytes) -> None:
        """Called by the writer once the checkpoint over ``size`` leaves is on disk."""
        self._queue.append((size, root))
        self._wake.set()

    def close(self, timeout_s: float) -> None:
        """Publish what is queued (the shutdown checkpoint), then stop; waits at most
        ``timeout_s`` for the witnesses before leaving the rest."""
        self._stopping = True
        self._wake.set()
        if self.is_alive():
            self.join(timeout_s)
        if self.is_alive():
            log.warning("audit checkpoint publisher still busy after %.1fs; leaving it", timeout_s)

    def run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            items = []
            while self._queue:
                items.append(self._queue.popleft())
            for n, (size, root) in enumerate(items):
                # Every checkpoint gets its note; only the newest of a backlog goes to the witnesses.
                self.publish(size, root, witness=n == len(items) - 1)
            if self._stopping and not self._queue:
                return

    def publish(self, size: int, root: bytes, *, witness: bool = True) -> SignedNote | None:
        """Sign, store and (if configured) witness one checkpoint. Never raises."""
        try:
            note = self.signer.sign(checkpoint_text(self.origin, size, root))
            self.store.save(size, note)
        except (OSError, NoteError, ValueError) as exc:
            self._c["note_errors"] += 1
            log.error("audit checkpoint note for size %d not written: %s", size, exc)
            return None
        self._c["notes_written"] += 1
        if not (witness and self.witnesses and self._transport is not None):
            return note
        try:
            cosigned, results = witness_note(note, self.tree, self.witnesses, self._transport,
                                             known=self._known, timeout_s=self._timeout)
        except Exception as exc:  # noqa: BLE001 - off the call path: a witness bug must not kill the thread
            self._c["witness_failures"] += len(self.witnesses)
            log.error("witnessing checkpoint %d failed: %s", size, type(exc).__name__)
            return note
        self._count(size, results)
        if cosigned is not note:
            try:
                self.store.save(size, cosigned)
            except OSError as exc:
                self._c["note_errors"] += 1
                log.error("cosignatures for checkpoint %d not stored: %s", size, exc)
        if self._on_result is not None:
            self._on_result(size, results)
        return cosigned

    def _count(self, size: int, results: list[PushResult]) -> None:
        c = self._c
        self.last_results = results
        c["witness_pushes"] += len(results)
        ok = 0
        for r in results:
            if r.outcome == "cosigned":
                c["witness_cosigned"] += 1
                ok += 1
                continue
            c["witness_failures"] += 1
            if r.outcome == "witness_ahead":
                c["witness_ahead"] += 1
            elif r.outcome == "fork":
                c["witness_forks"] += 1
            level = logging.ERROR if r.outcome in ("witness_ahead", "fork") else logging.WARNING
            log.log(level, "witness %s did not cosign checkpoint %d (%s): %s", r.url, size, r.outcome, r.detail)
        if ok < self.quorum:
            c["witness_quorum_missed"] += 1
            log.warning("checkpoint %d has %d of the %d cosignatures the quorum needs", size, ok, self.quorum)
