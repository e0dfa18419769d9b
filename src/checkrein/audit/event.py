"""Build stored-event bodies (before chaining) from the gate's raw records.

`EventFactory` turns a `CallRecord` or `LifecycleRecord` into a schema-1 body without ``seq``,
``prev_hash`` and ``hash`` (the chain assigns those in write order). A preview that needs no
masking is held as `checkrein.canonical.Canonical` of the bytes it was checked on, which
`canonical_json_built` (the writer's renderer) embeds verbatim. Every free-form value goes
through the `Redactor`, so nothing secret and nothing unbounded reaches the log. The caller's
objects are only read, never changed.
"""

from __future__ import annotations

import hashlib
import math
import os
import time
from collections.abc import Iterable
from typing import Any

from checkrein.canonical import Canonical, canonical_json

from .record import CallRecord, LifecycleRecord
from .redact import Redactor
from .schema import KINDS, OUTCOMES, SCHEMA_VERSION

__all__ = ["EventFactory", "format_time", "new_event_id"]

_MAX_SHORT = 256
_MAX_REASON = 1024
_MAX_LIST = 32

_last_second: list[Any] = [None, ""]


def format_time(t: float) -> str:
    """RFC 3339 UTC with microseconds, e.g. ``2026-11-30T20:41:07.123456Z``."""
    sec = int(t)
    micros = int(round((t - sec) * 1_000_000))
    if micros >= 1_000_000:
        sec, micros = sec + 1, micros - 1_000_000
    cache = _last_second
    if cache[0] != sec:  # formatting the date part is the slow bit; calls share seconds
        cache[1] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))
        cache[0] = sec
    return f"{cache[1]}.{micros:06d}Z"


_random_pool: list[str] = []
# A forked child must not hand out the ids its parent will also use.
os.register_at_fork(after_in_child=_random_pool.clear)


def new_event_id() -> str:
    """A random (version 4, RFC 4122 variant) UUID, formatted; cheaper than ``str(uuid.uuid4())``:
    one ``os.urandom`` call serves 256 ids (the syscall dominated on a loaded VM). Thread-safe
    under the GIL: ``list.pop`` is atomic, and a refill race only wastes random bytes."""
    pool = _random_pool
    try:
        h = pool.pop()
    except IndexError:
        block = os.urandom(16 * 256).hex()
        pool.extend(block[i : i + 32] for i in range(0, len(block), 32))
        h = pool.pop()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"


def _short(value: Any, limit: int = _MAX_SHORT) -> str:
    if type(value) is str and len(value) <= limit:
        return value
    s = value if isinstance(value, str) else str(value)
    return s if len(s) <= limit else s[:limit] + "…"


def _opt_short(value: Any) -> str | None:
    return None if value is None else _short(value)


