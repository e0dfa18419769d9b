"""Read-side C2SP operations on a log directory: its verifier key, proofs, witnessing by hand.

These read the segments as they are (run `checkrein audit verify` to know they are sound) and
build the Merkle tree of every event hash. Each raises ``AuditError`` with a message for the user.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from checkrein.config.audit import AuditSettings
from checkrein.errors import AuditError

from .checkpoints import CheckpointStore, witness_note
from .note import NoteError, SignedNote, b64, parse_checkpoint
from .proofs import MerkleTree, ProofError, TlogProof
from .segments import iter_lines
from .signing import CheckpointSigner, default_key_path
from .witness import PushResult, WitnessTransport

__all__ = [
    "LogIdentity",
    "consistency_between",
    "inclusion_proof_for",
    "load_tree",
    "log_identity",
    "witness_newest",
]

_HASH = re.compile(rb',"hash":"([0-9a-f]{64})"\}\Z')


@dataclass(frozen=True)
class LogIdentity:
    origin: str
    vkey: str
    key_path: Path


def log_identity(settings: AuditSettings, base_dir: Path, config_source: str | None, directory: Path) -> LogIdentity:
    """The origin and signed-note verifier key of the log in ``directory`` (for `audit vkey`)."""
    if settings.signing_key is False:
        raise AuditError("[audit] signing_key = false: this log is not signed, so it has no verifier key",
                         code="audit.unsigned")
    if isinstance(settings.signing_key, str):
        path = (base_dir / settings.signing_key).resolve()
    else:
        path = default_key_path(config_source, base_dir)
    if not path.exists():
        raise AuditError(f"no signing key at {path} yet: `checkrein serve` creates it on first start",
                         code="audit.key_unreadable")
    signer = CheckpointSigner.from_file(path)
    try:
        origin = CheckpointStore(directory).read_origin() or settings.origin
    except OSError as exc:
        raise AuditError(f"cannot read {directory}: {exc.strerror}", code="audit.unreadable") from None
    if origin is None:
        raise AuditError(f"{directory} has no checkpoints/origin yet: serve once (the log id names the origin), "
                         "or set [audit] origin", code="audit.no_origin")
    try:
        vkey = signer.note_signer(origin).vkey.encode()
    except NoteError as exc:
        raise AuditError(f"origin {origin!r}: {exc}", code="audit.origin_invalid") from None
    return LogIdentity(origin, vkey, path)


def load_tree(directory: Path) -> tuple[MerkleTree, dict[int, bytes]]:
    """The tree of every complete line's hash, and seq -> stored line."""
    tree = MerkleTree()
    lines: dict[int, bytes] = {}
    try:
        for seq, line in iter_lines(directory):
            m = _HASH.search(line)
            if m is None:
                raise AuditError(f"seq {seq} is not an audit event (run `checkrein audit verify`)",
                                 code="audit.log_corrupt")
            tree.append(bytes.fromhex(m.group(1).decode()))
            lines[seq] = line
    except OSError as exc:
        raise AuditError(f"cannot read {directory}: {exc.strerror}", code="audit.unreadable") from None
    if tree.size == 0:
        raise AuditError(f"{directory}: no audit events", code="audit.unreadable")
    return tree, lines


def _note(store: CheckpointStore, size: int) -> SignedNote:
    try:
        return store.load(size)
    except FileNotFoundError:
        raise AuditError(f"no signed checkpoint of size {size} in {store.dir} (sizes: "
                         f"{', '.join(map(str, store.sizes()[-8:])) or 'none'})", code="audit.no_checkpoint") from None
    except (OSError, NoteError) as exc:
        raise AuditError(f"{store.path(size)}: {exc}", code="audit.log_corrupt") from None


def _checked_note(store: CheckpointStore, tree: MerkleTree, size: int) -> SignedNote:
    note = _note(store, size)
    try:
        body = parse_checkpoint(note.text)
    except NoteError as exc:
        raise AuditError(f"{store.path(size)}: {exc}", code="audit.log_corrupt") from None
    if size > tree.size or tree.root(size) != body.root:
        raise AuditError(f"checkpoint of size {size} does not match this log's events (run `checkrein audit verify`)",
                         code="audit.log_corrupt")
    return note


def inclusion_proof_for(directory: Path, seq: int) -> TlogProof:
    """A c2sp.org/tlog-proof@v1 for event ``seq`` against the newest signed checkpoint that covers
    it; ``extra`` carries the event's stored line, from which its hash can be recomputed."""
    tree, lines = load_tree(directory)
    store = CheckpointStore(directory)
    sizes = [s for s in store.sizes() if s > seq]
    if seq not in lines:
        raise AuditError(f"no event with seq {seq} (the log has {tree.size})", code="audit.no_event")
    if not sizes:
        raise AuditError(f"no signed checkpoint covers seq {seq} yet (the next checkpoint will)",
                         code="audit.no_checkpoint")
    size = sizes[-1]
    note = _checked_note(store, tree, size)
    return TlogProof(seq, tuple(tree.inclusion_proof(seq, size)), note, extra=lines[seq])


@dataclass(frozen=True)
class Consistency:
    old: int
    new: int
    old_root: bytes
    new_root: bytes
    proof: tuple[bytes, ...]
    new_note: SignedNote

    def witness_body(self) -> str:
        """The proof in tlog-witness request form: ``old N``, proof lines, blank line, new note."""
        return f"old {self.old}\n" + "".join(b64(h) + "\n" for h in self.proof) + "\n" + self.new_note.render()


def consistency_between(directory: Path, old: int, new: int) -> Consistency:
    tree, _ = load_tree(directory)
    store = CheckpointStore(directory)
    note = _checked_note(store, tree, new)
    try:
        proof = tree.consistency_proof(old, new)
    except ProofError as exc:
        raise AuditError(str(exc), code="audit.bad_request") from None
    return Consistency(old, new, tree.root(old), tree.root(new), tuple(proof), note)


def witness_newest(
    directory: Path, urls: tuple[str, ...], transport: WitnessTransport, timeout_s: float
) -> tuple[int, list[PushResult]]:
    """Push the newest signed checkpoint to each witness and store the cosignatures that come back
    (`checkrein audit witness`). Returns (its size, result per witness)."""
    tree, _ = load_tree(directory)
    store = CheckpointStore(directory)
    sizes = store.sizes()
    if not sizes:
        raise AuditError(f"no signed checkpoints in {store.dir}", code="audit.no_checkpoint")
    note = _checked_note(store, tree, sizes[-1])
    cosigned, results = witness_note(note, tree, urls, transport, timeout_s=timeout_s)
    if cosigned is not note:
        try:
            store.save(sizes[-1], cosigned)
        except OSError as exc:
            raise AuditError(f"cannot store cosignatures in {store.dir}: {exc.strerror}",
                             code="audit.unwritable") from None
    return sizes[-1], results
