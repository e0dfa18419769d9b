"""Typed seams of the gate's effectful steps: approval, grants and budgets.

`decide` (pure) says allow/deny/ask; when it says ask, an `Approver` answers, and a granted answer is
kept in a `GrantStore` until it expires. A `Budget` admits or refuses a call before it is forwarded.
Implementations live in `gate/approval.py`, `gate/grants.py` and `gate/budget.py`; a shared backend
(Redis, for a fleet) implements `GrantStore` and `Budget` the same way.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from checkrein.policy import Decision, ToolCall

if TYPE_CHECKING:
    from .grants import GrantKey

__all__ = ["ApprovalRequest", "ApprovalResult", "Approver", "Budget", "BudgetVerdict", "GrantStore"]


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    call: ToolCall
    decision: Decision
    args_digest: str
    policy_digest: str
    summary: str
    """One readable line for a human: who, which tool, the risk, a redacted argument preview."""


@dataclass(frozen=True, slots=True)
class ApprovalResult:
    granted: bool
    approver: str
    reason: str = ""
    expires_at: float | None = None


class Approver(Protocol):
    async def approve(self, request: ApprovalRequest) -> ApprovalResult:
        """Answer one request. Raising, or not answering within the timeout, denies the call."""
        ...


@dataclass(frozen=True, slots=True)
class BudgetVerdict:
    admitted: bool
    rule_id: str = ""
    reason: str = ""


class Budget(Protocol):
    def admit(self, call: ToolCall, now: float) -> BudgetVerdict | Awaitable[BudgetVerdict]:
        """Admit (and charge) ``call`` at monotonic time ``now``, or refuse it naming the limit.

        In-process budgets answer at once; a shared one (Redis) returns an awaitable. Raising
        refuses the call (`budget.error`, or `state.unavailable` for a `StateUnavailable`)."""
        ...


class GrantStore(Protocol):
    async def get(self, key: GrantKey, now: float) -> ApprovalResult | None:
        """The unexpired grant for ``key`` at wall time ``now``, or ``None``."""
        ...

    async def put(self, key: GrantKey, result: ApprovalResult) -> None:
        """Keep a granted ``result`` (its ``expires_at`` is set) for ``key``."""
        ...
