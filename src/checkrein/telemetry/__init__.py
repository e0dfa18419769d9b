"""checkrein.telemetry: the one metrics registry (Prometheus text, OTLP) and tracing."""

from .metrics import LATENCY_BUCKETS_S, PROMETHEUS_CONTENT_TYPE, UNKNOWN_TOOL, Metrics
from .setup import Telemetry, build_telemetry
from .sources import CounterSource, LabelledSource, ScrapeErrors, UpstreamSource

__all__ = [
    "LATENCY_BUCKETS_S",
    "PROMETHEUS_CONTENT_TYPE",
    "UNKNOWN_TOOL",
    "CounterSource",
    "LabelledSource",
    "Metrics",
    "ScrapeErrors",
    "Telemetry",
    "UpstreamSource",
    "build_telemetry",
]
