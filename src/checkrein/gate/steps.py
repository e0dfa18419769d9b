"""The gate's steps. Every request (`checkrein.policy.RequestKind`) passes them, in this order:

    audit      outermost: one `CallRecord` per request, ALWAYS, whatever happened inside
    catalog    resolve the exposed name or URI (unknown -> `tool.not_found`, drifted -> `tool.quarantined`)
    writable   the audit trail must be able to take the event (else `audit.unavailable`)
    policy     `decide` (pure); any exception denies with `policy.error`
    budget     rate limits and caps (`budget.exceeded`; a failing budget `budget.error`/`state.unavailable`)
    approval   when the decision says ask (approver error or timeout -> `approval.failed`)
    inspect    wraps forward: the inspector sees the result or the upstream's error text
               (exception -> withheld, `inspect.error`)
    forward    the upstream request with the server's timeout; one retry for read-only tools only

Each step is a small object with only the dependencies it needs (a sink, a table, a clock); the
catalog, the policy and the upstream handles come with the request in ``ctx.state`` (`GateState`).
The chain is built once: nothing on the per-request path lists tools, compiles policy or opens
sessions. `checkrein.gate.forward` holds the terminal step.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from inspect import isawaitable
from typing import Any, ClassVar

import anyio
import mcp.types as types

from checkrein.audit.record import AuditTrail, CallRecord
from checkrein.audit.redact import escape_pointer, wildcard_pattern
from checkrein.canonical import canonical_json, digest
from checkrein.errors import AuditUnavailable, CheckreinError, StateUnavailable, ToolNotFound
from checkrein.policy import Decision, Inspection, ResultInspector, ResultView, ToolCall, decide

from .approval import InputRequired, mask_secret_key
from .chain import CallContext, CallNext, CallOutcome, ToolResultJson, deny, fail
from .counters import Counters
from .resolve import resolve
from .result_view import apply_inspection, view_of
from .seams import ApprovalRequest, ApprovalResult, Approver, Budget
from .session import SessionTable
from .state import GateState

__all__ = [
    "ApprovalStep",
    "AuditStep",
    "BudgetStep",
    "CatalogStep",
    "InspectStep",
    "PolicyStep",
    "WritableStep",
    "approval_text",
]

log = logging.getLogger("checkrein.gate")

ReloadLock = Callable[[], Awaitable[GateState | None]]
"""Re-read the lock if it changed; the new state, or ``None`` when nothing changed."""
Unavailable = Callable[[str, str], str | None]
"""``(server, name)`` -> why that server cannot be served (it failed to start), or ``None``."""


@dataclass
class AuditStep:
    """Outermost. Records every request; an unrecordable allowed request becomes `audit.unavailable`.

    ``discards``: the trail keeps nothing (auditing switched off), so no record is built.
    """

    audit: AuditTrail
    counters: Counters
    discards: bool = False

    async def __call__(self, ctx: CallContext, call_next: CallNext) -> CallOutcome:
        counters = self.counters
        counters.calls += 1
        try:
            out = await call_next(ctx)
        except anyio.get_cancelled_exc_class():
            counters.cancelled += 1
            with anyio.CancelScope(shield=True):
                await self._record(fail(ctx, "call.cancelled", "error", "the call was cancelled"))
            raise
        except Exception as exc:  # a bug in a step must still answer, deny and be audited
            counters.internal_errors += 1
            log.exception("internal error in the gate")
            out = fail(ctx, "gate.error", "error", f"internal error in checkrein ({type(exc).__name__})")
        if out.result is None and out.outcome == "denied":
            counters.denials += 1
        if self.discards:
            return out
        return await self._record(out)

    async def _record(self, out: CallOutcome) -> CallOutcome:
        ctx, call = out.ctx, out.ctx.call
        d = ctx.decision
        record = CallRecord(
            kind=call.kind,
            trace_id=call.trace_id,
            span_id=call.span_id,
            parent_span_id=call.parent_span_id,
            session_id=call.session_id,
            identity={
                "user": call.identity.user,
                "roles": list(call.identity.roles),
                "source": call.identity.source,
                "client": call.identity.client,
            },
            model=call.model,
            server=call.server,
            tool=call.tool,
            exposed_name=call.exposed_name,
            tool_digest=ctx.entry.digest if ctx.entry is not None else None,
            arguments=call.arguments,
            decision=_decision_record(out, d, ctx.approval),
            outcome=out.outcome,
            error_code=out.error_code,
            duration_ms=(time.perf_counter() - ctx.started) * 1000.0,
            result=_audit_result(out),
            result_flags=out.flags,
            redactions=tuple(d.redactions) if d else (),
            degraded=ctx.degraded,
            args_scanned=d.secrets_scanned if d else False,
        )
        try:
            await self.audit.record_call(record)
        except AuditUnavailable:
            return self._unrecorded(out, "audit.unavailable")
        except Exception:  # any audit failure fails closed like AuditUnavailable
            self.counters.audit_errors += 1
            log.exception("audit trail failed to record a call")
            return self._unrecorded(out, "audit.error")
        return out

    def _unrecorded(self, out: CallOutcome, why: str) -> CallOutcome:
        if out.ctx.state.config.audit.on_failure == "allow":
            self.counters.audit_fail_open += 1
            return out
        self.counters.audit_unavailable_denials += 1
        if out.result is None:
            return out
        self.counters.denials += 1
        return deny(
            out.ctx.degrade(why),
            "audit.unavailable",
            "audit:unavailable",
            "the audit trail could not record this call, so its result is withheld",
        )


def _decision_record(out: CallOutcome, d: Decision | None, approval: dict[str, Any] | None) -> dict[str, Any]:
    """The decision as audited: the final effect and the rule that made it.

    A refusal after the policy allowed (approval, budget, inspection, audit) is recorded as that
    refusal; the policy's own rule stays in ``reasons`` so nothing is lost.
    """
    risk = d.risk if d is not None else "unknown"
    if out.rule_id is not None and (d is None or out.rule_id != d.rule_id):
        reasons = [out.reason] + ([f"policy: {d.effect} ({d.rule_id})"] if d is not None else [])
        return {"effect": "deny", "rule_id": out.rule_id, "reasons": reasons, "risk": risk, "approval": approval}
    if d is None:
        return {"effect": None, "rule_id": None, "reasons": [], "risk": risk, "approval": approval}
    return {"effect": d.effect, "rule_id": d.rule_id, "reasons": list(d.reasons), "risk": risk, "approval": approval}


def _audit_result(out: CallOutcome) -> Any | None:
    if out.result is None:
        return {"message": out.message} if out.message else None
    if isinstance(out.result, ToolResultJson):
        return out.result.json
    return out.result.model_dump(mode="json", by_alias=True, exclude_none=True)


@dataclass
class CatalogStep:
    """Resolve what the client named to a server and the upstream's own name (`gate.resolve`)."""

    counters: Counters
    reload_lock: ReloadLock
    unavailable: Unavailable
    current: Callable[[], GateState] | None = None
    """The gate's state now: a call that arrives while its server's changed tool list is being
    re-read waits for it (bounded) and is judged against the new catalog, not the stale one."""

    async def __call__(self, ctx: CallContext, call_next: CallNext) -> CallOutcome:
        if ctx.call.kind == "tool" and self.current is not None:
            ctx = await self._settled(ctx)
        try:
            call, entry = await resolve(ctx.state, ctx.call, self.unavailable)
        except ToolNotFound as exc:
            self.counters.not_found += 1
            return deny(ctx, exc.code, "catalog:not_found", exc.message, "not_found")
        except CheckreinError as exc:
            # A pin since the last build may have cleared it: re-read the lock (rare path).
            state = await self.reload_lock()
            if state is not None:
                return await self(ctx.with_state(state), call_next)
            self.counters.quarantine_denials += 1
            return deny(ctx, exc.code, "catalog:quarantined", exc.message)
        return await call_next(ctx.resolved(call, entry))


    async def _settled(self, ctx: CallContext) -> CallContext:
        split = ctx.state.names.split_name(ctx.call.exposed_name)
        entry = ctx.state.catalog.entries.get(ctx.call.exposed_name)
        server = entry.server if entry is not None else (split[0] if split is not None else None)
        upstream = ctx.state.upstreams.get(server) if server is not None else None
        pending = getattr(upstream, "tools_pending", None)
        if pending is None or not pending():
            return ctx
        assert self.current is not None and server is not None
        with anyio.move_on_after(ctx.state.timeout_of(server)):
            await upstream.tools_settled()  # type: ignore[union-attr]
        return ctx.with_state(self.current())


