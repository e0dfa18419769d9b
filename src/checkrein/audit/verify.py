"""`checkrein audit verify`: a strict verifier that trusts nothing in the log.

`verify_log(path, ...)` never raises: it returns a `VerifyReport` whose ``exit_code`` is 0 (valid),
1 (invalid: ``problem`` names the first bad seq, the file and line, why, and its ``kind``) or 2
(unreadable or unusable input: missing path, unreadable key, log written by a newer schema). It
streams the log line by line with a per-line size limit, so a hostile file cannot exhaust memory
or hang it.

A log proves only its own consistency; what it cannot prove is listed in ``undetected`` and
``anchored`` says whether anything outside it vouched for it (a public key, an anchor, or a
tlog-policy whose witnesses cosigned it, see `audit/witnessed.py`). The index must agree with
the chain; a missing one is a warning, and with a policy it is invalid (``check_sqlite=False``
for a log written with ``[audit] sqlite = false``).

Order of checks per line (it decides which seq a tampering is blamed on): size and newline, UTF-8
and strict JSON, schema version, exact schema of the event's type, the event's own hash, then its
place: gapless seq (a repeated seq blames the repeated one, a missing one the first missing),
``prev_hash`` link, segment links, log id, checkpoints (count, head, Merkle root, signature).
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from checkrein.errors import AuditError

from .checkpoints import CheckpointStore
from .merkle import MerkleFrontier
from .proofs import MerkleTree
from .schema import (
    GENESIS_HASH,
    MAX_LINE_BYTES,
    SCHEMA_VERSION,
    EventError,
    check_event,
    render,
    strict_loads,
)
from .segments import INDEX_FILE, SEGMENT_RE, iter_located_lines, list_segments
from .signing import key_id, load_public_key, verify_signature
from .sqlite_index import INDEX_COLUMNS, row_from_line
from .tlog_policy import TlogPolicy
from .witness import WitnessTransport
from .witnessed import check_witnessed

__all__ = ["MAX_FILE_BYTES", "UNSIGNED_UNDETECTED", "Problem", "VerifyReport", "verify_log"]

MAX_FILE_BYTES = 16 * 1024**3
UNSIGNED_UNDETECTED = (
    "a rewrite of the whole chain (same events, new hashes: anyone can recompute them)",
    "a cut back to an earlier clean shutdown (the shorter log is just as consistent)",
    "a fork (another log under the same log id)",
)
"""What a check with no key, anchor or policy cannot detect."""
KEY_ONLY_UNDETECTED = (
    "a cut back to an earlier signed shutdown checkpoint (give --policy with witnesses)",
    "a rewrite or fork by whoever holds the signing key (give --policy with witnesses)",
)


@dataclass(frozen=True)
class Problem:
    reason: str
    seq: int | None = None
    file: str | None = None
    line: int | None = None
    kind: str | None = None
    """For the attacks with a name: rewrite, cut_back, fork, no_quorum, no_origin, index_missing,
    index_stale, segment_order."""

    def __str__(self) -> str:
        where = ", ".join(
            p for p in (f"seq {self.seq}" if self.seq is not None else "",
                        f"{self.file} line {self.line}" if self.file and self.line else (self.file or "")) if p
        )
        return f"{where}: {self.reason}" if where else self.reason


@dataclass
class VerifyReport:
    exit_code: int = 0
    problem: Problem | None = None
    events: int = 0
    segments: int = 0
    checkpoints: int = 0
    signatures_checked: int = 0
    log_id: str | None = None
    last_seq: int | None = None
    sqlite_checked: bool = False
    index: str = "not_checked"
    """ok, missing, stale (behind or disagreeing) or not_checked."""
    anchored: bool = False
    """Something outside the log vouched for it: a key, an anchor, or a witnessed policy."""
    undetected: list[str] = field(default_factory=list)
    """Attacks this check could not have detected, given what it was given."""
    witnessed: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    signed_key_id: str | None = None
    """Key id on the log's signed checkpoints when no key was given (what to verify with)."""
    key_path: str | None = None
    """Where the log says its signing key is (its ``audit.signing_key`` event): a hint, not trusted."""

    @property
    def valid(self) -> bool:
        return self.exit_code == 0

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["valid"] = self.valid
        out["problem"] = asdict(self.problem) if self.problem else None
        return out


