"""RFC 6962 inclusion and consistency proofs over the log's leaves, and the C2SP tlog-proof text.

A leaf is the 32-byte event hash, so ``leaf hash = SHA-256(0x00 || event hash)`` as in
`audit/merkle.py`. `MerkleTree` keeps every complete node of every level (about 64 bytes per
event), so a proof between any two sizes costs O(log n) lookups, not a pass over the log.
Verification follows RFC 9162 §2.1.3.2 (inclusion) and §2.1.4.2 (consistency).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from .note import NoteError, SignedNote, b64, parse_note, unb64

__all__ = [
    "TLOG_PROOF_HEADER",
    "MerkleTree",
    "ProofError",
    "TlogProof",
    "leaf_hash",
    "parse_tlog_proof",
    "verify_consistency",
    "verify_inclusion",
]

TLOG_PROOF_HEADER = "c2sp.org/tlog-proof@v1"
EMPTY = hashlib.sha256(b"").digest()
_sha = hashlib.sha256


class ProofError(ValueError):
    """A proof was asked for sizes the tree does not have, or a proof text is malformed."""


def leaf_hash(entry: bytes) -> bytes:
    return _sha(b"\x00" + entry).digest()


def _node(left: bytes, right: bytes) -> bytes:
    return _sha(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two strictly below ``n`` (n >= 2)."""
    return 1 << ((n - 1).bit_length() - 1)


class MerkleTree:
    """Append-only; ``levels[k]`` holds the complete nodes of height k (32 bytes each)."""

    def __init__(self, entries: Iterable[bytes] = ()) -> None:
        self.levels: list[bytearray] = [bytearray()]
        for e in entries:
            self.append(e)

    @property
    def size(self) -> int:
        return len(self.levels[0]) // 32

    def append(self, entry: bytes) -> None:
        """Add one leaf (``entry`` is the 32-byte event hash)."""
        node = leaf_hash(entry)
        index = self.size
        level = 0
        while True:
            self.levels[level] += node
            if index & 1 == 0:
                return
            left = bytes(self.levels[level][-64:-32])
            node = _node(left, node)
            index >>= 1
            level += 1
            if level == len(self.levels):
                self.levels.append(bytearray())

    def _complete(self, level: int, index: int) -> bytes:
        return bytes(self.levels[level][index * 32 : index * 32 + 32])

    def hash(self, start: int, end: int) -> bytes:
        """MTH of leaves [start, end); ``start`` is aligned to a power of two >= end - start."""
        n = end - start
        if n == 0:
            return EMPTY
        if n & (n - 1) == 0:
            level = n.bit_length() - 1
            return self._complete(level, start >> level)
        k = _split(n)
        return _node(self.hash(start, start + k), self.hash(start + k, end))

    def root(self, size: int | None = None) -> bytes:
        size = self.size if size is None else size
        if not 0 <= size <= self.size:
            raise ProofError(f"tree has {self.size} leaves, not {size}")
        return self.hash(0, size)

    def inclusion_proof(self, index: int, size: int) -> list[bytes]:
        """RFC 6962 PATH(index, D[0:size]), leaf sibling first."""
        if not 0 <= index < size <= self.size:
            raise ProofError(f"no leaf {index} in a tree of size {size} (log has {self.size})")
        proof: list[bytes] = []
        start, end = 0, size
        while end - start > 1:
            k = _split(end - start)
            if index < start + k:
                proof.append(self.hash(start + k, end))
                end = start + k
            else:
                proof.append(self.hash(start, start + k))
                start += k
        proof.reverse()
        return proof

    def consistency_proof(self, old: int, new: int) -> list[bytes]:
        """RFC 6962 PROOF(old, D[0:new]); empty when ``old`` is 0 or equals ``new``."""
        if not 0 <= old <= new <= self.size:
            raise ProofError(f"no consistency proof from size {old} to {new} (log has {self.size})")
        if old == 0 or old == new:
            return []
        proof: list[bytes] = []
        start, end, whole = 0, new, True
        m = old
        while True:
            n = end - start
            if m == n:
                if not whole:
                    proof.append(self.hash(start, end))
                break
            k = _split(n)
            if m <= k:
                proof.append(self.hash(start + k, end))
                end = start + k
            else:
                proof.append(self.hash(start, start + k))
                start += k
                m -= k
                whole = False
        proof.reverse()
        return proof


def verify_inclusion(leaf: bytes, index: int, size: int, proof: list[bytes], root: bytes) -> bool:
    """RFC 9162 §2.1.3.2, given the leaf *hash*."""
    if not 0 <= index < size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = _node(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = _node(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def verify_consistency(old: int, new: int, old_root: bytes, new_root: bytes, proof: list[bytes]) -> bool:
    """RFC 9162 §2.1.4.2."""
    if old > new or old < 0:
        return False
    if old == new:
        return not proof and old_root == new_root
    if old == 0:
        return not proof
    if not proof:
        return False
    path = list(proof)
    if old & (old - 1) == 0:  # old is a power of two: its root is the first node
        path.insert(0, old_root)
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = _node(c, fr)
            sr = _node(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = _node(sr, c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and fr == old_root and sr == new_root


@dataclass(frozen=True)
class TlogProof:
    """c2sp.org/tlog-proof@v1: an entry's index, its inclusion path, and the (cosigned) checkpoint."""

    index: int
    path: tuple[bytes, ...]
    checkpoint: SignedNote
    extra: bytes | None = None

    def render(self) -> str:
        head = [TLOG_PROOF_HEADER]
        if self.extra is not None:
            head.append(f"extra {b64(self.extra)}")
        head.append(f"index {self.index}")
        head.extend(b64(h) for h in self.path)
        return "\n".join(head) + "\n\n" + self.checkpoint.render()


def parse_tlog_proof(text: str) -> TlogProof:
    head, sep, rest = text.partition("\n\n")
    if not sep:
        raise ProofError("a tlog-proof has header lines, a blank line, then the checkpoint")
    lines = head.split("\n")
    if lines[0] != TLOG_PROOF_HEADER:
        raise ProofError(f"a tlog-proof starts with {TLOG_PROOF_HEADER}")
    pos = 1
    extra = None
    try:
        if pos < len(lines) and lines[pos].startswith("extra "):
            extra = unb64(lines[pos][6:], "extra")
            pos += 1
        if pos >= len(lines) or not lines[pos].startswith("index ") or not lines[pos][6:].isdigit():
            raise ProofError("missing 'index N' line")
        index = int(lines[pos][6:])
        path = tuple(unb64(x, "proof hash") for x in lines[pos + 1 :])
        note = parse_note(rest)
    except NoteError as exc:
        raise ProofError(str(exc)) from None
    if any(len(h) != 32 for h in path):
        raise ProofError("proof hashes are 32 bytes")
    return TlogProof(index, path, note, extra)
