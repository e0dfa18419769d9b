"""Canonical JSON: sorted keys, compact separators, UTF-8, no NaN/Infinity.

The same value gives the same bytes (and so the same SHA-256) on every machine. Used wherever
something is hashed: tool definitions, arguments, audit events, policy files.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical_json", "digest", "sha256_hex"]


def canonical_json(value: Any) -> bytes:
    """Return the canonical UTF-8 bytes of ``value``.

    Raises ``ValueError`` for NaN or infinite floats and ``TypeError`` for values JSON cannot hold.
    """
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``value``."""
    return "sha256:" + sha256_hex(canonical_json(value))