class _Invalid(Exception):
    def __init__(self, problem: Problem, exit_code: int = 1) -> None:
        super().__init__(problem.reason)
        self.problem = problem
        self.exit_code = exit_code


def verify_log(
    path: Path,
    *,
    public_key: Path | None = None,
    live: bool = False,
    check_sqlite: bool = True,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_file_bytes: int = MAX_FILE_BYTES,
    anchors: tuple[tuple[int, str], ...] = (),
    policy: TlogPolicy | None = None,
    witness_transport: WitnessTransport | None = None,
    witness_timeout_s: float = 10.0,
) -> VerifyReport:
    """Verify a log directory or one segment file. ``live``: the writer may still be running (no
    closing checkpoint required; the index may lag). ``anchors``: (seq, hash) pairs recorded
    elsewhere earlier (e.g. a checkpoint head exported to monitoring); each must still be in the
    log, which proves it was not cut back or rewritten before that point, something no log can
    prove about itself. ``policy``: a C2SP tlog-policy the log's signed checkpoints must satisfy;
    its witnesses with URLs are asked over ``witness_transport``. Never raises."""
    report = VerifyReport()
    try:
        pub = load_public_key(public_key) if public_key is not None else None
        files, full = _files(path)
        if pub is None and policy is not None and full:
            pub = _policy_public_key(path, policy)
        verifier = _Verifier(report, pub, live, max_line_bytes, max_file_bytes, full)
        verifier.anchors = dict(anchors)
        if policy is not None:
            if not full:
                raise _Invalid(Problem("--policy needs the whole log directory, not one segment"), 2)
            verifier.tree = MerkleTree()
        verifier.run(files)
        if full and check_sqlite:
            _check_sqlite(path, report, live, required=policy is not None)
        if policy is not None and verifier.tree is not None:
            _check_policy(path, report, verifier, policy, witness_transport, live, witness_timeout_s)
        _limits(report, pub is not None, bool(anchors), policy is not None)
    except _Invalid as inv:
        report.exit_code, report.problem = inv.exit_code, inv.problem
    except AuditError as exc:
        report.exit_code, report.problem = 2, Problem(exc.message)
    except OSError as exc:
        report.exit_code, report.problem = 2, Problem(f"cannot read {exc.filename or path}: {exc.strerror}")
    except Exception as exc:  # noqa: BLE001 - a verifier bug must not pass a log: report it invalid
        report.exit_code, report.problem = 1, Problem(f"verifier error ({type(exc).__name__}); log not accepted")
    return report


def _check_policy(
    path: Path,
    report: VerifyReport,
    verifier: _Verifier,
    policy: TlogPolicy,
    transport: WitnessTransport | None,
    live: bool,
    timeout_s: float,
) -> None:
    tree = verifier.tree if verifier.tree is not None else MerkleTree()
    w = check_witnessed(CheckpointStore(path), tree, verifier.checkpoint_counts, policy,
                        transport=transport, live=live, timeout_s=timeout_s)
    report.witnessed = {
        "origin": w.origin, "notes_checked": w.notes_checked, "newest_size": w.newest_size,
        "cosigned_by": w.cosigned_by, "witnesses_asked": w.witnesses_asked,
    }
    report.warnings.extend(w.warnings)
    report.undetected.extend(w.undetected)
    if w.problem is not None:
        p = w.problem
        raise _Invalid(Problem(p.reason, p.size, f"checkpoints/{p.file}" if p.file else None, kind=p.kind))


def _policy_public_key(path: Path, policy: TlogPolicy) -> Ed25519PublicKey | None:
    """The policy's key for this log's origin also checks the checkpoint events' signatures."""
    origin = CheckpointStore(path).read_origin()
    key = policy.log_key(origin) if origin else None
    return Ed25519PublicKey.from_public_bytes(key.public) if key is not None else None


def _limits(report: VerifyReport, keyed: bool, anchored: bool, witnessed: bool) -> None:
    """Say what this check could not detect, given what it was given."""
    report.anchored = keyed or anchored or witnessed
    if witnessed:
        return
    if keyed:
        report.undetected.extend(KEY_ONLY_UNDETECTED)
    elif not anchored:
        report.undetected.extend(UNSIGNED_UNDETECTED)


