"""In-process budgets (`[[budgets.limits]]`): token-bucket rates, per-session and per-identity call caps.

Each limit has a ``scope`` (``tool``: the exposed name; ``server``; ``identity``: the caller's user
name) and a ``match`` glob over that key. A limit keeps one bucket per distinct key (so
``scope = "identity", match = "*"`` gives every identity its own rate), one counter per
(key, session) and one per (key, caller) (the caller is `identity_key`: source and user, so a
reconnect, a new session or a sessionless request counts against the same cap; with
``identity_window_s`` the count starts again after that long from the window's first call). A bucket holds ``burst`` tokens (default: ``ceil(rate_per_s)``, at least 1) and refills
at ``rate_per_s``; each admitted call takes one token.

`admit` checks every applicable limit first and only then charges them all, so a refused call costs
nothing anywhere. ``now`` is injected (monotonic seconds) so tests use a fake clock; time that goes
backwards refills nothing. A shared backend (Redis) can implement the same `Budget` protocol.
"""

from __future__ import annotations

import fnmatch
import math
import re
import threading
from dataclasses import dataclass

from checkrein.config import BudgetLimit, BudgetSettings
from checkrein.policy import ToolCall

from .grants import identity_key
from .seams import BudgetVerdict

__all__ = ["InProcessBudget"]

_EPSILON = 1e-9
"""Float slack: calls exactly 1/rate apart must not be refused for a rounding error in the refill."""


@dataclass
class _Bucket:
    tokens: float
    updated: float


@dataclass
class _Window:
    calls: int
    started: float


@dataclass(frozen=True, slots=True)
class _Limit:
    index: int
    spec: BudgetLimit
    regex: re.Pattern[str]
    capacity: float

    @property
    def rule_id(self) -> str:
        return f"budget:{self.spec.scope}:{self.spec.match}"


def compile_limits(settings: BudgetSettings) -> list[_Limit]:
    """Each limit with its glob compiled and its bucket capacity (``burst``, else ``ceil(rate)``)."""
    return [
        _Limit(
            i,
            spec,
            re.compile(fnmatch.translate(spec.match)),
            float(spec.burst if spec.burst is not None else max(1, math.ceil(spec.rate_per_s or 1))),
        )
        for i, spec in enumerate(settings.limits)
    ]


def _key(limit: BudgetLimit, call: ToolCall, separator: str) -> str:
    if limit.scope == "tool":
        return call.exposed_name
    if limit.scope == "server":
        return call.server or call.exposed_name.partition(separator)[0]
    return call.identity.user


class InProcessBudget:
    """Implements `checkrein.gate.seams.Budget` in memory; thread-safe."""

    def __init__(self, settings: BudgetSettings, *, separator: str = "__", max_sessions: int = 100_000) -> None:
        self.separator = separator
        self.max_sessions = max_sessions
        self._limits = compile_limits(settings)
        self._buckets: dict[tuple[int, str], _Bucket] = {}
        self._session_calls: dict[tuple[int, str, str], int] = {}
        self._identity_calls: dict[tuple[int, str, str], _Window] = {}
        self._lock = threading.Lock()
        self.refused = 0

    def admit(self, call: ToolCall, now: float) -> BudgetVerdict:
        """Admit (and charge) ``call`` at time ``now``, or refuse it naming the limit."""
        applicable = [
            (lim, key)
            for lim in self._limits
            if lim.regex.match(key := _key(lim.spec, call, self.separator)) is not None
        ]
        if not applicable:
            return BudgetVerdict(True)
        with self._lock:
            for lim, key in applicable:
                refusal = self._check(lim, key, call, now)
                if refusal is not None:
                    self.refused += 1
                    return refusal
            for lim, key in applicable:
                if lim.spec.rate_per_s is not None:
                    self._buckets[(lim.index, key)].tokens -= 1.0
                if lim.spec.max_calls_per_session is not None:
                    skey = (lim.index, key, call.session_id)
                    if skey not in self._session_calls and len(self._session_calls) >= self.max_sessions:
                        # Bounded memory: forget the oldest session counter (a fresh session anyway).
                        self._session_calls.pop(next(iter(self._session_calls)))
                    self._session_calls[skey] = self._session_calls.get(skey, 0) + 1
                if lim.spec.max_calls_per_identity is not None:
                    self._identity_window(lim, key, call, now).calls += 1
        return BudgetVerdict(True)

    def _identity_window(self, lim: _Limit, key: str, call: ToolCall, now: float) -> _Window:
        ikey = (lim.index, key, identity_key(call.identity))
        window = self._identity_calls.get(ikey)
        span = lim.spec.identity_window_s
        if window is None or (span is not None and now - window.started >= span):
            if window is None and len(self._identity_calls) >= self.max_sessions:
                self._identity_calls.pop(next(iter(self._identity_calls)))
            window = self._identity_calls[ikey] = _Window(0, now)
        return window

    def _check(self, lim: _Limit, key: str, call: ToolCall, now: float) -> BudgetVerdict | None:
        spec = lim.spec
        if spec.max_calls_per_identity is not None:
            window = self._identity_window(lim, key, call, now)
            if window.calls >= spec.max_calls_per_identity:
                period = "" if spec.identity_window_s is None else f" per {spec.identity_window_s:g} s"
                retry = (
                    ""
                    if spec.identity_window_s is None
                    else f"; retry in {max(0.0, window.started + spec.identity_window_s - now):.0f} s"
                )
                return BudgetVerdict(
                    False,
                    lim.rule_id,
                    f"{spec.scope} {key!r} reached its cap of {spec.max_calls_per_identity} calls{period} "
                    f"for caller {call.identity.user!r}{retry}",
                )
        if spec.max_calls_per_session is not None:
            used = self._session_calls.get((lim.index, key, call.session_id), 0)
            if used >= spec.max_calls_per_session:
                return BudgetVerdict(
                    False,
                    lim.rule_id,
                    f"{spec.scope} {key!r} reached its cap of {spec.max_calls_per_session} calls in this session",
                )
        if spec.rate_per_s is not None:
            bucket = self._buckets.get((lim.index, key))
            if bucket is None:
                bucket = self._buckets[(lim.index, key)] = _Bucket(lim.capacity, now)
            elif now > bucket.updated:
                bucket.tokens = min(lim.capacity, bucket.tokens + (now - bucket.updated) * spec.rate_per_s)
                bucket.updated = now
            if bucket.tokens < 1.0 - _EPSILON:
                wait = (1.0 - bucket.tokens) / spec.rate_per_s
                return BudgetVerdict(
                    False,
                    lim.rule_id,
                    f"{spec.scope} {key!r} is over its rate of {spec.rate_per_s:g}/s; retry in {wait:.2f} s",
                )
        return None

    def forget_session(self, session_id: str) -> None:
        """Drop the per-session counters of a closed session."""
        with self._lock:
            for k in [k for k in self._session_calls if k[2] == session_id]:
                del self._session_calls[k]
