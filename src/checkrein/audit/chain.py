"""The hash chain: assigns ``seq`` and ``prev_hash``, renders lines, and makes checkpoints.

Single-threaded by contract (only the trail's writer calls it). `seal` is the hot path: one
canonical serialization, one SHA-256 and one Merkle append per event.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

from .event import format_time, new_event_id
from .merkle import MerkleFrontier
from .proofs import MerkleTree
from .schema import GENESIS_HASH, SCHEMA_VERSION, render_digest
from .signing import CheckpointSigner

__all__ = ["Chain"]

try:
    _SOFTWARE = f"checkrein {metadata.version('checkrein')}"
except metadata.PackageNotFoundError:  # running from a source tree without installing
    _SOFTWARE = "checkrein"


class Chain:
    def __init__(
        self,
        *,
        log_id: str,
        next_seq: int,
        head_hash: str | None,
        hashes: list[str],
        signer: CheckpointSigner | None,
        tree: MerkleTree | None = None,
    ) -> None:
        self.log_id = log_id
        self.next_seq = next_seq
        self.head = head_hash or GENESIS_HASH
        # The whole tree when checkpoints are published (proofs need its nodes), else the
        # O(log n) frontier: the same roots either way.
        self.tree = tree
        self.frontier = MerkleFrontier()
        if tree is None:
            for h in hashes:
                self.frontier.append(h)
        else:
            for h in hashes:
                tree.append(bytes.fromhex(h))
        self.signer = signer
        self.since_checkpoint = 0

    def seal(self, body: dict[str, Any]) -> tuple[bytes, str, int]:
        """Give ``body`` its place in the chain (mutates ``body``: it is the trail's own dict).
        Returns (line, hash, seq)."""
        seq = self.next_seq
        body["seq"] = seq
        body["prev_hash"] = self.head
        line, h, digest = render_digest(body)
        self.next_seq = seq + 1
        self.head = h
        if self.tree is None:
            self.frontier.append_digest(digest)
        else:
            self.tree.append(digest)
        self.since_checkpoint += 1
        return line, h, seq

    def genesis(self, now: float) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "event_id": new_event_id(),
            "time": format_time(now),
            "type": "genesis",
            "log_id": self.log_id,
            "key_id": self.signer.key_id if self.signer else None,
            "software": _SOFTWARE,
        }

    def segment_link(self, index: int, now: float) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "event_id": new_event_id(),
            "time": format_time(now),
            "type": "segment",
            "log_id": self.log_id,
            "segment": index,
            "prev_segment_head": self.head,
        }

    def checkpoint(self, reason: str, now: float) -> dict[str, Any]:
        """A checkpoint over every event sealed so far (count = its own seq)."""
        body: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "event_id": new_event_id(),
            "time": format_time(now),
            "type": "checkpoint",
            "log_id": self.log_id,
            "seq": self.next_seq,
            "count": self.frontier.count if self.tree is None else self.tree.size,
            "head_hash": self.head,
            "merkle_root": self.frontier.root() if self.tree is None else self.tree.root().hex(),
            "reason": reason,
            "key_id": self.signer.key_id if self.signer else None,
            "signature": None,
        }
        if self.signer is not None:
            body["signature"] = self.signer.sign(body)
        self.since_checkpoint = -1  # the checkpoint itself is sealed next and must not count
        return body

    @staticmethod
    def new_log_id() -> str:
        return new_event_id()
