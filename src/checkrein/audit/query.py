"""The read side: `query_events`, `audit_stats`, `follow_events` (behind `checkrein audit ...`).

Queries use the SQLite index when it exists and fall back to scanning the JSONL segments (the
source of truth) when it does not. Nothing here writes.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from checkrein.errors import AuditError

from .event import format_time
from .segments import INDEX_FILE, iter_lines, list_segments

__all__ = ["EventFilter", "audit_stats", "follow_events", "parse_since", "query_events"]

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(s|m|h|d)\Z")


def parse_since(text: str, *, now: float | None = None) -> str:
    """``--since`` as a stored-time string: an RFC 3339 time/date or a duration back from now
    (``90s``, ``15m``, ``2h``, ``7d``). Raises ``ValueError`` with a readable message."""
    text = text.strip()
    m = _DURATION.match(text)
    if m:
        unit = {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
        return format_time((time.time() if now is None else now) - float(m.group(1)) * unit)
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--since {text!r}: expected an RFC 3339 time (2026-11-30T20:00:00Z) or a duration (15m, 2h, 7d)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return format_time(dt.astimezone(UTC).timestamp())


@dataclass(frozen=True)
class EventFilter:
    trace: str | None = None
    session: str | None = None
    tool: str | None = None
    """Glob over the exposed name (``fs__*``) or the upstream tool name."""
    outcome: str | None = None
    since: str | None = None
    """Stored-time string (see `parse_since`); events at or after it."""
    calls_only: bool = False

    def matches(self, e: dict[str, Any]) -> bool:
        if self.calls_only and e.get("type") != "call":
            return False
        if self.since is not None and str(e.get("time", "")) < self.since:
            return False
        if self.trace is not None and e.get("trace_id") != self.trace:
            return False
        if self.session is not None and e.get("session_id") != self.session:
            return False
        if self.outcome is not None and e.get("outcome") != self.outcome:
            return False
        if self.tool is not None:
            names = (str(e.get("exposed_name", "")), str(e.get("tool", "")))
            if not any(fnmatchcase(n, self.tool) for n in names):
                return False
        return True


def _require_dir(directory: Path) -> None:
    if not directory.is_dir():
        raise AuditError(f"{directory}: no such audit directory", code="audit.not_found")
    if not list_segments(directory):
        raise AuditError(f"{directory}: no audit segments in this directory", code="audit.not_found")


def query_events(directory: Path, flt: EventFilter, *, limit: int | None = None) -> list[dict[str, Any]]:
    """Events matching ``flt`` in seq order (the last ``limit`` of them when given). Raises
    ``AuditError`` for a missing directory."""
    _require_dir(directory)
    index = directory / INDEX_FILE
    if index.exists():
        try:
            return _query_sqlite(index, flt, limit)
        except sqlite3.Error:
            pass  # fall through to the source of truth
    out = [e for e in _scan(directory) if flt.matches(e)]
    return out[-limit:] if limit else out


def _query_sqlite(index: Path, flt: EventFilter, limit: int | None) -> list[dict[str, Any]]:
    where: list[str] = []
    params: list[Any] = []
    if flt.calls_only or flt.trace or flt.session or flt.outcome or flt.tool:
        where.append("type = 'call'")
    for column, value in (("trace_id", flt.trace), ("session_id", flt.session), ("outcome", flt.outcome)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if flt.since is not None:
        where.append("time >= ?")
        params.append(flt.since)
    if flt.tool is not None:
        where.append("(exposed_name GLOB ? OR tool GLOB ?)")
        params += [flt.tool, flt.tool]
    sql = "SELECT line FROM events" + (" WHERE " + " AND ".join(where) if where else "")
    if limit:
        sql = f"SELECT line FROM ({sql} ORDER BY seq DESC LIMIT ?) ORDER BY json_extract(line, '$.seq')"
        params.append(limit)
    else:
        sql += " ORDER BY seq"
    db = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        return [json.loads(row[0]) for row in db.execute(sql, params)]
    finally:
        db.close()


def _scan(directory: Path) -> Iterator[dict[str, Any]]:
    for _, line in iter_lines(directory):
        try:
            obj = json.loads(line)
        except ValueError:
            continue  # `verify` reports damage; reading shows what can be read
        if isinstance(obj, dict):
            yield obj


def _percentile(sorted_values: list[float], p: float) -> float:
    if not sorted_values:
        return 0.0
    k = max(0, min(len(sorted_values) - 1, int(round(p / 100 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[k]


def audit_stats(directory: Path, flt: EventFilter | None = None) -> dict[str, Any]:
    """Calls by kind and outcome, denials by rule, errors by code, p50/p99 duration per tool, and
    every degradation counted (per-call `degraded` names and the trail's own lifecycle events)."""
    _require_dir(directory)
    flt = flt or EventFilter()
    calls: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    denials: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    degraded: Counter[str] = Counter()
    lifecycle: Counter[str] = Counter()
    durations: dict[str, list[float]] = defaultdict(list)
    trail: Counter[str] = Counter()
    events = checkpoints = 0
    first = last = None
    for e in _scan(directory):
        events += 1
        kind = e.get("type")
        if kind == "checkpoint":
            checkpoints += 1
        if kind == "lifecycle":
            name = str(e.get("event"))
            lifecycle[name] += 1
            raw_fields = e.get("fields")
            fields: dict[str, Any] = raw_fields if isinstance(raw_fields, dict) else {}
            if name == "audit.resumed":
                for k in ("rejected_unwritable", "failed_open", "dropped"):
                    if isinstance(fields.get(k), int):
                        trail[k] += fields[k]
                trail["outages"] += 1
            elif name == "audit.recovery":
                trail["recoveries"] += 1
                if isinstance(fields.get("cut_bytes"), int):
                    trail["recovered_cut_bytes"] += fields["cut_bytes"]
        if kind != "call" or not flt.matches(e):
            continue
        first = first or e.get("time")
        last = e.get("time")
        calls[str(e.get("kind"))] += 1
        outcome = str(e.get("outcome"))
        outcomes[outcome] += 1
        raw_decision = e.get("decision")
        decision: dict[str, Any] = raw_decision if isinstance(raw_decision, dict) else {}
        if outcome == "denied":
            denials[str(decision.get("rule_id") or e.get("error_code") or "?")] += 1
        if outcome in ("error", "timeout", "not_found"):
            errors[str(e.get("error_code") or outcome)] += 1
        for d in e.get("degraded") or ():
            degraded[str(d)] += 1
        dur = e.get("duration_ms")
        if isinstance(dur, int | float):
            durations[str(e.get("exposed_name"))].append(float(dur))
    per_tool = {}
    for tool, values in sorted(durations.items()):
        values.sort()
        per_tool[tool] = {"calls": len(values), "p50_ms": _percentile(values, 50), "p99_ms": _percentile(values, 99)}
    return {
        "events": events,
        "checkpoints": checkpoints,
        "calls": sum(calls.values()),
        "calls_by_kind": dict(calls),
        "outcomes": dict(outcomes),
        "denials_by_rule": dict(denials.most_common()),
        "errors_by_code": dict(errors.most_common()),
        "duration_by_tool": per_tool,
        "degraded": dict(degraded.most_common()),
        "trail": dict(trail),
        "lifecycle": dict(lifecycle.most_common()),
        "first_call": first,
        "last_call": last,
    }


def follow_events(
    directory: Path,
    *,
    last: int = 10,
    follow: bool = True,
    timeout_s: float | None = None,
    poll_s: float = 0.2,
    stop: Callable[[], bool] | None = None,
) -> Iterator[dict[str, Any]]:
    """The last ``last`` events, then (with ``follow``) each new complete line as it is written,
    across segment rotations, until ``timeout_s`` passes or ``stop()`` is true."""
    _require_dir(directory)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    segments = list_segments(directory)
    seg_index, path = segments[-1]
    tail: list[dict[str, Any]] = []
    for e in _scan(directory):
        tail.append(e)
        if len(tail) > last:
            tail.pop(0)
    yield from tail
    if not follow:
        return
    # Lines written after this point are followed; a partial line waits for its newline.
    offset = path.stat().st_size
    buf = b""
    while True:
        with path.open("rb") as f:
            f.seek(offset)
            data = f.read()
        offset += len(data)
        buf += data
        *complete, buf = buf.split(b"\n")
        for line in complete:
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                yield obj
        newer = [s for s in list_segments(directory) if s[0] > seg_index]
        if newer and not data:
            seg_index, path = newer[0]
            offset, buf = 0, b""
            continue
        if (deadline is not None and time.monotonic() >= deadline) or (stop is not None and stop()):
            return
        if not data:
            time.sleep(poll_s)
