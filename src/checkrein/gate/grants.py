"""Where approval grants are kept: the one grant cache of the gate.

A grant is bound to a `GrantKey`: who asked (identity), in which session, for which tool, with which
arguments (digest) under which policy (digest). It is never replayed for other arguments, by
another identity, in another session, or after the policy changed, and it expires (``ttl_s``).

`InProcessGrants` keeps them in memory (bounded); a shared backend (Redis, for a fleet) implements
the same `GrantStore` protocol from `checkrein.gate.seams`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from checkrein.policy import Identity, ToolCall

from .seams import ApprovalResult

__all__ = ["GrantKey", "InProcessGrants", "identity_key"]


def identity_key(identity: Identity) -> str:
    """One string per caller: where it authenticated and as whom."""
    return f"{identity.source}:{identity.user}"


@dataclass(frozen=True, slots=True)
class GrantKey:
    identity: str
    session_id: str
    exposed: str
    args_digest: str
    policy_digest: str

    @classmethod
    def of(cls, call: ToolCall, args_digest: str, policy_digest: str) -> GrantKey:
        return cls(identity_key(call.identity), call.session_id, call.exposed_name, args_digest, policy_digest)


class InProcessGrants:
    """`GrantStore` in memory: at most ``max_grants`` grants, the oldest dropped first; thread-safe."""

    def __init__(self, max_grants: int = 10_000) -> None:
        self.max_grants = max_grants
        self._grants: OrderedDict[GrantKey, ApprovalResult] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._grants)

    async def get(self, key: GrantKey, now: float) -> ApprovalResult | None:
        with self._lock:
            grant = self._grants.get(key)
            if grant is None:
                return None
            if grant.expires_at is None or grant.expires_at <= now:
                del self._grants[key]
                return None
            return grant

    async def put(self, key: GrantKey, result: ApprovalResult) -> None:
        """Keep ``result`` (a grant, or an answered refusal) for ``key`` until its ``expires_at``."""
        with self._lock:
            self._grants.pop(key, None)
            while len(self._grants) >= self.max_grants:
                self._grants.popitem(last=False)
            self._grants[key] = result
