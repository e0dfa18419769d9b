"""The stored audit event, schema version 1: exact fields per type, line form, strict parsing.

Shared by the writer (which builds events from these field lists and renders them with `render`)
and the verifier (which parses with `strict_loads` and checks with `check_event`). Event types:

    genesis     first line of a log: log_id (UUIDv4) names this install's log, key_id of the signer
    segment     first line of every later segment: links to the previous segment's head hash
    call        one tools/call, resource read or prompt get (DESIGN.md "Audit event" + type, kind)
    lifecycle   gateway start/stop, policy reload, pin change, upstream start/crash/..., recovery
    checkpoint  count, head hash, RFC 6962 Merkle root of all earlier event hashes, signature

A stored line is ``canonical_json(event without hash)`` with ``,"hash":"<hex>"`` spliced in before
the closing brace, then ``\\n``; ``hash`` is the SHA-256 of the canonical bytes. The verifier
re-renders every event and compares bytes, so any edit (even whitespace) is caught.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable
from typing import Any

from checkrein.canonical import canonical_json_built

__all__ = [
    "CALL_FIELDS",
    "GENESIS_HASH",
    "MAX_LINE_BYTES",
    "SCHEMA_VERSION",
    "EventError",
    "check_event",
    "render",
    "render_digest",
    "strict_loads",
]

SCHEMA_VERSION = 1
GENESIS_HASH = "0" * 64
MAX_LINE_BYTES = 1024 * 1024
"""No event line is longer (the writer bounds every free-form field to stay far below)."""

OUTCOMES = ("ok", "denied", "error", "timeout", "not_found")
KINDS = ("tool", "resource", "prompt", "completion", "subscribe", "unsubscribe", "list", "sampling", "elicitation", "roots")
CHECKPOINT_REASONS = ("count", "timer", "shutdown", "rotation")

_HEX64 = re.compile(r"[0-9a-f]{64}\Z")
_UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\Z")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z\Z")


class EventError(ValueError):
    """A line or event breaks the schema; the message says which field and how."""


def render(body: dict[str, Any]) -> tuple[bytes, str]:
    """(stored line including the newline, hash hex) of an event given without ``hash``.
    ``body`` holds plain JSON types with finite floats only (the writer builds it so; the verifier
    parses it with `strict_loads`), which `canonical_json_built` requires."""
    line, h, _ = render_digest(body)
    return line, h


def render_digest(body: dict[str, Any]) -> tuple[bytes, str, bytes]:
    """`render` plus the hash's 32 bytes (the Merkle leaf's input): one canonical encoding and
    one SHA-256 give the digest, the hex and the line."""
    raw = canonical_json_built(body)
    digest = hashlib.sha256(raw).digest()
    h = digest.hex()
    if raw == b"{}":
        return b'{"hash":"' + h.encode() + b'"}\n', h, digest
    return b"".join((raw[:-1], b',"hash":"', h.encode(), b'"}\n')), h, digest


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise EventError(f"duplicate JSON key {k!r}")
        out[k] = v
    return out


def _finite(s: str) -> float:
    f = float(s)
    if not math.isfinite(f):
        raise EventError(f"non-finite number {s[:20]!r}")
    return f


def _reject_constant(s: str) -> Any:
    raise EventError(f"non-finite number {s!r}")


def strict_loads(line: bytes) -> Any:
    """Parse one stored line: UTF-8, no duplicate keys, no NaN/Infinity. Raises ``EventError``."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EventError(f"not valid UTF-8 at byte {exc.start}") from None
    try:
        return json.loads(
            text, object_pairs_hook=_no_duplicates, parse_float=_finite, parse_constant=_reject_constant
        )
    except EventError:
        raise
    except RecursionError:
        raise EventError("JSON nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, and int strings beyond Python's digit limit
        raise EventError(f"not valid JSON: {str(exc)[:120]}") from None


# --- field checkers: each returns an error text or None -------------------------------------------

Check = Callable[[Any], str | None]


def _is(tp: type | tuple[type, ...], what: str) -> Check:
    def check(v: Any) -> str | None:
        if isinstance(v, bool) and bool not in (tp if isinstance(tp, tuple) else (tp,)):
            return f"must be {what}"
        return None if isinstance(v, tp) else f"must be {what}"

    return check


def _optional(inner: Check) -> Check:
    return lambda v: None if v is None else inner(v)


def _regex(rx: re.Pattern[str], what: str) -> Check:
    return lambda v: None if isinstance(v, str) and rx.match(v) else f"must be {what}"


def _one_of(values: tuple[str, ...]) -> Check:
    return lambda v: None if isinstance(v, str) and v in values else f"must be one of {', '.join(values)}"


def _nonneg_int(v: Any) -> str | None:
    return None if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else "must be an integer >= 0"


def _number(v: Any) -> str | None:
    ok = isinstance(v, int | float) and not isinstance(v, bool) and v >= 0
    return None if ok else "must be a number >= 0"


def _str_list(v: Any) -> str | None:
    ok = isinstance(v, list) and all(isinstance(x, str) for x in v)
    return None if ok else "must be a list of strings"


def _any_json(v: Any) -> str | None:
    return None


def _object(fields: dict[str, Check]) -> Check:
    def check(v: Any) -> str | None:
        if not isinstance(v, dict):
            return "must be an object"
        return _check_fields(v, fields)

    return check


def _check_fields(obj: dict[str, Any], fields: dict[str, Check]) -> str | None:
    if obj.keys() != fields.keys():
        missing = sorted(fields.keys() - obj.keys())
        extra = sorted(obj.keys() - fields.keys())
        parts = ([f"missing {missing}"] if missing else []) + ([f"unexpected {extra}"] if extra else [])
        return "fields: " + "; ".join(parts)
    for name, check in fields.items():
        err = check(obj[name])
        if err is not None:
            return f"{name} {err}"
    return None


_str = _is(str, "a string")
_opt_str = _optional(_str)
_hex64 = _regex(_HEX64, "64 lowercase hex digits")
_uuid4 = _regex(_UUID4, "a lowercase UUIDv4")
_time = _regex(_TIME, "an RFC 3339 UTC time with microseconds (YYYY-MM-DDTHH:MM:SS.ffffffZ)")

_COMMON: dict[str, Check] = {
    "schema_version": lambda v: None if v == SCHEMA_VERSION and not isinstance(v, bool) else "must be 1",
    "seq": _nonneg_int,
    "event_id": _uuid4,
    "time": _time,
    "type": _str,
    "prev_hash": _hex64,
    "hash": _hex64,
}

_IDENTITY = _object({"user": _str, "roles": _str_list, "source": _str, "client": _opt_str})
_DECISION = _object(
    {"effect": _str, "rule_id": _str, "reasons": _str_list, "risk": _str, "approval": _optional(_is(dict, "an object"))}
)
_RESULT = _optional(_object({"size_bytes": _nonneg_int, "sha256": _hex64, "summary": _any_json, "flags": _str_list}))

TYPE_FIELDS: dict[str, dict[str, Check]] = {
    "genesis": {
        "log_id": _uuid4,
        "key_id": _optional(_regex(re.compile(r"[0-9a-f]{16}\Z"), "16 hex digits")),
        "software": _str,
    },
    "segment": {
        "log_id": _uuid4,
        "segment": lambda v: None if isinstance(v, int) and not isinstance(v, bool) and v >= 2 else "must be >= 2",
        "prev_segment_head": _hex64,
    },
    "call": {
        "kind": _one_of(KINDS),
        "trace_id": _str,
        "span_id": _str,
        "parent_span_id": _opt_str,
        "session_id": _str,
        "identity": _IDENTITY,
        "model": _opt_str,
        "server": _str,
        "tool": _str,
        "exposed_name": _str,
        "tool_digest": _opt_str,
        "args_sha256": _hex64,
        "args_preview": _any_json,
        "decision": _DECISION,
        "outcome": _one_of(OUTCOMES),
        "error_code": _opt_str,
        "duration_ms": _number,
        "result": _RESULT,
        "redactions": _str_list,
        "degraded": _str_list,
    },
    "lifecycle": {
        "event": _regex(re.compile(r"[a-z][a-z0-9_.-]{0,63}\Z"), "a dotted lowercase name"),
        "fields": _is(dict, "an object"),
        "redactions": _str_list,
        "degraded": _str_list,
    },
    "checkpoint": {
        "log_id": _uuid4,
        "count": _nonneg_int,
        "head_hash": _hex64,
        "merkle_root": _hex64,
        "reason": _one_of(CHECKPOINT_REASONS),
        "key_id": _optional(_regex(re.compile(r"[0-9a-f]{16}\Z"), "16 hex digits")),
        "signature": _optional(_regex(re.compile(r"[0-9a-f]{128}\Z"), "128 hex digits")),
    },
}

CALL_FIELDS = tuple(TYPE_FIELDS["call"])
_FULL = {t: {**_COMMON, **f} for t, f in TYPE_FIELDS.items()}


def check_event(obj: Any) -> str | None:
    """None when ``obj`` is exactly a schema-1 event of a known type, else the first problem."""
    if not isinstance(obj, dict):
        return "event is not a JSON object"
    version = obj.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        return f"schema_version {version} is newer than this checkrein understands ({SCHEMA_VERSION})"
    kind = obj.get("type")
    if not isinstance(kind, str) or kind not in _FULL:
        return f"unknown event type {str(kind)[:40]!r}"
    return _check_fields(obj, _FULL[kind])
