"""`FallbackState`: what a replica does while its shared backend cannot answer.

``deny`` (the default): the operation raises `StateUnavailable`, so the call that needed it is
refused with ``state.unavailable``. ``local``: the operation is served from this replica's own
memory instead, and ``on_fallback`` is told every time (the gate audits each use and counts it),
because a budget then holds per replica, not across the fleet.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from checkrein.errors import StateUnavailable

from .base import Admission, JsonChange, LimitCheck, SharedState

__all__ = ["FallbackState", "OnFallback"]

log = logging.getLogger("checkrein.state")

OnFallback = Callable[[str, str], Awaitable[None]]
"""Called with (operation, why the shared backend failed) on every fallback use."""


class FallbackState:
    def __init__(
        self,
        primary: SharedState,
        local: SharedState,
        *,
        mode: Literal["deny", "local"] = "deny",
        on_fallback: OnFallback | None = None,
    ) -> None:
        self.primary = primary
        self.local = local
        self.mode = mode
        self.on_fallback = on_fallback
        self.name = primary.name
        self.unavailable = 0
        """Operations the shared backend could not answer (denied or served locally)."""
        self.fallbacks = 0
        """Of those, the ones served from local memory (``mode = "local"``)."""

    async def _either(self, op: str, shared: Callable[[], Awaitable[Any]], local: Callable[[], Awaitable[Any]]) -> Any:
        try:
            return await shared()
        except StateUnavailable as exc:
            self.unavailable += 1
            if self.mode != "local":
                raise
            self.fallbacks += 1
            if self.on_fallback is not None:
                try:
                    await self.on_fallback(op, exc.message)
                except Exception:  # an audit hook that fails must not turn a fallback into a crash
                    log.exception("state fallback hook failed")
            return await local()

    async def admit(self, checks: Sequence[LimitCheck]) -> Admission:
        result: Admission = await self._either("admit", lambda: self.primary.admit(checks), lambda: self.local.admit(checks))
        return result

    async def get(self, key: str) -> Any | None:
        return await self._either("get", lambda: self.primary.get(key), lambda: self.local.get(key))

    async def put(self, key: str, value: Any, ttl_s: float) -> None:
        await self._either("put", lambda: self.primary.put(key, value, ttl_s), lambda: self.local.put(key, value, ttl_s))

    async def touch(self, key: str, ttl_s: float) -> bool:
        return bool(await self._either("touch", lambda: self.primary.touch(key, ttl_s), lambda: self.local.touch(key, ttl_s)))

    async def delete(self, key: str) -> None:
        await self._either("delete", lambda: self.primary.delete(key), lambda: self.local.delete(key))

    async def update(self, key: str, change: JsonChange, ttl_s: float) -> Any:
        return await self._either(
            "update", lambda: self.primary.update(key, change, ttl_s), lambda: self.local.update(key, change, ttl_s)
        )

    async def ping(self) -> None:
        await self.primary.ping()

    async def aclose(self) -> None:
        await self.primary.aclose()
        await self.local.aclose()

    def stats(self) -> dict[str, int]:
        out = {"unavailable": self.unavailable, "fallbacks": self.fallbacks}
        ops = getattr(self.primary, "ops", None)
        if isinstance(ops, int):
            out["ops"] = ops
        return out