@dataclass
class WritableStep:
    """Refuse before forwarding when the audit trail says it cannot write."""

    audit: AuditTrail
    counters: Counters

    async def __call__(self, ctx: CallContext, call_next: CallNext) -> CallOutcome:
        try:
            writable = self.audit.writable()
        except Exception:  # a broken trail is an unwritable trail
            log.exception("audit.writable() raised")
            writable = False
        if writable:
            return await call_next(ctx)
        if ctx.state.config.audit.on_failure == "allow":
            self.counters.audit_fail_open += 1
            return await call_next(ctx.degrade("audit.fail_open"))
        self.counters.audit_unavailable_denials += 1
        return deny(ctx, "audit.unavailable", "audit:unavailable", "the audit trail cannot record calls right now")


@dataclass
class PolicyStep:
    counters: Counters
    sessions: SessionTable
    clock: Callable[[], float] = time.time

    async def __call__(self, ctx: CallContext, call_next: CallNext) -> CallOutcome:
        call = ctx.call
        try:
            decision = decide(ctx.state.policy, call, self.sessions.get(call.session_id), self.clock())
        except Exception as exc:  # fail closed: any policy exception denies, counted
            self.counters.policy_errors += 1
            log.exception("policy raised on %s", call.exposed_name)
            code = exc.code if isinstance(exc, CheckreinError) else "policy.error"
            return deny(
                ctx.degrade("policy.exception"),
                code,
                "policy:error",
                f"the policy failed to decide ({type(exc).__name__})",
            )
        ctx = ctx.decided(decision)
        if decision.effect == "deny":
            return deny(ctx, decision.error_code or "policy.denied", decision.rule_id, decision.reason)
        return await call_next(ctx)


