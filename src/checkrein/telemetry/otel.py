"""OpenTelemetry over OTLP/HTTP (extra ``checkrein[otel]``): a span per request, a child span per
upstream call, and the metrics registry pushed through the same SDK.

Spans follow the OpenTelemetry semantic conventions for MCP (gen-ai semconv, development status):

    SERVER span   "{mcp.method.name} {exposed name}" (resources: "{mcp.method.name}"), parent = the
                  caller's W3C ``traceparent`` from ``_meta`` (or the HTTP header); its span id is
                  the audit event's ``span_id``, so a trace and the audit join on ids
    CLIENT span   "{mcp.method.name} {upstream tool}", child of the server span; its context goes
                  to the upstream as ``_meta.traceparent``

Attributes: ``mcp.method.name``, ``gen_ai.tool.name`` / ``gen_ai.prompt.name`` /
``mcp.resource.uri``, ``gen_ai.operation.name = execute_tool``, ``mcp.session.id``,
``network.transport`` (``pipe`` for stdio, ``tcp`` for HTTP), ``error.type`` (with status ERROR),
and checkrein's own: ``checkrein.server``, ``checkrein.decision.effect``,
``checkrein.decision.rule_id``, ``checkrein.outcome``, ``checkrein.error_code``.

Metrics: every counter and gauge of the `Metrics` registry as an observable instrument of the same
name, read at each export, plus the semconv histogram ``mcp.server.operation.duration``.

Nothing here installs global providers: each gateway has its own, so tests and embedded gateways
never see each other's telemetry.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any

import requests
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from checkrein.config.fleet import TelemetrySettings

from .metrics import Metrics
from .tracing import CallFacts, FinishFacts

__all__ = ["OtelTracing"]

log = logging.getLogger("checkrein.telemetry")

_NEXT_IDS: contextvars.ContextVar[tuple[int, int] | None] = contextvars.ContextVar("checkrein_next_ids", default=None)
"""(trace id, span id) the next span started in this context must take (the audit's ids)."""

_METHODS = {
    "tool": "tools/call", "resource": "resources/read", "prompt": "prompts/get", "completion": "completion/complete",
    "subscribe": "resources/subscribe", "unsubscribe": "resources/unsubscribe",
}


def _method(kind: str) -> str:
    return _METHODS.get(kind, kind)


class _CallIds(IdGenerator):
    """Random ids, except for a request span: that one takes the ids the audit records."""

    def __init__(self) -> None:
        self._random = RandomIdGenerator()

    def generate_span_id(self) -> int:
        ids = _NEXT_IDS.get()
        return ids[1] if ids is not None else self._random.generate_span_id()

    def generate_trace_id(self) -> int:
        ids = _NEXT_IDS.get()
        return ids[0] if ids is not None else self._random.generate_trace_id()

    def is_trace_id_random(self) -> bool:
        return True  # ours come from `secrets.token_hex`, a caller's are its own


def _attributes(facts: CallFacts, *, name: str) -> dict[str, Any]:
    method = _method(facts.kind)
    attrs: dict[str, Any] = {"mcp.method.name": method, "network.transport": "pipe" if facts.transport == "stdio" else "tcp"}
    if facts.session_id:
        attrs["mcp.session.id"] = facts.session_id
    if facts.kind == "tool":
        attrs["gen_ai.tool.name"] = name
        attrs["gen_ai.operation.name"] = "execute_tool"
    elif facts.kind == "prompt":
        attrs["gen_ai.prompt.name"] = name
    elif facts.kind in ("resource", "subscribe", "unsubscribe"):
        attrs["mcp.resource.uri"] = name
    return attrs


def _span_name(kind: str, name: str) -> str:
    method = _method(kind)
    return f"{method} {name}" if kind in ("tool", "prompt") else method


def _traceparent(ctx: SpanContext) -> str:
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


class _UpstreamSpan:
    def __init__(self, span: trace.Span) -> None:
        self._span = span
        self.traceparent = _traceparent(span.get_span_context())

    def finish(self, error_type: str | None) -> None:
        if error_type is not None:
            self._span.set_attribute("error.type", error_type)
            self._span.set_status(Status(StatusCode.ERROR, error_type))
        self._span.end()


class _CallSpan:
    def __init__(self, tracing: OtelTracing, span: trace.Span, facts: CallFacts) -> None:
        self._tracing = tracing
        self._span = span
        self._facts = facts
        self._t0 = time.perf_counter()

    def upstream(self, kind: str, server: str, tool: str) -> _UpstreamSpan:
        parent = trace.set_span_in_context(self._span)
        facts = CallFacts(self._facts.kind, tool, self._facts.session_id, "", "", None, self._facts.transport)
        attrs = _attributes(facts, name=tool)
        attrs["checkrein.server"] = server
        span = self._tracing.tracer.start_span(
            _span_name(kind, tool), context=parent, kind=SpanKind.CLIENT, attributes=attrs
        )
        return _UpstreamSpan(span)

    def finish(self, facts: FinishFacts) -> None:
        span = self._span
        span.set_attribute("checkrein.outcome", facts.outcome)
        span.set_attribute("checkrein.decision.effect", facts.effect)
        span.set_attribute("checkrein.decision.rule_id", facts.rule_id)
        if facts.server:
            span.set_attribute("checkrein.server", facts.server)
        if facts.error_code:
            span.set_attribute("checkrein.error_code", facts.error_code)
        error_type = facts.error_type
        if error_type is not None:
            span.set_attribute("error.type", error_type)
            span.set_status(Status(StatusCode.ERROR, facts.message or error_type))
        span.end()
        attrs = {"mcp.method.name": _method(self._facts.kind), "checkrein.outcome": facts.outcome}
        if self._facts.kind == "tool" and facts.tool_label:
            attrs["gen_ai.tool.name"] = facts.tool_label
        if error_type is not None:
            attrs["error.type"] = error_type
        self._tracing.operation_duration.record(time.perf_counter() - self._t0, attrs)


class OtelTracing:
    """Implements `checkrein.telemetry.tracing.Tracing` with the OpenTelemetry SDK."""

    def __init__(self, settings: TelemetrySettings, metrics: Metrics, *, endpoint: str, instance_id: str) -> None:
        resource = Resource.create({"service.name": settings.service_name, "service.instance.id": instance_id})
        session = requests.Session()
        session.trust_env = False  # the collector is where the config says, never via a proxy
        self.provider = TracerProvider(resource=resource, id_generator=_CallIds(), shutdown_on_exit=False)
        self._spans = BatchSpanProcessor(
            OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces", session=session, timeout=10),
            schedule_delay_millis=1000,
        )
        self.provider.add_span_processor(self._spans)
        from checkrein import __version__

        self.tracer = self.provider.get_tracer("checkrein", __version__)
        metric_session = requests.Session()
        metric_session.trust_env = False
        self._reader = PeriodicExportingMetricReader(
            OTLPMetricExporter(endpoint=f"{endpoint}/v1/metrics", session=metric_session, timeout=10),
            export_interval_millis=settings.metrics_interval_s * 1000,
        )
        self.meter_provider = MeterProvider(resource=resource, metric_readers=[self._reader], shutdown_on_exit=False)
        meter = self.meter_provider.get_meter("checkrein", __version__)
        self.operation_duration = meter.create_histogram(
            "mcp.server.operation.duration", unit="s", description="MCP request duration as observed by checkrein."
        )
        self._meter = meter
        self._bridge = _RegistryBridge(metrics)

    def export_registry(self) -> None:
        """Export every counter and gauge family the registry has now (call once its sources are in)."""
        self._bridge.register(self._meter)

    def start_call(self, facts: CallFacts) -> _CallSpan:
        parent = None
        if facts.parent_span_id:
            remote = SpanContext(
                trace_id=int(facts.trace_id, 16),
                span_id=int(facts.parent_span_id, 16),
                is_remote=True,
                trace_flags=TraceFlags(TraceFlags.SAMPLED),
            )
            parent = trace.set_span_in_context(NonRecordingSpan(remote))
        token = _NEXT_IDS.set((int(facts.trace_id, 16), int(facts.span_id, 16)))
        try:
            span = self.tracer.start_span(
                _span_name(facts.kind, facts.name),
                context=parent,
                kind=SpanKind.SERVER,
                attributes=_attributes(facts, name=facts.name),
            )
        finally:
            _NEXT_IDS.reset(token)
        return _CallSpan(self, span, facts)

    def flush(self, timeout_s: float = 5.0) -> None:
        self._spans.force_flush(int(timeout_s * 1000))
        self._reader.force_flush(int(timeout_s * 1000))

    def shutdown(self) -> None:
        """Export what is pending and stop (bounded by the exporters' timeouts)."""
        try:
            self.provider.shutdown()
        finally:
            self.meter_provider.shutdown()


class _RegistryBridge:
    """Observable instruments over the registry's counters and gauges, one per family known when
    the gateway started; one collect serves every instrument of an export."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self._lock = threading.Lock()
        self._cache: dict[str, list[tuple[dict[str, str], float]]] = {}
        self._cached_at = 0.0

    def register(self, meter: Any) -> None:
        for family in self._metrics.families():
            if family.type == "counter":
                meter.create_observable_counter(family.name, callbacks=[self._callback(family.name)], description=family.documentation)
            elif family.type == "gauge":
                meter.create_observable_gauge(family.name, callbacks=[self._callback(family.name)], description=family.documentation)

    def _callback(self, name: str) -> Any:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            del options
            return [Observation(value, labels) for labels, value in self._read(name)]

        return observe

    def _read(self, name: str) -> Sequence[tuple[dict[str, str], float]]:
        with self._lock:
            now = time.monotonic()
            if now - self._cached_at > 0.5:
                cache: dict[str, list[tuple[dict[str, str], float]]] = {}
                for family in self._metrics.families():
                    if family.type not in ("counter", "gauge"):
                        continue
                    rows = cache.setdefault(family.name, [])
                    for s in family.samples:
                        if not s.name.endswith("_created"):
                            rows.append((dict(s.labels), float(s.value)))
                self._cache, self._cached_at = cache, now
            return self._cache.get(name, [])
