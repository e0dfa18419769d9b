"""Typed seams of the gate's effectful steps: approval and budgets.

`decide` (pure) says allow/deny/ask; when it says ask, an `Approver` answers. A `Budget` admits or
refuses a call before it is forwarded. Implementations live in `gate/approval.py` and
`gate/budget.py`; a shared backend (Redis) can implement `Budget` later.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from checkrein.policy import Decision, ToolCall

__all__ = ["ApprovalRequest", "ApprovalResult", "Approver", "Budget", "BudgetVerdict"]


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
    def admit(self, call: ToolCall, now: float) -> BudgetVerdict: ...