@dataclass
class BudgetStep:
    """Charge the call to every matching limit. Listings and unsubscriptions are never charged."""

    budget: Budget | None
    counters: Counters
    clock: Callable[[], float] = time.monotonic

    async def __call__(self, ctx: CallContext, call_next: CallNext) -> CallOutcome:
        if self.budget is None or ctx.call.kind in ("list", "unsubscribe"):
            return await call_next(ctx)
        try:
            verdict = self.budget.admit(ctx.call, self.clock())
            if isawaitable(verdict):
                verdict = await verdict
        except StateUnavailable as exc:
            self.counters.budget_errors += 1
            return deny(ctx.degrade("state.unavailable"), exc.code, "state:unavailable", exc.message)
        except Exception as exc:  # a broken budget refuses (fail closed)
            self.counters.budget_errors += 1
            log.exception("budget raised")
            return deny(ctx, "budget.error", "budget:error", f"the budget check failed ({type(exc).__name__})")
        if not verdict.admitted:
            self.counters.budget_denials += 1
            return deny(ctx, "budget.exceeded", verdict.rule_id or "budget", verdict.reason or "budget exceeded")
        return await call_next(ctx)


@dataclass
class ApprovalStep:
    """Ask the approver when the decision says ``ask``.

    The approver (`BoundApprover` in production) owns the one grant cache, keyed by identity,
    session, tool, argument digest and policy digest; this step only asks, within the timeout.
    """

    approver: Approver | None
    counters: Counters

    async def __call__(self, ctx: CallContext, call_next: CallNext) -> CallOutcome:
        d = ctx.decision
        if d is None or d.effect != "ask":
            return await call_next(ctx)
        call, counters = ctx.call, self.counters
        if self.approver is None:
            counters.approval_failures += 1
            return deny(ctx, "approval.failed", d.rule_id, f"{d.reason}; approval is required but no approver is configured")
        policy_digest = ctx.state.policy.digest
        request = ApprovalRequest(call, d, digest(call.arguments), policy_digest, approval_text(call, d, mask_secret_key))
        timeout_s = ctx.state.config.approval.timeout_s
        try:
            with anyio.fail_after(timeout_s):
                answer = await self.approver.approve(request)
        except TimeoutError:
            counters.approval_failures += 1
            return deny(ctx, "approval.failed", d.rule_id, f"{d.reason}; no approval within {timeout_s:g} s")
        except InputRequired as need:
            # Not a failure: a 2026-era client answers the approval form and retries the call.
            why = f"{d.reason}; approval is needed: the client was asked to confirm this call"
            return replace(deny(ctx, "approval.input_required", d.rule_id, why), pending=need.request)
        except Exception as exc:  # an approver that fails denies (fail closed)
            counters.approval_failures += 1
            log.exception("approver raised")
            return deny(ctx, "approval.failed", d.rule_id, f"{d.reason}; the approver failed ({type(exc).__name__})")
        ctx = ctx.approved(_approval_dict(answer))
        if not answer.granted:
            why = f"not approved by {answer.approver}: {answer.reason or 'denied'}"
            return deny(ctx, "approval.denied", d.rule_id, f"{d.reason}; {why}")
        counters.approvals_granted += 1
        return await call_next(ctx)


