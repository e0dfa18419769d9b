"""The tracing seam the gate talks to; `checkrein.telemetry.otel` implements it with the SDK.

Kept free of OpenTelemetry imports, so a gateway without ``checkrein[otel]`` never loads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["CallFacts", "CallSpan", "FinishFacts", "Tracing", "UpstreamSpan"]


@dataclass(frozen=True, slots=True)
class CallFacts:
    """What is known when a request arrives (ids as lowercase hex)."""

    kind: str
    """``tool``, ``resource``, ``prompt`` (and whatever other request kinds the gate audits)."""
    name: str
    """Exposed tool or prompt name, or the exposed resource URI."""
    session_id: str
    trace_id: str
    span_id: str
    parent_span_id: str | None
    transport: str
    """``stdio`` or ``http``."""


@dataclass(frozen=True, slots=True)
class FinishFacts:
    """How the request ended."""

    outcome: str
    effect: str
    rule_id: str
    error_code: str | None
    error_type: str | None
    """Set when the request failed or was refused (semconv ``error.type``); None when it succeeded."""
    message: str = ""
    server: str = ""
    tool_label: str = ""


class UpstreamSpan(Protocol):
    traceparent: str
    """W3C traceparent of this span, sent to the upstream in ``_meta``."""

    def finish(self, error_type: str | None) -> None: ...


class CallSpan(Protocol):
    def upstream(self, kind: str, server: str, tool: str) -> UpstreamSpan: ...

    def finish(self, facts: FinishFacts) -> None: ...


class Tracing(Protocol):
    def start_call(self, facts: CallFacts) -> CallSpan: ...

    def export_registry(self) -> None:
        """Start exporting the registry's families (called once every source is registered)."""

    def flush(self, timeout_s: float = 5.0) -> None: ...

    def shutdown(self) -> None: ...
