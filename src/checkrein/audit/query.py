"""The read side: `query_events`, `count_events`, `event_at`, `call_breakdown`, `call_values`,
`audit_stats`, `follow_events` (behind `checkrein audit ...` and `checkrein ui`).

Queries use the SQLite index when it exists and fall back to scanning the JSONL segments (the
source of truth) when it does not. Nothing here writes.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from checkrein.errors import AuditError

from .event import format_time
from .schema import OUTCOMES
from .segments import INDEX_FILE, iter_lines, list_segments
from .sqlite_index import SERVER_EXPR, USER_EXPR, events_at

__all__ = [
    "CallBreakdown",
    "CallValues",
    "EventFilter",
    "ToolLatency",
    "audit_stats",
    "call_breakdown",
    "call_values",
    "count_events",
    "event_at",
    "follow_events",
    "parse_since",
    "query_events",
    "stats_of_events",
]

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
    server: str | None = None
    user: str | None = None
    """The caller's ``identity.user``."""
    until: str | None = None
    """Stored-time string; events at or before it."""
    after_seq: int | None = None
    """Only events with a larger seq (a page cursor)."""
    before_seq: int | None = None
    """Only events with a smaller seq (a page cursor)."""
    rule: str | None = None
    """The decision's ``rule_id``."""

    def _calls_only(self) -> bool:
        return bool(self.calls_only or self.trace or self.session or self.outcome or self.tool or self.server
                    or self.user or self.rule)

    def matches(self, e: dict[str, Any]) -> bool:
        if self._calls_only() and e.get("type") != "call":
            return False
        seq = e.get("seq")
        if self.after_seq is not None and not (isinstance(seq, int) and seq > self.after_seq):
            return False
        if self.before_seq is not None and not (isinstance(seq, int) and seq < self.before_seq):
            return False
        if self.since is not None and str(e.get("time", "")) < self.since:
            return False
        if self.until is not None and str(e.get("time", "")) > self.until:
            return False
        if self.server is not None and e.get("server") != self.server:
            return False
        if self.rule is not None:
            decision = e.get("decision")
            if not isinstance(decision, dict) or decision.get("rule_id") != self.rule:
                return False
        if self.user is not None:
            ident = e.get("identity")
            if not isinstance(ident, dict) or ident.get("user") != self.user:
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


def query_events(
    directory: Path, flt: EventFilter, *, limit: int | None = None, first: bool = False
) -> list[dict[str, Any]]:
    """Events matching ``flt`` in seq order: the last ``limit`` of them when given (the first
    ``limit`` with ``first``). Raises ``AuditError`` for a missing directory."""
    _require_dir(directory)
    index = directory / INDEX_FILE
    if index.exists():
        try:
            return _query_sqlite(index, flt, limit, first)
        except sqlite3.Error:
            pass  # fall through to the source of truth
    out = [e for e in _scan(directory) if flt.matches(e)]
    if not limit:
        return out
    return out[:limit] if first else out[-limit:]


def count_events(
    directory: Path, flt: EventFilter, *, cap: int | None = None, budget_s: float | None = None
) -> int | None:
    """How many events match ``flt``: at most ``cap`` (counting stops there), or ``None`` when
    counting took longer than ``budget_s`` seconds (a filter no index serves, over a large log).
    Raises ``AuditError`` for a missing directory."""
    _require_dir(directory)
    deadline = None if budget_s is None else time.monotonic() + budget_s
    index = directory / INDEX_FILE
    if index.exists():
        try:
            # `+seq`: an upper seq bound alone is checked on the rows the filter's own index gives
            # (as a rowid range SQLite read the table for it: the newest page's count of 100k
            # calls took 20.6 instead of 13.0 ms). A lower bound (a tail) stays a rowid range, and
            # so does a tool glob's, which reads rows either way (31.8 ms, 64.2 with `+seq`).
            plain = flt.after_seq is not None or flt.tool is not None
            where, params = _where(flt, seq="seq" if plain else "+seq")
            inner = "SELECT 1 FROM events" + where + (" LIMIT ?" if cap is not None else "")
            with _read_only(index) as db:
                if deadline is not None:
                    db.set_progress_handler(lambda: int(time.monotonic() > deadline), 20_000)
                try:
                    row = db.execute(f"SELECT COUNT(*) FROM ({inner})", [*params, *([cap] if cap is not None else [])]).fetchone()
                except sqlite3.OperationalError:
                    if deadline is not None and time.monotonic() > deadline:
                        return None  # interrupted by the progress handler: over budget
                    raise
            return int(row[0])
        except sqlite3.Error:
            pass  # fall through to the source of truth
    n = 0
    for i, e in enumerate(_scan(directory)):
        if deadline is not None and i % 1000 == 0 and time.monotonic() > deadline:
            return None
        if flt.matches(e):
            n += 1
            if cap is not None and n >= cap:
                break
    return n