def _approval_dict(a: ApprovalResult) -> dict[str, Any]:
    reused = a.reason.endswith("(reused grant)")
    return {"approver": a.approver, "granted": a.granted, "reason": a.reason, "expires_at": a.expires_at, "reused": reused}


_WHAT = {
    "tool": "call",
    "resource": "read the resource",
    "subscribe": "subscribe to the resource",
    "prompt": "get the prompt",
    "completion": "complete an argument of",
}


def approval_text(call: ToolCall, d: Decision, mask_key: Callable[[str], str] | None = None) -> str:
    """What a human approves: who, what, the risk, and EVERY argument (canonical JSON), with the
    values the decision marks as secrets masked (a ``*`` token in a pointer: every index there, as
    the audit masks them), and each object key through ``mask_key`` (a key can be a secret).
    Never cut: a cut could hide the value that matters."""
    masked = set(d.redactions)
    args = _mask(call.arguments, "", masked, wildcard_pattern(masked), mask_key)
    try:
        text = canonical_json(args).decode("utf-8")
    except (TypeError, ValueError):
        text = repr(args)
    verb = _WHAT.get(call.kind, call.kind)
    return f"{call.identity.user} wants to {verb} {call.exposed_name} (risk {d.risk}) with arguments {text}"


def _mask(value: Any, pointer: str, masked: set[str], wild: re.Pattern[str] | None, mask_key: Callable[[str], str] | None) -> Any:
    if pointer and (pointer in masked or (wild is not None and wild.fullmatch(pointer) is not None)):
        return "***"
    if isinstance(value, dict):
        return {
            (mask_key(str(k)) if mask_key is not None else k): _mask(v, f"{pointer}/{escape_pointer(str(k))}", masked, wild, mask_key)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_mask(v, f"{pointer}/{i}", masked, wild, mask_key) for i, v in enumerate(value)]
    return value


