"""`Telemetry`: what a gateway reports about itself: the metrics registry and, when
``[telemetry] otlp_endpoint`` is set, OpenTelemetry traces and metrics over OTLP/HTTP."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field

from checkrein.config import Config
from checkrein.errors import ConfigError

from .metrics import Metrics
from .tracing import Tracing

__all__ = ["Telemetry", "build_telemetry"]

log = logging.getLogger("checkrein.telemetry")


@dataclass
class Telemetry:
    """One per gateway. ``metrics`` always exists; ``tracing`` only with an OTLP endpoint."""

    metrics: Metrics = field(default_factory=Metrics)
    step_timing: bool = True
    """Observe each pipeline step's self time (``checkrein_step_duration_seconds``)."""
    tracing: Tracing | None = None
    instance_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    """``service.instance.id``: tells the replicas of a fleet apart."""

    def sources_ready(self) -> None:
        """Every source is registered: the OTLP exporter may now mirror the registry's families."""
        if self.tracing is not None:
            self.tracing.export_registry()

    def close(self) -> None:
        """Export what is pending and stop the exporters. Never raises."""
        tracing, self.tracing = self.tracing, None
        if tracing is None:
            return
        try:
            tracing.shutdown()
        except Exception:  # exporting is best effort at shutdown; the collector may be gone
            self.metrics.backend_errors.labels("otlp", "shutdown").inc()
            log.warning("OpenTelemetry shutdown failed", exc_info=True)


def build_telemetry(config: Config) -> Telemetry:
    """The telemetry `[telemetry]` asks for. Raises ``ConfigError`` when an OTLP endpoint is set
    but ``checkrein[otel]`` is not installed, or the endpoint names an unset variable."""
    settings = config.telemetry
    telemetry = Telemetry(step_timing=settings.step_timing)
    if settings.otlp_endpoint is None:
        return telemetry
    endpoint = settings.otlp_endpoint.rstrip("/")
    try:
        from .otel import OtelTracing
    except ImportError as exc:
        raise ConfigError(
            f"[telemetry] otlp_endpoint needs the OpenTelemetry SDK: pip install 'checkrein[otel]' ({exc.name} is missing)",
            file=config.source,
            key="telemetry.otlp_endpoint",
        ) from None
    telemetry.tracing = OtelTracing(settings, telemetry.metrics, endpoint=endpoint, instance_id=telemetry.instance_id)
    return telemetry
