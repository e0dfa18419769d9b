"""`RedisState`: the state seam on Redis (or Valkey), for a fleet of replicas.

    budgets   one Lua script checks every limit of a call (rate, per-session and per-caller caps)
              and, only if all pass, charges them all: a budget of N across the fleet allows N. Time is the Redis server's (``TIME``),
              so replicas with skewed clocks still share one bucket.
    records   ``SET key value PX ttl``; ``touch`` is ``PEXPIRE`` (0 when the key is gone)
    update    ``GET``, then a Lua compare and set (written only if the value is still the one read),
              retried when another replica wrote between: two round trips (``WATCH``/``MULTI``
              took four and, measured here, about 7x the time)

Every operation is bounded by ``timeout_s``; a refused connection, a timeout or any Redis error
raises `StateUnavailable` and is counted per operation in ``errors``. Needs ``checkrein[redis]``.
Keys of one call's budget live in one Redis: Redis Cluster is not supported.
"""

from __future__ import annotations

import json
import logging
import random
import weakref
from collections.abc import Sequence
from typing import Any

import anyio
import redis.asyncio as aioredis
import redis.exceptions

from checkrein.errors import StateUnavailable

from .base import Admission, JsonChange, LimitCheck

__all__ = ["RedisState"]

log = logging.getLogger("checkrein.state")

_ADMIT = """
local n = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local tokens = {}
for i = 1, n do
  local b = 1 + (i - 1) * 6
  local rate, cap, maxc = tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3])
  local imax = tonumber(ARGV[b + 5])
  if rate > 0 then
    local h = redis.call('HMGET', KEYS[3 * i - 2], 't', 'u')
    local tk = cap
    if h[1] then
      tk = math.min(cap, tonumber(h[1]) + math.max(0, now - tonumber(h[2])) * rate)
    end
    if tk < 1 - 1e-9 then
      return {i, 'rate', tostring((1 - tk) / rate)}
    end
    tokens[i] = tk
  end
  if maxc > 0 then
    local used = tonumber(redis.call('GET', KEYS[3 * i - 1]) or '0')
    if used >= maxc then
      return {i, 'cap', '0'}
    end
  end
  if imax > 0 then
    local used = tonumber(redis.call('GET', KEYS[3 * i]) or '0')
    if used >= imax then
      return {i, 'identity', tostring(math.max(0, redis.call('PTTL', KEYS[3 * i])) / 1000)}
    end
  end
end
for i = 1, n do
  local b = 1 + (i - 1) * 6
  local rate, cap, maxc, ttl = tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4])
  local imax, iwin = tonumber(ARGV[b + 5]), tonumber(ARGV[b + 6])
  if rate > 0 then
    redis.call('HSET', KEYS[3 * i - 2], 't', tostring(tokens[i] - 1), 'u', tostring(now))
    redis.call('PEXPIRE', KEYS[3 * i - 2], math.ceil((cap / rate + 1) * 1000))
  end
  if maxc > 0 then
    redis.call('INCR', KEYS[3 * i - 1])
    redis.call('PEXPIRE', KEYS[3 * i - 1], math.ceil(ttl * 1000))
  end
  if imax > 0 then
    -- a fixed window from the caller's first charge; without one the count never starts again
    if redis.call('INCR', KEYS[3 * i]) == 1 and iwin > 0 then
      redis.call('PEXPIRE', KEYS[3 * i], math.ceil(iwin * 1000))
    end
  end
end
return {0, '', '0'}
"""

_CAS = """
local cur = redis.call('GET', KEYS[1])
if ARGV[1] == '0' then
  if cur then return 0 end
elseif cur ~= ARGV[2] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
return 1
"""
"""Compare and set: write ARGV[3] only if the key still holds ARGV[2] (ARGV[1] = '0': is still absent)."""

_ERRORS = (redis.exceptions.RedisError, OSError, TimeoutError)