def _files(path: Path) -> tuple[list[tuple[int | None, Path]], bool]:
    """(segment index or None, file) to check, and whether they form the whole log."""
    if not os.path.lexists(path):
        raise _Invalid(Problem(f"{path}: no such file or directory"), 2)
    if path.is_dir():
        segments = list_segments(path)
        if not segments:
            raise _Invalid(Problem(f"{path}: no audit segments (segment-NNNNNN.jsonl) in this directory"), 2)
        for expected, (index, seg) in enumerate(segments, start=1):
            if index != expected:
                raise _Invalid(Problem(f"segment {expected} is missing (found {seg.name} next)", file=seg.name,
                                       kind="segment_order"), 1)
        return [(i, p) for i, p in segments], True
    if not path.is_file():
        raise _Invalid(Problem(f"{path}: not a regular file or directory"), 2)
    m = SEGMENT_RE.match(path.name)
    single: int | None = int(m.group(1)) if m else None
    return [(single, path)], single == 1


class _Verifier:
    def __init__(
        self, report: VerifyReport, pub: Ed25519PublicKey | None, live: bool, max_line: int, max_file: int, full: bool
    ) -> None:
        self.r = report
        self.pub = pub
        self.pub_id = key_id(pub) if pub is not None else None
        self.live = live
        self.max_line = max_line
        self.max_file = max_file
        self.full = full
        self.expected: int | None = 0 if full else None
        self.prev: str | None = GENESIS_HASH if full else None
        self.frontier = MerkleFrontier()
        self.log_id: str | None = None
        self.last: dict[str, Any] | None = None
        self.anchors: dict[int, str] = {}
        self.tree: MerkleTree | None = None
        self.checkpoint_counts: list[int] = []

    def run(self, files: list[tuple[int | None, Path]]) -> None:
        for n, (index, path) in enumerate(files):
            self.r.segments += 1
            size = path.stat().st_size
            if size > self.max_file:
                raise _Invalid(Problem(f"file is {size} bytes, over the {self.max_file}-byte limit", self.expected, path.name))
            if size == 0:
                raise _Invalid(Problem("segment file is empty", self.expected, path.name))
            with path.open("rb") as f:
                self._segment(f, index, path.name, last_file=n == len(files) - 1)
        if self.last is None:
            raise _Invalid(Problem("log holds no events"), 1)
        for seq in sorted(self.anchors):
            if seq > self.last["seq"]:
                raise _Invalid(Problem(
                    f"anchor seq {seq} is past the end of the log (last seq {self.last['seq']}): events were cut", seq))
        if not self.live and not (self.last["type"] == "checkpoint" and self.last["reason"] == "shutdown"):
            seq = self.last["seq"]
            raise _Invalid(Problem(
                f"log ends at seq {seq} without a shutdown checkpoint: events after it may have been cut "
                "(if the writer is still running or crashed, use --live)", seq + 1))
        if not self.full:
            self.r.warnings.append("partial log: the chain start and Merkle roots were not checked")
        if self.pub is None and self.r.checkpoints:
            signed = f" (signed by key id {self.r.signed_key_id})" if self.r.signed_key_id else ""
            self.r.warnings.append(f"no --key given: checkpoint signatures were not checked{signed}")

    def _segment(self, f: Any, index: int | None, name: str, last_file: bool) -> None:
        lineno = 0
        while True:
            raw: bytes = f.readline(self.max_line + 1)
            if not raw:
                return
            lineno += 1
            where = (self.expected, name, lineno)
            if len(raw) > self.max_line:
                raise _Invalid(Problem(f"line longer than {self.max_line} bytes", *where))
            if not raw.endswith(b"\n"):
                if self.live and last_file and not f.read(1):
                    # A running writer may be mid-write; the next writer start cuts a torn tail.
                    self.r.warnings.append(f"{name}: last line incomplete ({len(raw)} bytes), not checked (--live)")
                    return
                raise _Invalid(Problem(f"torn last line ({len(raw)} bytes without a newline): the file was cut", *where))
            try:
                obj = strict_loads(raw[:-1])
            except EventError as exc:
                raise _Invalid(Problem(str(exc), *where)) from None
            self._event(obj, raw, index, lineno, name)

    def _event(self, obj: Any, raw: bytes, index: int | None, lineno: int, name: str) -> None:
        if isinstance(obj, dict):
            version = obj.get("schema_version")
            if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
                raise _Invalid(Problem(
                    f"written by a newer checkrein (schema_version {version}; this one reads {SCHEMA_VERSION})",
                    self.expected, name, lineno), 2)
        err = check_event(obj)
        if err is not None:
            raise _Invalid(Problem(f"schema: {err}", self._blame(obj), name, lineno))
        if self.expected is None:  # a lone later segment: start wherever it starts
            self.expected, self.prev = obj["seq"], obj["prev_hash"]
        body = {k: v for k, v in obj.items() if k != "hash"}
        line, h = render(body)
        if h != obj["hash"]:
            raise _Invalid(Problem("hash does not match the event's content (edited)", self.expected, name, lineno))
        if line != raw:
            raise _Invalid(Problem("line is not in canonical form (edited)", self.expected, name, lineno))
        if "log_id" in obj:
            if self.log_id is None:
                self.log_id = self.r.log_id = obj["log_id"]
            elif obj["log_id"] != self.log_id:
                raise _Invalid(Problem(
                    f"event belongs to log {obj['log_id']}, not {self.log_id} (a file from another checkrein install?)",
                    self.expected, name, lineno))
        seq: int = obj["seq"]
        expected: int = self.expected
        if seq != expected and lineno == 1 and index is not None and index >= 2:
            raise _Invalid(Problem(
                f"{name} starts at seq {seq}, but the segment before it ends at seq {expected - 1}: segments "
                "swapped, renamed or deleted", expected, name, lineno, kind="segment_order"))
        if seq < expected:
            raise _Invalid(Problem(
                f"seq {seq} appears again after seq {expected - 1} (duplicated, inserted or reordered)", seq, name, lineno))
        if seq > expected:
            raise _Invalid(Problem(
                f"seq {expected} is missing (next line has seq {seq}): events were deleted", expected, name, lineno))
        kind = obj["type"]
        first_line = lineno == 1
        if kind == "genesis" and not (seq == 0 and first_line and index in (1, None)):
            raise _Invalid(Problem("genesis event after the start of the log", seq, name, lineno))
        if obj["prev_hash"] != self.prev:
            raise _Invalid(Problem(f"prev_hash does not link to seq {seq - 1} (chain broken)", seq, name, lineno))
        if seq == 0 and kind != "genesis":
            raise _Invalid(Problem("the log does not start with a genesis event", seq, name, lineno))
        if first_line and index is not None and index >= 2:
            if kind != "segment":
                raise _Invalid(Problem("segment does not start with a segment link event", seq, name, lineno,
                                       kind="segment_order"))
        if kind == "segment":
            if not first_line or (index is not None and obj["segment"] != index):
                raise _Invalid(Problem(f"segment link says segment {obj['segment']} in the wrong place (segments "
                                       "swapped or renamed)", seq, name, lineno, kind="segment_order"))
            if obj["prev_segment_head"] != obj["prev_hash"]:
                raise _Invalid(Problem("segment link does not name the previous segment's head hash", seq, name, lineno))
        if kind == "checkpoint":
            self._checkpoint(obj, name, lineno)
        elif kind == "lifecycle" and obj.get("event") == "audit.signing_key":
            fields = obj.get("fields")
            path = fields.get("path") if isinstance(fields, dict) else None
            self.r.key_path = path if isinstance(path, str) else None
        anchored = self.anchors.get(seq)
        if anchored is not None and anchored != h:
            raise _Invalid(Problem(f"seq {seq} does not have the anchored hash {anchored[:16]}…: the log was rewritten", seq, name, lineno))
        self.frontier.append(h)
        if self.tree is not None:
            self.tree.append(bytes.fromhex(h))
        self.prev = h
        self.expected = seq + 1
        self.last = obj
        self.r.events += 1
        self.r.last_seq = seq

    def _blame(self, obj: Any) -> int | None:
        return self.expected if self.expected is not None else (
            obj.get("seq") if isinstance(obj, dict) and isinstance(obj.get("seq"), int) else None)

    def _checkpoint(self, obj: dict[str, Any], name: str, lineno: int) -> None:
        seq = obj["seq"]
        self.r.checkpoints += 1
        self.checkpoint_counts.append(obj["count"])
        if obj["head_hash"] != obj["prev_hash"]:
            raise _Invalid(Problem("checkpoint head_hash is not the previous event's hash", seq, name, lineno))
        if self.full:
            if obj["count"] != seq:
                raise _Invalid(Problem(f"checkpoint count {obj['count']} but {seq} events precede it", seq, name, lineno))
            if obj["merkle_root"] != self.frontier.root():
                raise _Invalid(Problem("checkpoint Merkle root does not match the events before it", seq, name, lineno))
        if self.pub is None:
            if obj["signature"] is not None:
                self.r.signed_key_id = str(obj["key_id"])
            return
        if obj["signature"] is None:
            raise _Invalid(Problem("checkpoint is not signed, but a signing key was given", seq, name, lineno))
        if obj["key_id"] != self.pub_id:
            raise _Invalid(Problem(
                f"checkpoint names key {obj['key_id']}, but the given key is {self.pub_id} (wrong key, or forged)",
                seq, name, lineno))
        if not verify_signature(self.pub, obj, obj["signature"]):
            raise _Invalid(Problem("checkpoint signature does not verify with the given key (forged or rewritten)", seq, name, lineno))
        self.r.signatures_checked += 1


