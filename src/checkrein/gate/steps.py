"""The gate's steps. Every tools/call, resources/read and prompts/get passes them, in this order:

    audit      outermost: one `CallRecord` per call, ALWAYS, whatever happened inside
    catalog    resolve the exposed name (unknown -> `tool.not_found`, drifted -> `tool.quarantined`)
    writable   the audit trail must be able to take the event (else `audit.unavailable`)
    policy     `decide` (pure); any exception denies with `policy.error`
    approval   when the decision says ask (approver error or timeout -> `approval.failed`)
    budget     rate limits and caps (`budget.exceeded`)
    inspect    wraps forward: the inspector sees the result (exception -> withheld, `inspect.error`)
    forward    the upstream call with the server's timeout; one retry for read-only tools only

Each step is a small object ``step(ctx, call_next) -> CallOutcome`` over a frozen `CallContext`;
a step changes the call only by passing a new context on. The chain is built once, at
construction: nothing on the per-call path lists tools, compiles policy or opens sessions.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import anyio
import mcp.types as types

from checkrein.audit.record import CallRecord, Outcome
from checkrein.canonical import canonical_json, digest
from checkrein.catalog import CatalogEntry, split_exposed_name, split_resource_uri
from checkrein.catalog.namespace import resource_policy_name
from checkrein.errors import (
    AuditUnavailable,
    CheckreinError,
    ToolNotFound,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from checkrein.policy import Decision, Inspection, ResultInspector, ToolCall, decide

from .result_view import apply_inspection, strip_upstream_meta, view_of
from .seams import ApprovalRequest, ApprovalResult, Approver, Budget

if TYPE_CHECKING:
    from .pipeline import Gate

__all__ = [
    "CallContext",
    "CallNext",
    "CallOutcome",
    "CallRefused",
    "Counters",
    "GateResult",
    "Step",
    "build_chain",
    "default_steps",
    "denial_text",
]

log = logging.getLogger("checkrein.gate")

GateResult: TypeAlias = types.CallToolResult | types.ReadResourceResult | types.GetPromptResult


class CallRefused(CheckreinError):
    """A resource read or prompt get the gate refused; ``code`` is the stable reason code.

    Tool calls never raise it: their refusals are `CallToolResult(isError=True)`.
    """


@dataclass
class Counters:
    """Every degradation and refusal, counted under a stable name (for `checkrein stats`)."""

    calls: int = 0
    denials: int = 0
    not_found: int = 0
    quarantine_denials: int = 0
    policy_errors: int = 0
    approval_failures: int = 0
    approvals_granted: int = 0
    budget_denials: int = 0
    budget_errors: int = 0
    audit_unavailable_denials: int = 0
    audit_fail_open: int = 0
    audit_errors: int = 0
    inspector_errors: int = 0
    results_withheld: int = 0
    flow_asks: int = 0
    flow_denials: int = 0
    flow_errors: int = 0
    upstream_timeouts: int = 0
    upstream_crashes: int = 0
    upstream_errors: int = 0
    retries: int = 0
    internal_errors: int = 0
    cancelled: int = 0

    def as_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True)
class CallContext:
    """One call on its way through the steps. Frozen: steps pass on a new value."""

    call: ToolCall
    started: float
    entry: CatalogEntry | None = None
    decision: Decision | None = None
    approval: dict[str, Any] | None = None
    degraded: tuple[str, ...] = ()

    # Explicit constructors instead of `dataclasses.replace`, which introspects fields on every
    # call: these run on every tools/call.
    def resolved(self, call: ToolCall, entry: CatalogEntry | None) -> CallContext:
        return CallContext(call, self.started, entry, self.decision, self.approval, self.degraded)

    def decided(self, decision: Decision) -> CallContext:
        degraded = (*self.degraded, *decision.degraded) if decision.degraded else self.degraded
        return CallContext(self.call, self.started, self.entry, decision, self.approval, degraded)

    def approved(self, approval: dict[str, Any]) -> CallContext:
        return CallContext(self.call, self.started, self.entry, self.decision, approval, self.degraded)

    def degrade(self, name: str) -> CallContext:
        return CallContext(self.call, self.started, self.entry, self.decision, self.approval, (*self.degraded, name))


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


CallNext: TypeAlias = Callable[[CallContext], Awaitable[CallOutcome]]


class Step(Protocol):
    async def __call__(self, ctx: CallContext, call_next: CallNext) -> CallOutcome: ...


def denial_text(reason: str, rule_id: str) -> str:
    return f"denied by checkrein: {reason} (rule {rule_id})"


def deny(ctx: CallContext, code: str, rule_id: str, reason: str, outcome: Outcome = "denied") -> CallOutcome:
    return CallOutcome(ctx, outcome, None, code, denial_text(reason, rule_id), rule_id=rule_id, reason=reason)


def fail(ctx: CallContext, code: str, outcome: Outcome, message: str) -> CallOutcome:
    """An error that is not a policy denial (upstream down, timeout): the text says what happened."""
    return CallOutcome(ctx, outcome, None, code, f"error from checkrein: {message} (code {code})")


def build_chain(steps: Sequence[Step], terminal: CallNext) -> CallNext:
    """Compose ``steps`` (outermost first) around ``terminal`` once; returns the entry point."""
    nxt = terminal
    for step in reversed(steps):
        nxt = _link(step, nxt)
    return nxt


def _link(step: Step, nxt: CallNext) -> CallNext:
    async def run(ctx: CallContext) -> CallOutcome:
        return await step(ctx, nxt)

    return run


# -- steps -------------------------------------------------------------------------------------


@dataclass
class AuditStep:
    """Outermost. Records every call; an unrecordable allowed call becomes `audit.unavailable`."""

    gate: Gate

    async def __call__(self, ctx: CallContext, call_next: CallNext) -> CallOutcome:
        counters = self.gate.counters
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
        if self.gate.audit_discards:
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
        )
        counters = self.gate.counters
        try:
            await self.gate.audit.record_call(record)
        except AuditUnavailable:
            return self._unrecorded(out, "audit.unavailable")
        except Exception:  # any audit failure fails closed like AuditUnavailable
            counters.audit_errors += 1
            log.exception("audit trail failed to record a call")
            return self._unrecorded(out, "audit.error")
        return out

    def _unrecorded(self, out: CallOutcome, why: str) -> CallOutcome:
        if self.gate.config.audit.on_failure == "allow":
            self.gate.counters.audit_fail_open += 1
            return out
        self.gate.counters.audit_unavailable_denials += 1
        if out.result is None:
            return out
        self.gate.counters.denials += 1
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
    return out.result.model_dump(mode="json", by_alias=True, exclude_none=True)


@dataclass
class CatalogStep:
    """Resolve the exposed name to its server and upstream name; fill them into the call."""

    gate: Gate

    async def __call__(self, ctx: CallContext, call_next: CallNext) -> CallOutcome:
        call = ctx.call
        gate = self.gate
        if call.kind == "tool":
            try:
                entry = gate.catalog.resolve(call.exposed_name)
            except ToolNotFound as exc:
                gate.counters.not_found += 1
                why = gate.unavailable_reason(call.exposed_name)
                return deny(ctx, exc.code, "catalog:not_found", why or exc.message, "not_found")
            except CheckreinError as exc:
                # A pin since the last build may have cleared it: re-read the lock (rare path).
                if await gate.reload_lock_if_changed():
                    return await self(ctx, call_next)
                gate.counters.quarantine_denials += 1
                return deny(ctx, exc.code, "catalog:quarantined", exc.message)
            new_call = ToolCall(
                call.identity, call.session_id, call.trace_id, call.span_id, call.exposed_name, call.arguments,
                entry.server, entry.tool, call.parent_span_id, call.kind, call.model, call.session_given, call.task,
            )
            return await call_next(ctx.resolved(new_call, entry))
        try:
            if call.kind == "resource":
                server, original = split_resource_uri(call.exposed_name)
                named = resource_policy_name(server, original, gate.separator)
                args: dict[str, Any] = {"uri": original}
            else:
                server, original = split_exposed_name(call.exposed_name, gate.separator)
                named, args = call.exposed_name, call.arguments
        except ValueError as exc:
            gate.counters.not_found += 1
            return deny(ctx, "tool.not_found", "catalog:not_found", str(exc), "not_found")
        if server not in gate.ready_servers():
            gate.counters.not_found += 1
            why = gate.unavailable_reason(named) or f"no server named {server!r}"
            return deny(ctx, "tool.not_found", "catalog:not_found", why, "not_found")
        new_call = replace(call, server=server, tool=original, exposed_name=named, arguments=args)
        return await call_next(ctx.resolved(new_call, None))


@dataclass
class WritableStep:
    """Refuse before forwarding when the audit trail says it cannot write."""

    gate: Gate

    async def __call__(self, ctx: CallContext, call_next: CallNext) -> CallOutcome:
        try:
            writable = self.gate.audit.writable()
        except Exception:  # a broken trail is an unwritable trail
            log.exception("audit.writable() raised")
            writable = False
        if writable:
            return await call_next(ctx)
        if self.gate.config.audit.on_failure == "allow":
            self.gate.counters.audit_fail_open += 1
            return await call_next(ctx.degrade("audit.fail_open"))
        self.gate.counters.audit_unavailable_denials += 1
        return deny(ctx, "audit.unavailable", "audit:unavailable", "the audit trail cannot record calls right now")


@dataclass
class PolicyStep:
    gate: Gate

    async def __call__(self, ctx: CallContext, call_next: CallNext) -> CallOutcome:
        gate = self.gate
        try:
            decision = decide(gate.policy, ctx.call, gate.sessions.get(ctx.call.session_id), time.time())
        except Exception as exc:  # fail closed: any policy exception denies, counted
            gate.counters.policy_errors += 1
            log.exception("policy raised on %s", ctx.call.exposed_name)
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
class ApprovalStep:
    """Ask the approver when the decision says ``ask``; a grant is bound to the arguments and policy."""

    gate: Gate
    approver: Approver | None
    _grants: dict[tuple[str, str, str, str], ApprovalResult] = field(default_factory=dict)

    async def __call__(self, ctx: CallContext, call_next: CallNext) -> CallOutcome:
        d = ctx.decision
        if d is None or d.effect != "ask":
            return await call_next(ctx)
        call, counters = ctx.call, self.gate.counters
        args_digest = digest(call.arguments)
        key = (call.session_id, call.exposed_name, args_digest, self.gate.policy.digest)
        cached = self._grants.get(key)
        if cached is not None and cached.expires_at is not None and cached.expires_at > time.time():
            return await call_next(ctx.approved(_approval_dict(cached, reused=True)))
        if self.approver is None:
            counters.approval_failures += 1
            return deny(ctx, "approval.failed", d.rule_id, f"{d.reason}; approval is required but no approver is configured")
        request = ApprovalRequest(call, d, args_digest, self.gate.policy.digest, _summary(call, d))
        timeout_s = self.gate.config.approval.timeout_s
        try:
            with anyio.fail_after(timeout_s):
                answer = await self.approver.approve(request)
        except TimeoutError:
            counters.approval_failures += 1
            return deny(ctx, "approval.failed", d.rule_id, f"{d.reason}; no approval within {timeout_s:g} s")
        except Exception as exc:  # an approver that fails denies (fail closed)
            counters.approval_failures += 1
            log.exception("approver raised")
            return deny(ctx, "approval.failed", d.rule_id, f"{d.reason}; the approver failed ({type(exc).__name__})")
        ctx = ctx.approved(_approval_dict(answer))
        if not answer.granted:
            why = f"not approved by {answer.approver}: {answer.reason or 'denied'}"
            return deny(ctx, "approval.denied", d.rule_id, f"{d.reason}; {why}")
        counters.approvals_granted += 1
        if answer.expires_at is not None:
            if len(self._grants) >= _MAX_GRANTS:
                now = time.time()
                self._grants = {k: g for k, g in self._grants.items() if (g.expires_at or 0) > now}
            self._grants[key] = answer
        return await call_next(ctx)


_MAX_GRANTS = 10_000
"""Expired grants are pruned once this many are held."""


def _approval_dict(a: ApprovalResult, *, reused: bool = False) -> dict[str, Any]:
    return {"approver": a.approver, "granted": a.granted, "reason": a.reason, "expires_at": a.expires_at, "reused": reused}


def _summary(call: ToolCall, d: Decision) -> str:
    masked = set(d.redactions)
    preview = {k: ("***" if f"/{k}" in masked else v) for k, v in call.arguments.items()}
    text = _preview(preview)
    return f"{call.identity.user} wants to call {call.exposed_name} (risk {d.risk}) with {text}"


def _preview(value: Any, limit: int = 200) -> str:
    try:
        raw = canonical_json(value).decode("utf-8")
    except (TypeError, ValueError):
        raw = repr(value)
    return raw if len(raw) <= limit else raw[: limit - 3] + "..."


@dataclass
class BudgetStep:
    gate: Gate
    budget: Budget | None

    async def __call__(self, ctx: CallContext, call_next: CallNext) -> CallOutcome:
        if self.budget is None:
            return await call_next(ctx)
        try:
            verdict = self.budget.admit(ctx.call, time.monotonic())
        except Exception as exc:  # a broken budget refuses (fail closed)
            self.gate.counters.budget_errors += 1
            log.exception("budget raised")
            return deny(ctx, "budget.error", "budget:error", f"the budget check failed ({type(exc).__name__})")
        if not verdict.admitted:
            self.gate.counters.budget_denials += 1
            return deny(ctx, "budget.exceeded", verdict.rule_id or "budget", verdict.reason or "budget exceeded")
        return await call_next(ctx)


@dataclass
class InspectStep:
    """Wraps forward: show the result to the inspector, deliver its (possibly redacted) version."""

    gate: Gate
    inspector: ResultInspector | None

    async def __call__(self, ctx: CallContext, call_next: CallNext) -> CallOutcome:
        out = await call_next(ctx)
        if out.result is None:
            return out
        if self.inspector is None:
            return out
        call = out.ctx.call
        try:
            view = view_of(out.result)
            inspection: Inspection = self.inspector.inspect(call, view)
        except Exception as exc:  # an inspector that fails withholds the result
            self.gate.counters.inspector_errors += 1
            log.exception("result inspector raised on %s", call.exposed_name)
            ctx2 = out.ctx.degrade("inspect.exception")
            return deny(ctx2, "inspect.error", "inspect:error", f"the result could not be inspected ({type(exc).__name__})")
        if any(f in ("untrusted", "injection") for f in inspection.flags):
            self.gate.sessions.taint(call.session_id, call.exposed_name)
        if inspection.action != "deliver":
            self.gate.counters.results_withheld += 1
            reason = inspection.reason or "the result was withheld by result inspection"
            code = "result.withheld" if inspection.action == "withhold" else "result.denied"
            o = deny(out.ctx, code, "inspect:" + inspection.action, reason)
            return replace(o, flags=inspection.flags, redactions=inspection.redactions)
        result = apply_inspection(out.result, view, inspection)
        return replace(out, result=result, flags=inspection.flags, redactions=inspection.redactions)


@dataclass
class ForwardStep:
    """Terminal step: the upstream call, with the server's timeout."""

    gate: Gate

    async def __call__(self, ctx: CallContext) -> CallOutcome:
        gate, call = self.gate, ctx.call
        upstream = gate.upstreams.get(call.server)
        if upstream is None:
            return fail(ctx, "upstream.unavailable", "error", f"server {call.server!r} is not connected")
        timeout_s = gate.timeout_of(call.server)
        attempts = 2 if gate.is_read_only(ctx) else 1
        for attempt in range(attempts):
            try:
                # The upstream enforces timeout_s (the `Upstream` contract: it never hangs); a second
                # cancel scope here would cost as much as the rest of this step.
                result = await self._send(upstream, call, timeout_s)
            except (UpstreamTimeout, TimeoutError):
                gate.counters.upstream_timeouts += 1
                return fail(ctx, "upstream.timeout", "timeout", f"{call.server!r} did not answer within {timeout_s:g} s")
            except UpstreamUnavailable as exc:
                gate.counters.upstream_crashes += 1
                if attempt + 1 < attempts:
                    gate.counters.retries += 1
                    continue
                return fail(ctx, exc.code, "error", f"server {call.server!r} is unavailable: {exc.message}")
            except Exception as exc:  # anything else from the upstream is an error result, never a crash
                gate.counters.upstream_errors += 1
                log.warning("server %r failed on %s", call.server, call.exposed_name, exc_info=True)
                code = exc.code if isinstance(exc, CheckreinError) else "upstream.error"
                return fail(ctx, code, "error", f"server {call.server!r} failed: {exc}")
            gate.sessions.record_forwarded(call.session_id, call.exposed_name)
            is_error = isinstance(result, types.CallToolResult) and result.is_error
            return CallOutcome(ctx, "error" if is_error else "ok", result, "tool.error" if is_error else None)
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    async def _send(upstream: Any, call: ToolCall, timeout_s: float) -> GateResult:
        if call.kind == "tool":
            r: GateResult = await upstream.call_tool(call.tool, call.arguments, timeout_s=timeout_s)
        elif call.kind == "resource":
            r = await upstream.read_resource(call.tool, timeout_s=timeout_s)
        else:
            args = {k: str(v) for k, v in call.arguments.items()} or None
            r = await upstream.get_prompt(call.tool, args, timeout_s=timeout_s)
        return strip_upstream_meta(r)


def default_steps(
    gate: Gate,
    *,
    approver: Approver | None,
    budget: Budget | None,
    inspector: ResultInspector | None,
) -> tuple[list[Step], CallNext]:
    """The DESIGN.md order. Returned separately so a test (or a later issue) can insert a step."""
    from .flow import FlowStep  # flow builds on this module's types

    steps: list[Step] = [
        AuditStep(gate),
        CatalogStep(gate),
        WritableStep(gate),
        PolicyStep(gate),
        FlowStep(lambda: gate.policy, gate.flows, gate.counters),
        ApprovalStep(gate, approver),
        BudgetStep(gate, budget),
        InspectStep(gate, inspector),
    ]
    return steps, ForwardStep(gate).__call__

