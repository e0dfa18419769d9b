"""The gate's side of telemetry: what it feeds the registry per call, and the sources it adds.

`instrument` wraps the chain built by `default_steps` without changing any step:

    meter      outermost: the final decision (effect, rule) and the call's latency per tool;
               with tracing, the request's SERVER span (parent: the caller's traceparent)
    each step  its self time (time inside the step, the steps after it excluded)
    forward    the upstream call as a CLIENT child span; its traceparent goes to the upstream
               in ``_meta`` (without tracing: checkrein's own span id, as audited)

`watch` registers the gate's existing counters as scrape-time sources: `Counters`, the policy's
`PolicyCounters` (read through ``gate.policy``, so a reload is followed), the audit trail's
counters, each upstream's ``info`` and ``stats``, and the session/catalog sizes.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from checkrein.audit.shipper import SHIPPER_GAUGES
from checkrein.telemetry import (
    UNKNOWN_TOOL,
    CounterSource,
    LabelledSource,
    Metrics,
    Telemetry,
    UpstreamSource,
)
from checkrein.telemetry.tracing import CallFacts, CallSpan, FinishFacts, Tracing
from checkrein.upstream.propagation import OUTBOUND_TRACEPARENT

from .chain import CallContext, CallNext, CallOutcome, Step

if TYPE_CHECKING:
    from .pipeline import Gate

__all__ = ["AUDIT_GAUGES", "final_decision", "instrument", "stats_view", "tool_label", "watch", "watch_state"]

log = logging.getLogger("checkrein.gate")

AUDIT_GAUGES = frozenset({"queue_depth", "queue_max_seen", "writable", "sqlite_rows_behind", *SHIPPER_GAUGES})
"""Audit writer values that go up and down (the rest only count up)."""


def final_decision(out: CallOutcome) -> tuple[str, str]:
    """``(effect, rule)`` as audited: a refusal after the policy allowed is that refusal."""
    d = out.ctx.decision
    if out.rule_id is not None and (d is None or out.rule_id != d.rule_id):
        return "deny", out.rule_id
    if d is None:
        return "none", out.error_code or "none"
    return d.effect, d.rule_id


def tool_label(out: CallOutcome) -> str:
    """A bounded label: exposed tool or prompt names the catalog knows; a resource's server."""
    call = out.ctx.call
    if out.outcome == "not_found":
        return UNKNOWN_TOOL
    if call.kind == "tool":
        return call.exposed_name if out.ctx.entry is not None else UNKNOWN_TOOL
    if call.kind == "prompt":
        return call.exposed_name if call.server else UNKNOWN_TOOL
    # Resource URIs, completions, listings: client-chosen names; the server is the bounded label.
    return f"{call.server}:{call.kind}" if call.server else f"({call.kind})"


_SPAN: contextvars.ContextVar[CallSpan | None] = contextvars.ContextVar("checkrein_call_span", default=None)
_INNER: contextvars.ContextVar[list[float] | None] = contextvars.ContextVar("checkrein_step_inner", default=None)
"""Per call (set by `_Meter`): slot ``d`` sums the time spent inside the link below depth ``d``."""


@dataclass
class _Meter:
    metrics: Metrics
    tracing: Tracing | None

    slots: int = 0
    """How many timed steps follow (their ``_INNER`` slots, plus the meter's own slot 0)."""

    async def __call__(self, ctx: CallContext, call_next: CallNext) -> CallOutcome:
        token = _INNER.set([0.0] * (self.slots + 1)) if self.slots else None
        try:
            if self.tracing is None:
                out = await call_next(ctx)
            else:
                out = await self._traced(ctx, call_next, self.tracing)
        finally:
            if token is not None:
                _INNER.reset(token)
        m = self.metrics
        effect, rule = final_decision(out)
        m.decisions.labels(effect, rule).inc()
        m.call_duration.labels(tool_label(out), ctx.call.kind, out.outcome).observe(time.perf_counter() - ctx.started)
        return out

    async def _traced(self, ctx: CallContext, call_next: CallNext, tracing: Tracing) -> CallOutcome:
        call = ctx.call
        facts = CallFacts(
            call.kind, call.exposed_name, call.session_id, call.trace_id, call.span_id, call.parent_span_id,
            "stdio" if call.identity.source == "stdio" else "http",
        )
        try:
            span = tracing.start_call(facts)
        except Exception:  # tracing is an observer: its failure never touches the call
            self.metrics.backend_errors.labels("otlp", "start_span").inc()
            log.warning("starting a span failed", exc_info=True)
            return await call_next(ctx)
        token = _SPAN.set(span)
        try:
            out = await call_next(ctx)
        except BaseException:
            _finish(self.metrics, span, FinishFacts("error", "none", "none", "call.cancelled", "cancelled"))
            raise
        finally:
            _SPAN.reset(token)
        effect, rule = final_decision(out)
        error_type = None
        if out.outcome != "ok":
            error_type = out.error_code or out.outcome
        final = out.ctx.call
        _finish(
            self.metrics,
            span,
            FinishFacts(out.outcome, effect, rule, out.error_code, error_type, out.message, final.server, tool_label(out)),
        )
        return out


