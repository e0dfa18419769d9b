"""The state seam: what a gateway keeps that every replica of a fleet must share.

    budgets    token buckets, per-session and per-caller caps, checked and charged in one atomic step
    records    JSON values under a key with an expiry: approval grants, HTTP session records
    flow       a JSON value per key changed by a function, atomically (compare and set)

`SharedState` is implemented in process (`MemoryState`) and on Redis (`RedisState`); every
operation of a shared backend raises `StateUnavailable` (code ``state.unavailable``) when it
cannot answer in time, and the caller fails closed. `FallbackState` may instead fall back to
this replica's memory when the operator allowed it (``[state] on_unavailable = "local"``).

Keys are plain strings chosen by the caller (the gate); a backend adds its own prefix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

__all__ = ["Admission", "JsonChange", "LimitCheck", "SharedState"]

JsonChange = Callable[[Any | None], Any]
"""Takes the current value (None when there is none) and returns the new one; must be pure, as a
shared backend may call it more than once when another replica wrote in between."""


@dataclass(frozen=True, slots=True)
class LimitCheck:
    """One limit applying to one call: a token bucket, a per-session cap, or both."""

    bucket_key: str | None = None
    rate_per_s: float = 0.0
    capacity: float = 1.0
    session_key: str | None = None
    max_calls: int = 0
    session_ttl_s: float = 86_400.0
    """How long a session counter lives after its last charge (sessions end without telling us)."""
    identity_key: str | None = None
    """A caller's counter over all its sessions (``max_calls_per_identity``)."""
    identity_max: int = 0
    identity_window_s: float = 0.0
    """The caller's counter starts again this long after its first charge; 0: it never does."""


@dataclass(frozen=True, slots=True)
class Admission:
    admitted: bool
    index: int = -1
    """Which check refused (index into the checks given), -1 when admitted."""
    kind: Literal["", "rate", "cap", "identity"] = ""
    retry_in_s: float = 0.0
    """For ``rate``: when one token will be there again; for ``identity`` with a window: when it
    starts again."""


class SharedState(Protocol):
    name: str
    """``memory`` or ``redis`` (for counters and the audit)."""

    async def admit(self, checks: Sequence[LimitCheck]) -> Admission:
        """Check every limit, then (only if all pass) charge each one. Atomic across replicas."""
        ...

    async def get(self, key: str) -> Any | None: ...

    async def put(self, key: str, value: Any, ttl_s: float) -> None:
        """Store a JSON value for ``ttl_s`` seconds (> 0)."""
        ...

    async def touch(self, key: str, ttl_s: float) -> bool:
        """Extend ``key``'s life to ``ttl_s`` from now; False when it does not exist (any more)."""
        ...

    async def delete(self, key: str) -> None: ...

    async def update(self, key: str, change: JsonChange, ttl_s: float) -> Any:
        """Store and return ``change(current)`` atomically per key."""
        ...

    async def ping(self) -> None:
        """Raise `StateUnavailable` when the backend cannot answer now."""
        ...

    async def aclose(self) -> None: ...