def event_at(directory: Path, seq: int) -> dict[str, Any] | None:
    """The event with this seq, or ``None``. Raises ``AuditError`` for a missing directory."""
    found = query_events(directory, EventFilter(after_seq=seq - 1, before_seq=seq + 1), limit=1)
    return found[0] if found else None


@contextmanager
def _read_only(index: Path) -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(index.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        yield db
    finally:
        db.close()


def filter_sql(
    flt: EventFilter, placeholder: str = "?", time_cast: str = "", *, server: str = SERVER_EXPR, user: str = USER_EXPR,
    seq: str = "seq",
) -> tuple[list[str], list[Any]]:
    """SQL conditions and parameters for every field of ``flt`` but the tool glob (SQLite: ``?``
    and the index expressions for server and user, repeated verbatim so SQLite uses those indexes;
    Postgres: ``%s``, ``::timestamptz`` and its own columns)."""
    where: list[str] = []
    params: list[Any] = []
    # Only calls have a trace, session, outcome or rule: with one of those `type` is left out, so
    # an outcome count reads only its covering index. The partial indexes (server, user) need it
    # spelled out, and the tool column also holds lifecycle event names.
    implied = flt.trace or flt.session or flt.outcome or flt.rule
    if flt.tool or flt.server or flt.user or (flt.calls_only and not implied):
        where.append("type = 'call'")
    for column, value in (("trace_id", flt.trace), ("session_id", flt.session), ("outcome", flt.outcome),
                          (server, flt.server), (user, flt.user)):
        if value is not None:
            where.append(f"{column} = {placeholder}")
            params.append(value)
    if flt.rule is not None:
        # Every call has one of the few outcomes: spelled out, they let SQLite seek the
        # (outcome, rule_id) index once per outcome instead of scanning.
        where.append(f"outcome IN ({', '.join([placeholder] * len(OUTCOMES))}) AND rule_id = {placeholder}")
        params += [*OUTCOMES, flt.rule]
    for cond, bound in ((f"time >= {placeholder}{time_cast}", flt.since), (f"time <= {placeholder}{time_cast}", flt.until),
                        (f"{seq} > {placeholder}", flt.after_seq), (f"{seq} < {placeholder}", flt.before_seq)):
        if bound is not None:
            where.append(cond)
            params.append(bound)
    return where, params


def _where(flt: EventFilter, *, seq: str = "seq") -> tuple[str, list[Any]]:
    """The WHERE clause (with a leading space, or empty) of ``flt`` over the index."""
    where, params = filter_sql(flt, seq=seq)
    if flt.tool is not None:
        where.append("(exposed_name GLOB ? OR tool GLOB ?)")
        params += [flt.tool, flt.tool]
    return (" WHERE " + " AND ".join(where) if where else ""), params


_PLACE = "seq, segment, offset, length"
"""Where an event's line is: the index holds no copy of it (`events_at` reads the segment)."""


def _query_sqlite(index: Path, flt: EventFilter, limit: int | None, first: bool) -> list[dict[str, Any]]:
    where, params = _where(flt)
    if limit:
        # Pick the seqs first (from an index alone where one covers the filter), then read only
        # those lines: an index ordered by (outcome, rule_id) is not in seq order within an outcome.
        order = "ASC" if first else "DESC"
        sql = (f"SELECT {_PLACE} FROM events WHERE seq IN (SELECT seq FROM events{where} ORDER BY seq {order} LIMIT ?)"
               f" ORDER BY seq {order}")
        params.append(limit)
    else:
        sql = f"SELECT {_PLACE} FROM events" + where + " ORDER BY seq"
    with _read_only(index) as db:
        rows = db.execute(sql, params).fetchall()
    if limit and not first:
        rows.reverse()
    return events_at(index.parent, rows)


def _scan(directory: Path) -> Iterator[dict[str, Any]]:
    for _, line in iter_lines(directory):
        try:
            obj = json.loads(line)
        except ValueError:
            continue  # `verify` reports damage; reading shows what can be read
        if isinstance(obj, dict):
            yield obj


def _rank(n: int, p: float) -> int:
    """The 0-based rank of the nearest-rank ``p``-th percentile among ``n`` sorted values."""
    return max(0, min(n - 1, math.ceil(p * n / 100 - 1e-9) - 1))


def _percentile(sorted_values: list[float], p: float) -> float:
    return sorted_values[_rank(len(sorted_values), p)] if sorted_values else 0.0


def audit_stats(directory: Path, flt: EventFilter | None = None) -> dict[str, Any]:
    """Calls by kind and outcome, denials by rule, errors by code, p50/p99 duration per tool, and
    every degradation counted (per-call `degraded` names and the trail's own lifecycle events);
    ``registry`` is the metrics snapshot the last ``gateway.stop`` event recorded (as ``/stats``)."""
    _require_dir(directory)
    return stats_of_events(_scan(directory), flt)


def stats_of_events(source: Iterable[dict[str, Any]], flt: EventFilter | None = None) -> dict[str, Any]:
    """`audit_stats` over any stream of events in order (a directory, or Postgres across replicas)."""
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
    registry: dict[str, Any] = {}
    for e in source:
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
            elif name == "gateway.stop" and isinstance(fields.get("metrics"), dict):
                registry = fields["metrics"]  # the metrics registry as the last run closed it
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
        "registry": registry,
        "first_call": first,
        "last_call": last,
    }