def _finish(metrics: Metrics, span: CallSpan, facts: FinishFacts) -> None:
    try:
        span.finish(facts)
    except Exception:  # an exporter problem is counted, never raised into the call
        metrics.backend_errors.labels("otlp", "end_span").inc()
        log.warning("ending a span failed", exc_info=True)


@dataclass
class _Timed:
    """A step timed for its self time (the time inside it, the steps after it excluded).

    Its link (`build_chain` calls `link`) is one coroutine around the step, without a wrapper of
    ``call_next``: the link below adds its elapsed time to this link's slot of the call's
    ``_INNER`` list, and this link subtracts it."""

    step: Step
    hist: Any  # a bound `Histogram` child
    depth: int = 1
    """Position below the meter (1: the outermost timed step); its slot in ``_INNER``."""

    def link(self, nxt: CallNext) -> CallNext:
        return _TimedLink(self.step, nxt, self.hist, self.depth).run

    async def __call__(self, ctx: CallContext, call_next: CallNext) -> CallOutcome:
        return await _TimedLink(self.step, call_next, self.hist, self.depth).run(ctx)


class _TimedLink:
    __slots__ = ("depth", "hist", "nxt", "step")

    def __init__(self, step: Step, nxt: CallNext, hist: Any, depth: int) -> None:
        self.step, self.nxt, self.hist, self.depth = step, nxt, hist, depth

    async def run(self, ctx: CallContext) -> CallOutcome:
        inner = _INNER.get()
        depth = self.depth
        if inner is None or len(inner) <= depth:  # a chain without the meter: no slots to share
            inner = [0.0] * (depth + 1)
        inner[depth] = 0.0
        t0 = time.perf_counter()
        try:
            return await self.step(ctx, self.nxt)
        finally:
            elapsed = time.perf_counter() - t0
            self.hist.observe(elapsed - inner[depth])
            inner[depth - 1] += elapsed


def _forward(terminal: CallNext, hist: Any | None, metrics: Metrics, depth: int = 0) -> CallNext:
    """The upstream call: timed, as a child span when tracing, its trace context sent along.
    ``depth``: the slot of the timed step above it in ``_INNER`` (0: no timed steps)."""

    async def run(ctx: CallContext) -> CallOutcome:
        t0 = time.perf_counter()
        call = ctx.call
        span = _SPAN.get()
        child = None
        if span is not None:
            try:
                child = span.upstream(call.kind, call.server, call.tool)
            except Exception:  # tracing never touches the call
                metrics.backend_errors.labels("otlp", "start_span").inc()
                log.warning("starting the upstream span failed", exc_info=True)
        # Without tracing the upstream still joins the audit's trace: our span is its parent.
        traceparent = child.traceparent if child is not None else f"00-{call.trace_id}-{call.span_id}-01"
        token = OUTBOUND_TRACEPARENT.set(traceparent)
        error_type: str | None = "cancelled"
        try:
            out = await terminal(ctx)
            error_type = None if out.outcome == "ok" else (out.error_code or out.outcome)
            return out
        finally:
            OUTBOUND_TRACEPARENT.reset(token)
            if hist is not None:
                elapsed = time.perf_counter() - t0
                hist.observe(elapsed)
                inner = _INNER.get()
                if inner is not None and len(inner) > depth:
                    inner[depth] += elapsed
            if child is not None:
                try:
                    child.finish(error_type)
                except Exception:  # tracing never touches the call
                    metrics.backend_errors.labels("otlp", "end_span").inc()
                    log.warning("ending the upstream span failed", exc_info=True)

    return run


