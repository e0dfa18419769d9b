"""The flow step: session flow rules (`checkrein.policy.flow`) on the call path, and where their
state lives.

Placement (DESIGN.md): after policy and budget, before approval. Before the call the step asks
`check_call`; ``deny`` refuses (`flow.denied`), ``ask`` turns the decision into an ask whose
findings name the rule (so the approval step asks, and no automatic approver waves it through).
After the call it feeds `after_call` what result inspection delivered (its flags and texts), so
the state sees exactly what reached the model.

Session keys (`flow_key`): flow state belongs to an identity AND a session. A call that carries a
protocol session (stdio, an ``mcp-session-id``) is keyed by identity and session id. A 2026-era
request carries no session id: it is keyed by identity and the trace id of its ``_meta``
``traceparent`` (one agent run), and without a traceparent by the identity alone (every such call
of that identity shares one state: conservative). A key never seen before inherits the identity's
most recent state when that was used within ``[policy.flow] resume_window_s``, so reconnecting
does not wash a session clean.

The state sits behind `FlowStore` (``get``/``update`` per key, async so a shared backend can do
I/O); `InMemoryFlowStore` is the in-process one. Any failure of the store or of the rules denies
(`flow.error`); a result whose flow could not be recorded is withheld, because the next call
would be judged on a state that never saw it.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

import mcp.types as types

from checkrein.config.policy import FlowSettings
from checkrein.errors import StateUnavailable
from checkrein.policy import Decision, ToolCall
from checkrein.policy.engine import CompiledPolicy
from checkrein.policy.flow import (
    FlowPlan,
    FlowState,
    FlowVerdict,
    ResultSeen,
    after_call,
    check_call,
    compile_flow,
    observe_task,
)
from checkrein.policy.flow.values import leaves

from .chain import CallContext, CallNext, CallOutcome, ToolResultJson, deny
from .counters import Counters
from .result_view import view_of

__all__ = ["FlowKey", "FlowStep", "FlowStore", "InMemoryFlowStore", "flow_key", "result_seen"]

log = logging.getLogger("checkrein.gate")

FlowKey = tuple[str, str]
"""(identity name, session key): see `flow_key`."""

Change = Callable[[FlowState], FlowState]


def flow_key(call: ToolCall) -> FlowKey:
    """The flow state a call belongs to (rules in the module docstring)."""
    user = call.identity.user
    if call.session_given:
        return (user, f"session:{call.session_id}")
    if call.parent_span_id is not None:  # the client sent a traceparent: one trace is one run
        return (user, f"trace:{call.trace_id}")
    return (user, "identity")


class FlowStore(Protocol):
    """Where flow states live. ``update`` must apply ``change`` atomically per key."""

    def configure(self, settings: FlowSettings) -> None:
        """Take the session settings (resume window, caps) of a newly compiled policy."""
        ...

    async def get(self, key: FlowKey, now: float) -> FlowState: ...

    async def update(self, key: FlowKey, now: float, change: Change) -> FlowState:
        """Store and return ``change(current state)``."""
        ...


class InMemoryFlowStore:
    """Flow states in this process, least recently used evicted beyond ``max_sessions``.

    Eviction forgets a session's flow state (counted in ``evicted``); the default cap is high
    enough that only abandoned sessions go.
    """

    def __init__(self, settings: FlowSettings | None = None) -> None:
        self._states: OrderedDict[FlowKey, FlowState] = OrderedDict()
        self._latest: dict[str, tuple[FlowKey, float]] = {}
        self.settings = settings or FlowSettings()
        self.evicted = 0
        self.resumed = 0

    def configure(self, settings: FlowSettings) -> None:
        self.settings = settings

    def __len__(self) -> int:
        return len(self._states)

    def _current(self, key: FlowKey, now: float) -> FlowState:
        state = self._states.get(key)
        if state is not None:
            self._states.move_to_end(key)
            return state
        latest = self._latest.get(key[0])
        if latest is not None and now - latest[1] <= self.settings.resume_window_s:
            inherited = self._states.get(latest[0])
            if inherited is not None:
                self.resumed += 1
                return inherited
        return FlowState()

    async def get(self, key: FlowKey, now: float) -> FlowState:
        return self._current(key, now)

    async def update(self, key: FlowKey, now: float, change: Change) -> FlowState:
        # No await between the read and the write: atomic on the event loop.
        state = change(self._current(key, now))
        self._states[key] = state
        self._states.move_to_end(key)
        self._latest[key[0]] = (key, now)
        while len(self._states) > self.settings.max_sessions:
            old, _ = self._states.popitem(last=False)
            self.evicted += 1
            if self._latest.get(old[0], (None,))[0] == old:
                del self._latest[old[0]]
        return state


def result_seen(out: CallOutcome) -> ResultSeen | None:
    """What the model got from a forwarded call (a result, or the text of an error the upstream
    answered), or None when nothing came back."""
    flagged = any(f in ("injection", "untrusted") for f in out.flags)
    if isinstance(out.result, ToolResultJson | types.CallToolResult | types.ReadResourceResult | types.GetPromptResult):
        view = view_of(out.result)
        texts = list(view.texts)
        if view.structured is not None:
            texts += [text for _, text in leaves(view.structured, "")]
        return ResultSeen(tuple(texts), flagged=flagged)
    if out.result is not None:
        return ResultSeen(())
    if out.rule_id is not None and out.rule_id.startswith("inspect:"):
        return ResultSeen((), flagged=True, withheld=True)
    if out.error_code == "upstream.error" and out.message:
        # An error the upstream answered reaches the model with the upstream's own words in it
        # (its JSON-RPC message and data): the same text as a result of that tool.
        return ResultSeen((out.message,), flagged=flagged)
    return None


def _forwarded(out: CallOutcome) -> bool:
    """Whether the call reached the upstream (a result, a withheld result, or an upstream failure)."""
    if out.result is not None:
        return True
    code = out.error_code or ""
    return code.startswith("upstream.") or (out.rule_id or "").startswith("inspect:") or code.startswith("result.")


def _failure(exc: Exception) -> tuple[str, str]:
    """Error code and rule of a flow failure: a shared store that cannot answer says so, as budgets do."""
    if isinstance(exc, StateUnavailable):
        return "state.unavailable", "state:unavailable"
    return "flow.error", "flow:error"


def _ask(decision: Decision | None, verdict: FlowVerdict) -> Decision:
    if decision is None:
        return Decision("ask", verdict.rule_id, verdict.reasons, "high", verdict.findings)
    reasons = verdict.reasons + tuple(r for r in decision.reasons if r not in verdict.reasons)
    if decision.effect == "ask":
        reasons = reasons + (f"policy: ask ({decision.rule_id})",)
    return replace(decision, effect="ask", rule_id=verdict.rule_id, reasons=reasons, findings=decision.findings + verdict.findings)


@dataclass
class FlowStep:
    """The session flow rules on the call path (see the module docstring).

    Narrow dependencies: the store, the counters and a wall clock; the policy comes with the
    request's state snapshot (``ctx.state.policy``). Listings, completions and subscriptions pass.
    """

    store: FlowStore
    counters: Counters
    clock: Callable[[], float] = time.time
    _plan: FlowPlan | None = field(default=None, repr=False)
    _compiled_from: CompiledPolicy | None = field(default=None, repr=False)

    def plan(self, policy: CompiledPolicy) -> FlowPlan:
        """The flow plan of ``policy`` (recompiled when the policy object changes)."""
        plan = self._plan
        if plan is None or self._compiled_from is not policy:
            plan = compile_flow(policy)
            self.store.configure(plan.settings)
            self._plan, self._compiled_from = plan, policy
        return plan

    async def __call__(self, ctx: CallContext, call_next: CallNext) -> CallOutcome:
        call, counters = ctx.call, self.counters
        if call.kind not in ("tool", "resource", "prompt"):
            return await call_next(ctx)
        kind: Literal["tool", "resource", "prompt"] = call.kind
        try:
            plan = self.plan(ctx.state.policy)
            flow = plan.for_call(call.exposed_name, kind)
            key, now = flow_key(call), self.clock()
            task, limits = call.task, plan.limits
            if task:
                state = await self.store.update(key, now, lambda s: observe_task(s, task, limits.max_trusted_bytes))
            else:
                state = await self.store.get(key, now)
            verdict = check_call(flow, state, call.arguments, limits)
        except Exception as exc:  # fail closed: flow rules that cannot decide deny
            counters.flow_errors += 1
            log.exception("flow rules raised on %s", call.exposed_name)
            return deny(ctx.degrade("flow.exception"), *_failure(exc), f"the session flow rules failed ({type(exc).__name__})")
        if verdict.effect == "deny":
            counters.flow_denials += 1
            d = _ask(ctx.decision, verdict)
            return deny(ctx.decided(replace(d, effect="deny", error_code="flow.denied")), "flow.denied", verdict.rule_id, "; ".join(verdict.reasons))
        if verdict.effect == "ask":
            counters.flow_asks += 1
            ctx = ctx.decided(_ask(ctx.decision, verdict))
        out = await call_next(ctx)
        if not _forwarded(out):
            return out
        seen = result_seen(out)
        approved = verdict.effect == "ask" and bool((out.ctx.approval or {}).get("granted"))
        try:
            await self.store.update(
                key, self.clock(), lambda s: after_call(flow, s, call.arguments, verdict, seen, limits, approved=approved)
            )
        except Exception as exc:  # the next call would be judged on a state that never saw this result
            counters.flow_errors += 1
            log.exception("recording the flow of %s failed", call.exposed_name)
            return deny(
                out.ctx.degrade("flow.exception"),
                *_failure(exc),
                f"the result is withheld: the session flow state could not record it ({type(exc).__name__})",
            )
        return out