class EventFactory:
    """Pure apart from ids: same record and time give the same body except ``event_id``."""

    def __init__(self, redactor: Redactor) -> None:
        self._r = redactor

    def finder_failures(self) -> int:
        return self._r.finder_failures

    def call(self, rec: CallRecord, now: float, extra_degraded: Iterable[str] = ()) -> dict[str, Any]:
        r = self._r
        degraded = [_short(d) for d in rec.degraded[:_MAX_LIST]]
        degraded.extend(extra_degraded)
        try:
            args_bytes = canonical_json(rec.arguments)
        except (TypeError, ValueError):
            # Not JSON (or NaN): still hash something stable, and say the digest is not canonical.
            args_bytes = canonical_json(_jsonable(rec.arguments))
            degraded.append("audit.args_not_canonical")
        masked = frozenset(rec.redactions)
        redactions: list[str] = []
        preview: Any
        # The policy's secrets analyzer already read the values (its hits are in `masked`): only
        # the built-in patterns and the keys are left to check. Not for arguments it did not see.
        scanned = rec.args_scanned is True and "audit.args_not_canonical" not in degraded
        if not masked and "audit.args_not_canonical" not in degraded and r.fits_whole(args_bytes, rec.arguments, scanned=scanned):
            # Stored as the very bytes just hashed and checked: no copy, no second serialization.
            preview = Canonical(args_bytes)
        else:
            preview, redactions = r.preview(
                rec.arguments, "/args_preview", masked=masked, scan=r.may_hold_secrets(args_bytes), scanned=scanned
            )

        result: dict[str, Any] | None = None
        if rec.result is not None:
            try:
                res_bytes = canonical_json(rec.result)
            except (TypeError, ValueError):
                res_bytes = canonical_json(_jsonable(rec.result))
                degraded.append("audit.result_not_canonical")
            summary: Any
            if "audit.result_not_canonical" not in degraded and r.fits_whole(res_bytes, rec.result):
                summary = Canonical(res_bytes)
            else:
                summary, res_red = r.preview(rec.result, "/result/summary", scan=r.may_hold_secrets(res_bytes))
                redactions.extend(res_red)
            result = {
                "size_bytes": len(res_bytes),
                "sha256": hashlib.sha256(res_bytes).hexdigest(),
                "summary": summary,
                "flags": [_short(f) for f in rec.result_flags[:_MAX_LIST]],
            }

        ident = rec.identity if isinstance(rec.identity, dict) else {}
        roles = ident.get("roles") or ()
        dec = rec.decision if isinstance(rec.decision, dict) else {}
        approval = dec.get("approval")
        if approval is not None:
            approval, ap_red = r.preview(approval if isinstance(approval, dict) else {"value": approval}, "/decision/approval")
            redactions.extend(ap_red)
        reasons: list[str] = []
        for i, reason in enumerate(list(dec.get("reasons") or ())[:_MAX_LIST]):
            text, hit = r.mask_text(_short(reason, _MAX_REASON))
            if hit:
                redactions.append(f"/decision/reasons/{i}")
            reasons.append(text[:_MAX_REASON])
        kind = rec.kind if rec.kind in KINDS else "tool"
        outcome = rec.outcome if rec.outcome in OUTCOMES else "error"
        duration = rec.duration_ms if isinstance(rec.duration_ms, (int, float)) and rec.duration_ms >= 0 else 0.0
        if duration != duration or duration == float("inf"):
            duration = 0.0
        return {
            "schema_version": SCHEMA_VERSION,
            "event_id": new_event_id(),
            "time": format_time(now),
            "type": "call",
            "kind": kind,
            "trace_id": _short(rec.trace_id),
            "span_id": _short(rec.span_id),
            "parent_span_id": _opt_short(rec.parent_span_id),
            "session_id": _short(rec.session_id),
            "identity": {
                "user": _short(ident.get("user", "")),
                "roles": [_short(x) for x in list(roles)[:_MAX_LIST]],
                "source": _short(ident.get("source", "")),
                "client": _opt_short(ident.get("client")),
            },
            "model": _opt_short(rec.model),
            "server": _short(rec.server),
            "tool": _short(rec.tool),
            "exposed_name": _short(rec.exposed_name),
            "tool_digest": _opt_short(rec.tool_digest),
            "args_sha256": hashlib.sha256(args_bytes).hexdigest(),
            "args_preview": preview,
            "decision": {
                "effect": _short(dec.get("effect", "")),
                "rule_id": _short(dec.get("rule_id", "")),
                "reasons": reasons,
                "risk": _short(dec.get("risk", "unknown")),
                "approval": approval,
            },
            "outcome": outcome,
            "error_code": _opt_short(rec.error_code),
            "duration_ms": round(float(duration), 3),
            "result": result,
            "redactions": redactions,
            "degraded": degraded,
        }

    def lifecycle(self, rec: LifecycleRecord, now: float, extra_degraded: Iterable[str] = ()) -> dict[str, Any]:
        fields, redactions = self._r.preview(dict(rec.fields), "/fields")
        return self.lifecycle_body(_lifecycle_name(rec.event), fields, now, redactions, list(extra_degraded))

    @staticmethod
    def lifecycle_body(
        name: str, fields: dict[str, Any], now: float, redactions: list[str] | None = None,
        degraded: list[str] | None = None,
    ) -> dict[str, Any]:
        """A lifecycle body from already-safe ``fields`` (the trail's own events: counts, digests)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "event_id": new_event_id(),
            "time": format_time(now),
            "type": "lifecycle",
            "event": name,
            "fields": fields,
            "redactions": redactions or [],
            "degraded": degraded or [],
        }

    def fallback_call(self, rec: CallRecord, now: float, error: str) -> dict[str, Any]:
        """Minimal body when building the full one failed: identifies the call, stores no values."""
        return {
            "schema_version": SCHEMA_VERSION,
            "event_id": new_event_id(),
            "time": format_time(now),
            "type": "call",
            "kind": "tool",
            "trace_id": _short(getattr(rec, "trace_id", "")),
            "span_id": _short(getattr(rec, "span_id", "")),
            "parent_span_id": None,
            "session_id": _short(getattr(rec, "session_id", "")),
            "identity": {"user": "", "roles": [], "source": "", "client": None},
            "model": None,
            "server": _short(getattr(rec, "server", "")),
            "tool": _short(getattr(rec, "tool", "")),
            "exposed_name": _short(getattr(rec, "exposed_name", "")),
            "tool_digest": None,
            "args_sha256": hashlib.sha256(b"").hexdigest(),
            "args_preview": "[UNAVAILABLE]",
            "decision": {"effect": "", "rule_id": "", "reasons": [], "risk": "unknown", "approval": None},
            "outcome": getattr(rec, "outcome", "error") if getattr(rec, "outcome", None) in OUTCOMES else "error",
            "error_code": "audit.event_build_failed",
            "duration_ms": 0.0,
            "result": None,
            "redactions": ["/args_preview"],
            "degraded": ["audit.event_build_failed", _short(error, 120)],
        }


def _jsonable(value: Any, depth: int = 0) -> Any:
    """A JSON-safe stand-in for a value canonical JSON refused (its digest is then flagged
    ``audit.*_not_canonical``): keys become strings, non-finite floats and unknown objects their
    ``repr``, sets sorted lists."""
    if depth > 64:
        return "[TOO DEEP]"
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v, depth + 1) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((_jsonable(v, depth + 1) for v in value), key=repr)
    return repr(value)


def _lifecycle_name(name: str) -> str:
    allowed = "abcdefghijklmnopqrstuvwxyz0123456789._-"
    cleaned = "".join(c if c in allowed else "_" for c in str(name).lower())[:64]
    if not cleaned:
        return "unknown"
    return cleaned if cleaned[0].isalpha() else ("x" + cleaned)[:64]
