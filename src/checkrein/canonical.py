"""Canonical JSON: sorted keys, compact separators, UTF-8, no NaN/Infinity.

The same value gives the same bytes (and so the same SHA-256) on every machine. Used wherever
something is hashed: tool definitions, arguments, audit events, policy files.

The definition is the standard library's ``json.dumps(value, sort_keys=True, separators=(",",
":"), ensure_ascii=False, allow_nan=False)`` encoded as UTF-8. ``orjson`` (a C encoder, ~10x
faster) is used when it provably gives the same bytes; otherwise the reference runs, so results
and errors are always exactly the reference's. Where the two can differ, and the guard:

* orjson writes NaN/Infinity as ``null`` and serializes ``UUID``, ``Enum`` and ``Fragment``
  values that ``json`` refuses: `canonical_json` parses its output back and requires it to equal
  the input (``None``/``str`` never equal ``nan``/``UUID``/...); `canonical_json_built` skips
  that check for values built only from plain JSON types with finite floats (audit events);
* subclasses of ``str``/``int``/``dict``/``list``, dataclasses and datetimes: passed through to
  a ``default`` that refuses them, so the reference handles them;
* floats below 1e-4 in magnitude (``0.00001`` vs ``1e-05``, ``1e-7`` vs ``1e-07``): any output
  holding ``0.0000`` or a one-digit negative exponent goes to the reference (larger floats are
  formatted identically: both print the shortest round-trip repr);
* anything orjson refuses (non-``str`` keys, integers beyond 64 bits, lone surrogates, nesting
  deeper than 255) goes to the reference, which converts, succeeds or raises as it always did.

`tests/audit/test_canonical.py` checks byte equality and equal errors against the reference with
Hypothesis.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import orjson

__all__ = ["Canonical", "canonical_json", "canonical_json_built", "digest", "sha256_hex"]

_OPTIONS = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
)
# Small floats orjson formats unlike `float.__repr__`: 1e-5 <= |x| < 1e-4 ("0.0000...") and
# one-digit negative exponents ("7e-6" where repr writes "7e-06"). Text matching this only costs
# the slow path. A number token ends at `,`, `}`, `]` or the end of the output; the pattern starts
# with a literal so `re` can skip ahead with a fast search.
_ONE_DIGIT_EXPONENT = re.compile(rb"e-[0-9](?:[,}\]]|\Z)")


# A number token orjson wrote as "0.0000...": it ends where the token does (`,`, `}`, `]` or the end
# of the output; compact output has no spaces), which text inside a string such as a timestamp
# ("...:10.000012Z") does not, so those no longer take the slow path.
_ZERO_RUN = re.compile(rb"0\.0000[0-9]*(?:[eE][-+]?[0-9]+)?(?:[,}\]]|\Z)")


def _maybe_small_float(out: bytes) -> bool:
    if b"0.0000" in out and _ZERO_RUN.search(out) is not None:
        return True
    if _ONE_DIGIT_EXPONENT.search(out) is None:  # the usual answer, without a generator per call
        return False
    return any(out[m.start() - 1] in b"0123456789" for m in _ONE_DIGIT_EXPONENT.finditer(out) if m.start())


class _Refused(Exception):
    pass


def _refuse(value: Any) -> Any:
    raise _Refused


def _reference(value: Any, default: Any = None) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False,
        default=default,
    ).encode("utf-8")


class Canonical:
    """Bytes already produced by `canonical_json`, to embed verbatim in a `canonical_json_built`
    value (e.g. a preview that is exactly the arguments just hashed)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


def _embed_fast(value: Any) -> Any:
    if type(value) is Canonical:
        return orjson.Fragment(value.data)
    raise _Refused


def _embed_reference(value: Any) -> Any:
    if type(value) is Canonical:
        return json.loads(value.data)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _fast(value: Any, default: Any = _refuse) -> bytes | None:
    """orjson's bytes when they match the reference's format, else None (value not yet checked)."""
    try:
        out = orjson.dumps(value, default=default, option=_OPTIONS)
    except (orjson.JSONEncodeError, _Refused):
        return None
    if _maybe_small_float(out):
        return None
    return out


def canonical_json(value: Any) -> bytes:
    """Return the canonical UTF-8 bytes of ``value``.

    Raises ``ValueError`` for NaN or infinite floats and ``TypeError`` for values JSON cannot hold.
    """
    out = _fast(value)
    if out is not None and orjson.loads(out) == value:
        return out
    return _reference(value)


def canonical_json_built(value: Any) -> bytes:
    """`canonical_json` of a value the caller built from ``dict``, ``list``, ``str``, ``int``,
    ``bool``, ``None``, finite ``float`` and ``Canonical(canonical_json(x))`` only (the audit
    writer's events): same bytes as for the value with each ``Canonical`` replaced by its ``x``,
    without the parse-back check those types make unnecessary."""
    out = _fast(value, _embed_fast)
    return out if out is not None else _reference(value, _embed_reference)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``value``."""
    return "sha256:" + sha256_hex(canonical_json(value))
