"""`MemoryState`: the state seam in this process (one gateway, or a replica's fallback).

Atomic because no operation awaits between its read and its write (one event loop); bounded:
beyond ``max_keys`` the entries closest to expiry go first. ``clock`` is monotonic seconds,
injected so tests use a fake clock.
"""

from __future__ import annotations

import copy
import heapq
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from .base import Admission, JsonChange, LimitCheck

__all__ = ["MemoryState"]

_EPSILON = 1e-9


class MemoryState:
    name = "memory"

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, max_keys: int = 200_000) -> None:
        self._clock = clock
        self._max = max_keys
        self._values: dict[str, tuple[Any, float]] = {}
        self._buckets: dict[str, tuple[float, float, float]] = {}
        """bucket key -> (tokens, updated, expires)"""
        self._counts: dict[str, tuple[int, float]] = {}

    def __len__(self) -> int:
        return len(self._values) + len(self._buckets) + len(self._counts)

    async def admit(self, checks: Sequence[LimitCheck]) -> Admission:
        now = self._clock()
        refill: list[float] = []
        for i, c in enumerate(checks):
            tokens = 0.0
            if c.bucket_key is not None and c.rate_per_s > 0:
                held = self._buckets.get(c.bucket_key)
                if held is None or held[2] <= now:
                    tokens = c.capacity
                else:
                    tokens = min(c.capacity, held[0] + max(0.0, now - held[1]) * c.rate_per_s)
                if tokens < 1.0 - _EPSILON:
                    return Admission(False, i, "rate", (1.0 - tokens) / c.rate_per_s)
            if c.session_key is not None and c.max_calls > 0:
                used = self._count(c.session_key, now)
                if used >= c.max_calls:
                    return Admission(False, i, "cap")
            if c.identity_key is not None and c.identity_max > 0 and self._count(c.identity_key, now) >= c.identity_max:
                ends = self._counts[c.identity_key][1]
                return Admission(False, i, "identity", 0.0 if math.isinf(ends) else ends - now)
            refill.append(tokens)
        for c, tokens in zip(checks, refill, strict=True):
            if c.bucket_key is not None and c.rate_per_s > 0:
                # A full bucket after capacity/rate seconds: forgetting it then changes nothing.
                self._buckets[c.bucket_key] = (tokens - 1.0, now, now + c.capacity / c.rate_per_s + 1.0)
            if c.session_key is not None and c.max_calls > 0:
                self._counts[c.session_key] = (self._count(c.session_key, now) + 1, now + c.session_ttl_s)
            if c.identity_key is not None and c.identity_max > 0:
                used = self._count(c.identity_key, now)
                # A fixed window from the first charge (none: the count never starts again).
                ends = self._counts[c.identity_key][1] if used else (
                    now + c.identity_window_s if c.identity_window_s > 0 else math.inf)
                self._counts[c.identity_key] = (used + 1, ends)
        self._bound(now)
        return Admission(True)

    def _count(self, key: str, now: float) -> int:
        held = self._counts.get(key)
        return 0 if held is None or held[1] <= now else held[0]

    async def get(self, key: str) -> Any | None:
        held = self._values.get(key)
        if held is None:
            return None
        if held[1] <= self._clock():
            del self._values[key]
            return None
        return copy.deepcopy(held[0])

    async def put(self, key: str, value: Any, ttl_s: float) -> None:
        now = self._clock()
        self._values[key] = (copy.deepcopy(value), now + ttl_s)
        self._bound(now)

    async def touch(self, key: str, ttl_s: float) -> bool:
        now = self._clock()
        held = self._values.get(key)
        if held is None or held[1] <= now:
            self._values.pop(key, None)
            return False
        self._values[key] = (held[0], now + ttl_s)
        return True

    async def delete(self, key: str) -> None:
        self._values.pop(key, None)

    async def update(self, key: str, change: JsonChange, ttl_s: float) -> Any:
        current = await self.get(key)
        new = change(current)
        await self.put(key, new, ttl_s)
        return copy.deepcopy(new)

    async def ping(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    def _bound(self, now: float) -> None:
        over = len(self) - self._max
        if over <= 0:
            return
        for table in (self._values, self._counts):
            for k in [k for k, v in table.items() if v[1] <= now]:
                del table[k]
        for k in [k for k, v in self._buckets.items() if v[2] <= now]:
            del self._buckets[k]
        over = len(self) - self._max
        if over > 0:
            soonest = heapq.nsmallest(over, self._values.items(), key=lambda kv: kv[1][1])
            for k, _ in soonest:
                del self._values[k]
        if len(self) > self._max:
            drop = max(0, math.ceil(len(self._counts) / 10))
            for k in list(self._counts)[:drop]:
                del self._counts[k]
