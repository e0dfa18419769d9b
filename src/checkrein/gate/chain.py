"""The values every gate step passes along, and how steps are chained.

A step is ``step(ctx, call_next) -> CallOutcome`` over a frozen `CallContext`; it changes the request
only by handing a new context on (FastMCP's ``MiddlewareContext`` shape). ``ctx.state`` is the
`GateState` snapshot taken when the request entered the gate, so a request that is in flight while
the catalog or the policy is replaced finishes under the state it started with.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

import mcp.types as types

from checkrein.audit.record import Outcome
from checkrein.catalog import CatalogEntry
from checkrein.errors import CheckreinError
from checkrein.policy import Decision, ToolCall

from .state import GateState

__all__ = [
    "CallContext",
    "CallNext",
    "CallOutcome",
    "CallRefused",
    "GateResult",
    "Step",
    "ToolResultJson",
    "build_chain",
    "deny",
    "denial_text",
    "fail",
]

@dataclass(frozen=True, slots=True)
class ToolResultJson:
    """A tools/call result as the upstream's JSON (wire names: ``content``, ``isError``, ...),
    already checked against the ``CallToolResult`` schema: what the gate relays without building
    an SDK model for it. Treat ``json`` as immutable; steps hand on a new value."""

    json: dict[str, Any]

    @property
    def is_error(self) -> bool:
        return self.json.get("isError") is True


GateResult: TypeAlias = (
    ToolResultJson
    | types.CallToolResult
    | types.ReadResourceResult
    | types.GetPromptResult
    | types.CompleteResult
    | types.EmptyResult
    | types.ListToolsResult
    | types.ListResourcesResult
    | types.ListResourceTemplatesResult
    | types.ListPromptsResult
)


class CallRefused(CheckreinError):
    """A request other than tools/call that the gate refused; ``code`` is the stable reason code.

    ``rpc_code`` is the upstream's JSON-RPC error code when the upstream's own error is what came
    back (the frontend answers with the same code). Tool calls never raise it: their refusals are
    `CallToolResult(isError=True)`.
    """

    def __init__(self, message: str, *, code: str | None = None, rpc_code: int | None = None) -> None:
        super().__init__(message, code=code)
        self.rpc_code = rpc_code


@dataclass(frozen=True, slots=True)
class CallContext:
    """One request on its way through the steps. Frozen: steps pass on a new value."""

    call: ToolCall
    started: float
    state: GateState
    entry: CatalogEntry | None = None
    decision: Decision | None = None
    approval: dict[str, Any] | None = None
    degraded: tuple[str, ...] = ()

    # Explicit constructors instead of `dataclasses.replace`, which introspects fields on every
    # call: these run on every request.
    def resolved(self, call: ToolCall, entry: CatalogEntry | None) -> CallContext:
        return CallContext(call, self.started, self.state, entry, self.decision, self.approval, self.degraded)

    def with_state(self, state: GateState) -> CallContext:
        return CallContext(self.call, self.started, state, self.entry, self.decision, self.approval, self.degraded)

    def decided(self, decision: Decision) -> CallContext:
        degraded = (*self.degraded, *decision.degraded) if decision.degraded else self.degraded
        return CallContext(self.call, self.started, self.state, self.entry, decision, self.approval, degraded)

    def approved(self, approval: dict[str, Any]) -> CallContext:
        return CallContext(self.call, self.started, self.state, self.entry, self.decision, approval, self.degraded)

    def degrade(self, name: str) -> CallContext:
        return CallContext(
            self.call, self.started, self.state, self.entry, self.decision, self.approval, (*self.degraded, name)
        )


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """What came back: the result for the client, or a refusal (``result is None``, ``message`` set)."""

    ctx: CallContext
    outcome: Outcome
    result: GateResult | None = None
    error_code: str | None = None
    message: str = ""
    flags: tuple[str, ...] = ()
    redactions: tuple[str, ...] = ()
    rule_id: str | None = None
    """The rule that refused the call (denials only), e.g. `catalog:not_found`, `budget:...`."""
    reason: str = ""
    """Why it was refused (denials only), without the `denied by checkrein:` framing."""
    rpc_code: int | None = None
    """For an upstream JSON-RPC error: its code, so a non-tool request can answer with the same one."""
    pending: Any = None
    """An `ApprovalRequest` the client must answer first (2026-era ``input_required``), else None."""

    def inspected(
        self, ctx: CallContext, result: GateResult | None, flags: tuple[str, ...], redactions: tuple[str, ...]
    ) -> CallOutcome:
        """This outcome with what result inspection made of it (`dataclasses.replace` of those
        four fields, without its per-call introspection)."""
        return CallOutcome(ctx, self.outcome, result, self.error_code, self.message, flags, redactions, self.rule_id,
                           self.reason, self.rpc_code, self.pending)  # fmt: skip


CallNext: TypeAlias = Callable[[CallContext], Awaitable[CallOutcome]]


class Step(Protocol):
    async def __call__(self, ctx: CallContext, call_next: CallNext) -> CallOutcome: ...


def denial_text(reason: str, rule_id: str) -> str:
    return f"denied by checkrein: {reason} (rule {rule_id})"


def deny(ctx: CallContext, code: str, rule_id: str, reason: str, outcome: Outcome = "denied") -> CallOutcome:
    return CallOutcome(ctx, outcome, None, code, denial_text(reason, rule_id), rule_id=rule_id, reason=reason)


def fail(ctx: CallContext, code: str, outcome: Outcome, message: str, rpc_code: int | None = None) -> CallOutcome:
    """An error that is not a policy denial (upstream down, timeout): the text says what happened."""
    return CallOutcome(ctx, outcome, None, code, f"error from checkrein: {message} (code {code})", rpc_code=rpc_code)


def build_chain(steps: Sequence[Step], terminal: CallNext) -> CallNext:
    """Compose ``steps`` (outermost first) around ``terminal`` once; returns the entry point.

    A step with a ``link(nxt) -> CallNext`` method (`checkrein.gate.metering`'s timed steps)
    makes its own link."""
    nxt = terminal
    for step in reversed(steps):
        link = getattr(step, "link", None)
        nxt = link(nxt) if callable(link) else _link(step, nxt)
    return nxt


def _link(step: Step, nxt: CallNext) -> CallNext:
    # A plain function returning the step's coroutine: no coroutine frame of its own, so each
    # resumption of the call does not pass one more level per step.
    def run(ctx: CallContext) -> Awaitable[CallOutcome]:
        return step(ctx, nxt)

    return run
