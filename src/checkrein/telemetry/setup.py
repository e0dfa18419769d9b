"""`Telemetry`: what a gateway reports about itself: the metrics registry and, when
``[telemetry] otlp_endpoint`` is set, OpenTelemetry traces and metrics over OTLP/HTTP."""

from __future__ import annotations

from dataclasses import dataclass, field

from .metrics import Metrics

__all__ = ["Telemetry"]


@dataclass
class Telemetry:
    """One per gateway. ``metrics`` always exists; tracing is added by `build_telemetry`."""

    metrics: Metrics = field(default_factory=Metrics)
    step_timing: bool = True
    """Observe each pipeline step's self time (``checkrein_step_duration_seconds``)."""

    def close(self) -> None:
        """Flush and stop exporters (nothing to do without OTLP)."""
        return None