def step_name(step: object) -> str:
    """``PolicyStep`` -> ``policy``."""
    name = type(step).__name__
    return (name[:-4] if name.endswith("Step") else name).lower() or "step"


def instrument(steps: Sequence[Step], terminal: CallNext, telemetry: Telemetry) -> tuple[list[Step], CallNext]:
    """``steps`` and ``terminal`` with the meter outermost and (``step_timing``) each step timed."""
    metrics = telemetry.metrics
    if not telemetry.step_timing:
        return [_Meter(metrics, telemetry.tracing), *steps], _forward(terminal, None, metrics)
    out: list[Step] = [_Meter(metrics, telemetry.tracing, len(steps))]
    out += [_Timed(s, metrics.step_duration.labels(step_name(s)), depth) for depth, s in enumerate(steps, 1)]
    return out, _forward(terminal, metrics.step_duration.labels("forward"), metrics, len(steps))


def watch(gate: Gate, telemetry: Telemetry) -> None:
    """Register the gate's own counters as sources of the registry (read at every scrape)."""
    metrics = telemetry.metrics
    errors = metrics.scrape_errors
    metrics.add_source(CounterSource("gate", gate.counters.as_dict, errors, help_text="Gate counter"))
    metrics.add_source(
        LabelledSource(
            "checkrein_policy_degradations",
            "Policy degradations by name (policy.exception, policy.analyzer_failed, ...); reset by a policy reload.",
            lambda: gate.policy.counters.snapshot(),
            errors,
        )
    )
    metrics.add_source(
        CounterSource(
            "audit", lambda: _audit_counters(gate), errors, gauges=AUDIT_GAUGES, help_text="Audit writer counter"
        )
    )
    metrics.add_source(UpstreamSource(lambda: [(u.info, _stats_of(u)) for u in gate.upstreams.values()], errors))
    metrics.add_source(
        CounterSource(
            "gateway",
            lambda: {
                "sessions": len(gate.sessions),
                "tools": len(gate.catalog.ok_tools),
                "quarantined_tools": len(gate.catalog.quarantined),
                "failed_servers": len(gate.failures),
            },
            errors,
            gauges=("sessions", "tools", "quarantined_tools", "failed_servers"),
            help_text="Gateway size",
        )
    )
    telemetry.sources_ready()


def watch_state(state: object, telemetry: Telemetry) -> None:
    """The shared state's counters: operations, unavailability, fallbacks, errors per operation."""
    metrics = telemetry.metrics
    stats = getattr(state, "stats", None)
    if callable(stats):
        metrics.add_source(CounterSource("state", stats, metrics.scrape_errors, help_text="Shared state"))
    primary = getattr(state, "primary", state)
    errors = getattr(primary, "errors", None)
    if isinstance(errors, dict):
        metrics.add_source(
            LabelledSource(
                "checkrein_state_errors", "Shared-state operations that failed, by operation.", lambda: errors, metrics.scrape_errors
            )
        )


def _audit_counters(gate: Gate) -> dict[str, int] | None:
    counters = getattr(gate.audit, "counters", None)
    return counters if isinstance(counters, dict) else None


def _stats_of(upstream: object) -> dict[str, int]:
    stats = getattr(upstream, "stats", None)
    return stats if isinstance(stats, dict) else {}


def stats_view(gate: Gate) -> dict[str, Any]:
    """``GET /stats``: the registry's snapshot, with the gate counters also under ``counters``
    (read back out of the same snapshot), server states and quarantined tool names."""
    snap = gate.telemetry.metrics.snapshot()
    prefix, suffix = "checkrein_gate_", "_total"
    counters = {k[len(prefix) : -len(suffix)]: v for k, v in snap.items() if k.startswith(prefix) and k.endswith(suffix)}
    return {
        "counters": counters,
        "sessions": len(gate.sessions),
        "tools": len(gate.catalog.ok_tools),
        "quarantined": [e.exposed for e in gate.catalog.quarantined],
        "servers": [
            {"name": i.name, "transport": i.transport, "state": i.state, "restarts": i.restarts, "error": i.error}
            for i in gate.upstream_infos()
        ],
        "metrics": snap,
    }
