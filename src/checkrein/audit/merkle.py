"""RFC 6962 Merkle tree hash over event hashes, computed incrementally.

Leaves are the 32-byte event hashes: ``leaf = SHA-256(0x00 || hash)``, ``node = SHA-256(0x01 || l
|| r)``, and the root of n leaves splits at the largest power of two below n (RFC 6962 §2.1). The
frontier keeps one subtree root per set bit of the leaf count, so appending is O(1) amortized and
the root is O(log n).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

__all__ = ["EMPTY_ROOT", "MerkleFrontier", "merkle_root"]

EMPTY_ROOT = hashlib.sha256(b"").hexdigest()
_sha256 = hashlib.sha256


class MerkleFrontier:
    """Append event hashes (hex); `root()` is the RFC 6962 tree hash of all appended so far."""

    __slots__ = ("_stack", "count")

    def __init__(self) -> None:
        # (subtree size, subtree root bytes), sizes strictly decreasing powers of two
        self._stack: list[tuple[int, bytes]] = []
        self.count = 0

    def append(self, event_hash_hex: str) -> None:
        self.append_digest(bytes.fromhex(event_hash_hex))

    def append_digest(self, event_hash: bytes) -> None:
        """`append` of the hash's 32 bytes."""
        node = _sha256(b"\x00" + event_hash).digest()
        size = 1
        stack = self._stack
        while stack and stack[-1][0] == size:
            _, left = stack.pop()
            node = _sha256(b"\x01" + left + node).digest()
            size *= 2
        stack.append((size, node))
        self.count += 1

    def root(self) -> str:
        if not self._stack:
            return EMPTY_ROOT
        node = self._stack[-1][1]
        for _, left in reversed(self._stack[:-1]):
            node = _sha256(b"\x01" + left + node).digest()
        return node.hex()


def merkle_root(event_hashes: Iterable[str]) -> str:
    """Reference (recursive, RFC 6962 text) root of ``event_hashes``; for tests and spot checks."""
    leaves = [_sha256(b"\x00" + bytes.fromhex(h)).digest() for h in event_hashes]

    def mth(nodes: list[bytes]) -> bytes:
        if len(nodes) == 1:
            return nodes[0]
        k = 1
        while k * 2 < len(nodes):
            k *= 2
        return _sha256(b"\x01" + mth(nodes[:k]) + mth(nodes[k:])).digest()

    return mth(leaves).hex() if leaves else EMPTY_ROOT