@dataclass(frozen=True)
class ToolLatency:
    calls: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float


@dataclass(frozen=True)
class CallBreakdown:
    """Calls from ``from_seq`` on: decisions per rule (rule id -> outcome -> count) and latency
    per exposed tool name."""

    calls: int = 0
    by_rule: dict[str, dict[str, int]] = field(default_factory=dict)
    latency: dict[str, ToolLatency] = field(default_factory=dict)
    from_seq: int | None = None
    """The first seq looked at (``None``: the start of the log)."""


_PERCENTILES = (50, 90, 99)


def call_breakdown(directory: Path, *, since: str | None = None) -> CallBreakdown:
    """Decisions by rule and latency per tool over the calls stamped at or after ``since`` (a
    stored-time string). Over the index this reads only its call indexes: the events are chained
    in the order they were stamped, so ``since`` becomes a seq bound. Raises ``AuditError`` for a
    missing directory."""
    _require_dir(directory)
    index = directory / INDEX_FILE
    if index.exists():
        try:
            return _breakdown_sqlite(index, since)
        except sqlite3.Error:
            pass  # fall through to the source of truth
    by_rule: dict[str, Counter[str]] = defaultdict(Counter)
    durations: dict[str, list[float]] = defaultdict(list)
    calls = 0
    from_seq: int | None = None
    last_seq = -1
    for e in _scan(directory):
        seq = e.get("seq")
        last_seq = seq if isinstance(seq, int) else last_seq
        if since is not None and from_seq is None:
            if str(e.get("time", "")) < since:
                continue
            from_seq = last_seq
        if e.get("type") != "call":
            continue
        calls += 1
        decision = e.get("decision")
        rule = decision.get("rule_id") if isinstance(decision, dict) else None
        by_rule[str(rule or "")][str(e.get("outcome"))] += 1
        dur = e.get("duration_ms")
        if isinstance(dur, int | float) and not isinstance(dur, bool):
            durations[str(e.get("exposed_name"))].append(float(dur))
    latency = {}
    for tool, values in sorted(durations.items()):
        values.sort()
        n = len(values)
        p50, p90, p99 = (values[_rank(n, p)] for p in _PERCENTILES)
        latency[tool] = ToolLatency(n, p50, p90, p99, values[-1])
    if since is not None and from_seq is None:
        from_seq = last_seq + 1
    return CallBreakdown(calls, {r: dict(c) for r, c in by_rule.items()}, latency, from_seq)