class RedisState:
    name = "redis"

    def __init__(self, url: str, *, prefix: str = "checkrein:", timeout_s: float = 0.5) -> None:
        self.url = url
        self.prefix = prefix
        self.timeout_s = timeout_s
        self._r = aioredis.Redis.from_url(
            url,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry_on_timeout=False,
            health_check_interval=0,
            decode_responses=False,
        )
        self._admit = self._r.register_script(_ADMIT)
        self._cas = self._r.register_script(_CAS)
        self.ops = 0
        self.errors: dict[str, int] = {}
        self._locks: weakref.WeakValueDictionary[str, anyio.Lock] = weakref.WeakValueDictionary()

    def _k(self, key: str) -> str:
        return self.prefix + key

    async def _run(self, op: str, fn: Any) -> Any:
        self.ops += 1
        try:
            with anyio.fail_after(self.timeout_s * 2):
                return await fn()
        except StateUnavailable:
            raise
        except _ERRORS as exc:
            self.errors[op] = self.errors.get(op, 0) + 1
            raise StateUnavailable(f"redis {op} failed: {type(exc).__name__}: {str(exc)[:200]}") from exc

    async def admit(self, checks: Sequence[LimitCheck]) -> Admission:
        if not checks:
            return Admission(True)
        keys: list[str] = []
        args: list[Any] = [len(checks)]
        for i, c in enumerate(checks):
            keys.append(self._k(c.bucket_key) if c.bucket_key else self._k(f"none:{i}:b"))
            keys.append(self._k(c.session_key) if c.session_key else self._k(f"none:{i}:s"))
            keys.append(self._k(c.identity_key) if c.identity_key else self._k(f"none:{i}:i"))
            rate = c.rate_per_s if c.bucket_key else 0.0
            maxc = c.max_calls if c.session_key else 0
            imax = c.identity_max if c.identity_key else 0
            args += [repr(float(rate)), repr(float(c.capacity)), str(int(maxc)), repr(float(c.session_ttl_s)),
                     str(int(imax)), repr(float(c.identity_window_s))]
        raw = await self._run("admit", lambda: self._admit(keys=keys, args=args))
        index, kind, wait = int(raw[0]), raw[1], float(raw[2])
        if index == 0:
            return Admission(True)
        kind_s = kind.decode() if isinstance(kind, bytes) else str(kind)
        if kind_s == "rate":
            return Admission(False, index - 1, "rate", wait)
        return Admission(False, index - 1, "identity" if kind_s == "identity" else "cap", wait)

    async def get(self, key: str) -> Any | None:
        raw = await self._run("get", lambda: self._r.get(self._k(key)))
        return None if raw is None else json.loads(raw)

    async def put(self, key: str, value: Any, ttl_s: float) -> None:
        data = json.dumps(value, sort_keys=True, separators=(",", ":"))
        await self._run("put", lambda: self._r.set(self._k(key), data, px=max(1, int(ttl_s * 1000))))

    async def touch(self, key: str, ttl_s: float) -> bool:
        return bool(await self._run("touch", lambda: self._r.pexpire(self._k(key), max(1, int(ttl_s * 1000)))))

    async def delete(self, key: str) -> None:
        await self._run("delete", lambda: self._r.delete(self._k(key)))

    async def update(self, key: str, change: JsonChange, ttl_s: float) -> Any:
        k = self._k(key)
        ttl_ms = str(max(1, int(ttl_s * 1000)))

        async def attempt() -> Any:
            async with self._lock_of(key):
                for n in range(64):
                    if n:
                        await anyio.sleep(random.uniform(0, 0.002 * min(n, 10)))
                    raw = await self._r.get(k)
                    new = change(None if raw is None else json.loads(raw))
                    data = json.dumps(new, sort_keys=True, separators=(",", ":"))
                    if await self._cas(keys=[k], args=["0" if raw is None else "1", raw or b"", data, ttl_ms]):
                        return new
                    # another replica wrote first: read again
            raise StateUnavailable(f"redis update of {key!r} kept conflicting")

        return await self._run("update", attempt)

    def _lock_of(self, key: str) -> anyio.Lock:
        """One update per key at a time in this replica, so only other replicas contend."""
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = anyio.Lock()
        return lock

    async def ping(self) -> None:
        await self._run("ping", self._r.ping)

    async def aclose(self) -> None:
        try:
            await self._r.aclose()
        except _ERRORS:
            log.debug("closing the redis client failed", exc_info=True)
