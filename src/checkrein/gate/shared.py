"""The gate's budgets and approval grants on a `SharedState` (Redis for a fleet).

`SharedBudget` implements `checkrein.gate.seams.Budget` with the same limits, keys and messages as
`InProcessBudget` (rates, per-session caps, per-caller caps with their windows), but every
check-and-charge is one atomic `SharedState.admit`: a budget of N across the fleet allows N in total. `SharedGrants` implements `GrantStore`: a grant given through
one replica is honoured by every other until it expires. A backend that cannot answer raises
`StateUnavailable`; the budget step then refuses the call (``state.unavailable``), and the
approver, which cannot tell a missing grant from an unreadable one, fails closed too.
"""

from __future__ import annotations

import hashlib
import time

from checkrein.canonical import canonical_json
from checkrein.config import BudgetSettings
from checkrein.policy import ToolCall
from checkrein.state import LimitCheck, SharedState

from .budget import _key, compile_limits
from .grants import GrantKey, identity_key
from .seams import ApprovalResult, BudgetVerdict

__all__ = ["SharedBudget", "SharedGrants"]


def _h(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class SharedBudget:
    def __init__(self, settings: BudgetSettings, state: SharedState, *, separator: str = "__") -> None:
        self.state = state
        self.separator = separator
        self._limits = compile_limits(settings)
        # Limits are numbered by position: a fleet must run one `[budgets]` on every replica.
        self._generation = _h(canonical_json([s.model_dump(mode="json") for s in settings.limits]).decode())[:12]
        self.refused = 0

    async def admit(self, call: ToolCall, now: float) -> BudgetVerdict:
        del now  # the shared backend's clock decides (one clock for every replica)
        applicable = [
            (lim, key) for lim in self._limits if lim.regex.match(key := _key(lim.spec, call, self.separator)) is not None
        ]
        if not applicable:
            return BudgetVerdict(True)
        checks = []
        for lim, key in applicable:
            base = f"budget:{self._generation}:{lim.index}:{_h(key)}"
            spec = lim.spec
            checks.append(LimitCheck(
                bucket_key=base if spec.rate_per_s is not None else None,
                rate_per_s=spec.rate_per_s or 0.0,
                capacity=lim.capacity,
                session_key=f"{base}:s:{_h(call.session_id)}" if spec.max_calls_per_session is not None else None,
                max_calls=spec.max_calls_per_session or 0,
                identity_key=f"{base}:i:{_h(identity_key(call.identity))}" if spec.max_calls_per_identity is not None else None,
                identity_max=spec.max_calls_per_identity or 0,
                identity_window_s=spec.identity_window_s or 0.0,
            ))
        result = await self.state.admit(checks)
        if result.admitted:
            return BudgetVerdict(True)
        self.refused += 1
        lim, key = applicable[result.index]
        spec = lim.spec
        if result.kind == "identity":
            period = "" if spec.identity_window_s is None else f" per {spec.identity_window_s:g} s"
            retry = "" if spec.identity_window_s is None else f"; retry in {result.retry_in_s:.0f} s"
            return BudgetVerdict(
                False,
                lim.rule_id,
                f"{spec.scope} {key!r} reached its cap of {spec.max_calls_per_identity} calls{period} "
                f"for caller {call.identity.user!r}{retry}",
            )
        if result.kind == "cap":
            return BudgetVerdict(
                False, lim.rule_id, f"{spec.scope} {key!r} reached its cap of {spec.max_calls_per_session} calls in this session"
            )
        return BudgetVerdict(
            False, lim.rule_id, f"{spec.scope} {key!r} is over its rate of {spec.rate_per_s:g}/s; retry in {result.retry_in_s:.2f} s"
        )


class SharedGrants:
    """`GrantStore` on the shared state: one record per grant key, expiring with the grant."""

    def __init__(self, state: SharedState) -> None:
        self.state = state

    @staticmethod
    def _k(key: GrantKey) -> str:
        raw = canonical_json([key.identity, key.session_id, key.exposed, key.args_digest, key.policy_digest]).decode()
        return "grant:" + hashlib.sha256(raw.encode()).hexdigest()

    async def get(self, key: GrantKey, now: float) -> ApprovalResult | None:
        raw = await self.state.get(self._k(key))
        if not isinstance(raw, dict):
            return None
        expires = raw.get("expires_at")
        if not isinstance(expires, int | float) or expires <= now:
            return None
        return ApprovalResult(True, str(raw.get("approver", "")), str(raw.get("reason", "")), float(expires))

    async def put(self, key: GrantKey, result: ApprovalResult) -> None:
        if result.expires_at is None:
            return
        ttl = result.expires_at - time.time()
        if ttl <= 0:
            return
        record = {"approver": result.approver, "reason": result.reason, "expires_at": result.expires_at}
        await self.state.put(self._k(key), record, ttl)