def _breakdown_sqlite(index: Path, since: str | None) -> CallBreakdown:
    # Calls are the rows with an outcome and a duration (`row_for`), so these read only the
    # (outcome, rule_id) and (exposed_name, duration_ms) indexes.
    with _read_only(index) as db:
        from_seq: int | None = None
        if since is not None:
            row = db.execute("SELECT seq FROM events WHERE time >= ? ORDER BY time LIMIT 1", (since,)).fetchone()
            if row is None:
                last = db.execute("SELECT MAX(seq) FROM events").fetchone()[0]
                return CallBreakdown(from_seq=(last if last is not None else -1) + 1)
            from_seq = int(row[0])
        bound, params = (" AND seq >= ?", [from_seq]) if from_seq is not None else ("", [])
        by_rule: dict[str, dict[str, int]] = defaultdict(dict)
        calls = 0
        for outcome, rule, n in db.execute(
            f"SELECT outcome, rule_id, COUNT(*) FROM events WHERE outcome IS NOT NULL{bound} GROUP BY outcome, rule_id",
            params,
        ):
            by_rule[str(rule or "")][str(outcome)] = int(n)
            calls += int(n)
        latency = {}
        tools = db.execute(
            f"SELECT exposed_name, COUNT(*), MAX(duration_ms) FROM events WHERE duration_ms IS NOT NULL{bound} "
            "GROUP BY exposed_name ORDER BY exposed_name", params
        ).fetchall()
        nth = f"SELECT duration_ms FROM events WHERE exposed_name = ? AND duration_ms IS NOT NULL{bound} ORDER BY duration_ms LIMIT 1 OFFSET ?"
        for tool, n, top in tools:
            p50, p90, p99 = (float(db.execute(nth, [tool, *params, _rank(n, p)]).fetchone()[0]) for p in _PERCENTILES)
            latency[str(tool)] = ToolLatency(int(n), p50, p90, p99, float(top))
    return CallBreakdown(calls, dict(by_rule), latency, from_seq)


@dataclass(frozen=True)
class CallValues:
    """The distinct tools, servers and users of calls after some seq, and the log's last seq."""

    tools: frozenset[str] = frozenset()
    servers: frozenset[str] = frozenset()
    users: frozenset[str] = frozenset()
    last_seq: int = -1


def call_values(directory: Path, *, after_seq: int = -1, limit: int = 1000) -> CallValues:
    """What the calls after ``after_seq`` name (at most ``limit`` of each), for filter choices;
    call again with the returned ``last_seq`` to learn only what is new. Raises ``AuditError``
    for a missing directory."""
    _require_dir(directory)
    index = directory / INDEX_FILE
    if index.exists():
        try:
            with _read_only(index) as db:
                last_row = db.execute("SELECT MAX(seq) FROM events").fetchone()[0]
                last = after_seq if last_row is None else max(after_seq, int(last_row))
                if after_seq < 0:
                    # The whole log: each column's index, read in order (`duration_ms IS NOT NULL`
                    # selects calls on the (exposed_name, duration_ms) one).
                    tools, servers, users = (
                        frozenset(str(r[0]) for r in db.execute(
                            f"SELECT DISTINCT {expr} FROM events WHERE {cond} LIMIT ?", (limit,)) if r[0] is not None)
                        for expr, cond in (("exposed_name", "duration_ms IS NOT NULL"), (SERVER_EXPR, "type = 'call'"),
                                           (USER_EXPR, "type = 'call'"))
                    )
                    return CallValues(tools, servers, users, last)
                # What is new: the rows past the seq, read by rowid (an index scan would read it all).
                sets: tuple[set[str], set[str], set[str]] = (set(), set(), set())
                for row in db.execute(
                    f"SELECT exposed_name, {SERVER_EXPR}, {USER_EXPR} FROM events NOT INDEXED "
                    "WHERE seq > ? AND type = 'call'", (after_seq,)
                ):
                    for bucket, value in zip(sets, row, strict=True):
                        if isinstance(value, str) and len(bucket) < limit:
                            bucket.add(value)
            return CallValues(frozenset(sets[0]), frozenset(sets[1]), frozenset(sets[2]), last)
        except sqlite3.Error:
            pass  # fall through to the source of truth
    found_tools: set[str] = set()
    found_servers: set[str] = set()
    found_users: set[str] = set()
    last_seq = after_seq
    for e in _scan(directory):
        seq = e.get("seq")
        if not isinstance(seq, int) or seq <= after_seq:
            continue
        last_seq = max(last_seq, seq)
        if e.get("type") != "call":
            continue
        ident = e.get("identity")
        for bucket, value in ((found_tools, e.get("exposed_name")), (found_servers, e.get("server")),
                              (found_users, ident.get("user") if isinstance(ident, dict) else None)):
            if isinstance(value, str) and len(bucket) < limit:
                bucket.add(value)
    return CallValues(frozenset(found_tools), frozenset(found_servers), frozenset(found_users), last_seq)


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