@dataclass
class InspectStep:
    """Wraps forward: show the result to the inspector, deliver its (possibly redacted) version.

    An upstream error's text reaches the client too, so it is inspected the same way (secrets
    masked, an injection withheld) before it goes into the error the client sees.
    """

    inspector: ResultInspector | None
    counters: Counters
    sessions: SessionTable
    _skip_kinds: frozenset[str] = field(default=frozenset({"list", "subscribe", "unsubscribe"}))

    async def __call__(self, ctx: CallContext, call_next: CallNext) -> CallOutcome:
        out = await call_next(ctx)
        if self.inspector is None or out.ctx.call.kind in self._skip_kinds:
            return out
        if out.result is None:
            upstream_text = out.error_code is not None and out.error_code.startswith("upstream.")
            return self._inspect_error(out) if upstream_text else out
        call = out.ctx.call
        if isinstance(out.result, types.CompleteResult):
            return self._inspect_completion(out, out.result)
        if not isinstance(out.result, ToolResultJson | types.CallToolResult | types.ReadResourceResult | types.GetPromptResult):
            return out
        try:
            view = view_of(out.result)
            inspection: Inspection = self.inspector.inspect(call, view)
            result = apply_inspection(out.result, view, inspection) if inspection.action == "deliver" else None
        except Exception as exc:  # an inspector that fails withholds the result
            self.counters.inspector_errors += 1
            log.exception("result inspector raised on %s", call.exposed_name)
            ctx2 = out.ctx.degrade("inspect.exception")
            return deny(ctx2, "inspect.error", "inspect:error", f"the result could not be inspected ({type(exc).__name__})")
        octx = self._degraded(out.ctx, inspection.degraded)
        if any(f in ("untrusted", "injection") for f in inspection.flags):
            self.sessions.taint(call.session_id, call.exposed_name)
        if result is None:
            self.counters.results_withheld += 1
            reason = inspection.reason or "the result was withheld by result inspection"
            code = inspection.code or ("result.withheld" if inspection.action == "withhold" else "result.denied")
            o = deny(octx, code, "inspect:" + inspection.action, reason)
            return replace(o, flags=inspection.flags, redactions=inspection.redactions)
        return out.inspected(octx, result, inspection.flags, inspection.redactions)

    _COUNTED: ClassVar[dict[str, str]] = {
        "inspect.truncated": "results_truncated",
        "inspect.oversize": "results_oversize",
        "inspect.too_deep": "results_too_deep",
        "inspect.bad_base64": "results_bad_data",
        "inspect.not_json": "results_bad_data",
    }

    def _degraded(self, ctx: CallContext, names: tuple[str, ...]) -> CallContext:
        """``ctx`` with each bound the inspector hit named (for the audit) and counted."""
        for name in names:
            ctx = ctx.degrade(name)
            counter = self._COUNTED.get(name)
            if counter is not None:
                setattr(self.counters, counter, getattr(self.counters, counter) + 1)
        return ctx

    def _inspect_completion(self, out: CallOutcome, result: types.CompleteResult) -> CallOutcome:
        """Completion values are upstream text the client may show or the model may read."""
        assert self.inspector is not None
        values = tuple(result.completion.values)
        try:
            inspection = self.inspector.inspect(out.ctx.call, ResultView.of_texts(*values))
        except Exception as exc:  # values that cannot be inspected are not delivered
            self.counters.inspector_errors += 1
            log.exception("inspecting a completion raised")
            return deny(out.ctx.degrade("inspect.exception"), "inspect.error", "inspect:error",
                        f"the completion could not be inspected ({type(exc).__name__})")  # fmt: skip
        if inspection.action != "deliver":
            self.counters.results_withheld += 1
            o = deny(out.ctx, "result.withheld", "inspect:" + inspection.action, inspection.reason or "withheld")
            return replace(o, flags=inspection.flags, redactions=inspection.redactions)
        if inspection.texts == values:
            return replace(out, flags=inspection.flags)
        completion = result.completion.model_copy(update={"values": list(inspection.texts)})
        return replace(out, result=result.model_copy(update={"completion": completion}), flags=inspection.flags,
                       redactions=inspection.redactions)  # fmt: skip

    def _inspect_error(self, out: CallOutcome) -> CallOutcome:
        assert self.inspector is not None
        call = out.ctx.call
        try:
            inspection = self.inspector.inspect_error(call, out.message, None)
        except Exception as exc:  # an error text that cannot be inspected is not shown
            self.counters.inspector_errors += 1
            log.exception("inspecting an upstream error of %s raised", call.exposed_name)
            return replace(
                out,
                ctx=out.ctx.degrade("inspect.exception"),
                message=f"error from checkrein: {call.server!r} failed and its error text could not be inspected "
                f"({type(exc).__name__}) (code upstream.error)",
            )
        octx = self._degraded(out.ctx, inspection.degraded)
        if any(f in ("untrusted", "injection") for f in inspection.flags):
            self.sessions.taint(call.session_id, call.exposed_name)
        if inspection.withheld:
            self.counters.results_withheld += 1
            text = f"error from checkrein: {inspection.message} (code upstream.error)"
            return replace(out, ctx=octx, message=text, flags=inspection.flags, redactions=inspection.redactions)
        return replace(out, ctx=octx, message=inspection.message, flags=inspection.flags, redactions=inspection.redactions)