def _index_unchecked(report: VerifyReport, why: str, kind: str, *, required: bool) -> None:
    """The index cannot be checked: a problem when it is ``required``, else a warning."""
    if required:
        raise _Invalid(Problem(why, file=INDEX_FILE, kind=kind))
    report.warnings.append(why)


def _check_sqlite(directory: Path, report: VerifyReport, live: bool, *, required: bool) -> None:
    """The index must hold exactly the log's lines (a prefix of them when ``live``); a missing one
    is a warning, or a problem when ``required``."""
    if not (directory / INDEX_FILE).exists():
        report.index = "missing"
        _index_unchecked(report, f"{INDEX_FILE} is missing: deleted, or never written (`checkrein audit reindex` "
                         "rebuilds it; a log written with [audit] sqlite = false is verified with --no-index)",
                         "index_missing", required=required)
        return
    report.index = "stale"
    try:
        db = sqlite3.connect(f"file:{directory / INDEX_FILE}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise _Invalid(Problem(f"{INDEX_FILE} cannot be opened: {exc}", file=INDEX_FILE)) from None
    try:
        if tuple(r[1] for r in db.execute("PRAGMA table_info(events)")) != INDEX_COLUMNS:
            _index_unchecked(report, f"{INDEX_FILE} has an older schema (written by an earlier version): the next "
                             "writer to open the log rebuilds it, or `checkrein audit reindex`", "index_stale",
                             required=required)
            return
        rows = db.execute(f"SELECT {', '.join(INDEX_COLUMNS)} FROM events ORDER BY seq")
        lines = iter_located_lines(directory)
        for row in rows:
            item = next(lines, None)
            seq = row[0]
            if item is None:
                raise _Invalid(Problem(f"{INDEX_FILE} holds seq {seq}, which the log does not (events cut from "
                                       "the log?)", seq, INDEX_FILE, kind="cut_back"))
            lseq, segment, offset, line = item
            if seq != lseq:
                raise _Invalid(Problem(f"{INDEX_FILE} lacks seq {lseq} (run `checkrein audit reindex`)", lseq, INDEX_FILE,
                                       kind="index_stale"))
            # Every column, and where the line is, must be what the line itself gives.
            if tuple(row) != row_from_line(seq, segment, offset, line):
                raise _Invalid(Problem(f"{INDEX_FILE} disagrees with the log at seq {seq}", seq, INDEX_FILE,
                                       kind="index_stale"))
        rest = next(lines, None)
        if rest is not None and not live:
            raise _Invalid(Problem(
                f"{INDEX_FILE} is stale: it lacks events from seq {rest[0]} on (restored from an older copy, or "
                "the writer could not index them; run `checkrein audit reindex`)", rest[0], INDEX_FILE,
                kind="index_stale"))
        report.sqlite_checked = True
        report.index = "ok"
    except sqlite3.Error as exc:
        raise _Invalid(Problem(f"{INDEX_FILE} unreadable: {exc}", file=INDEX_FILE)) from None
    finally:
        db.close()

