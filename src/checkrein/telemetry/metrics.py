"""`Metrics`: the one registry every number of a gateway lives in.

Two kinds of members:

- **instruments** this package owns and the gate feeds per call: decisions by effect and rule,
  call latency per tool, self time per pipeline step, state-backend and audit-sink errors;
- **sources**: objects that already count (the gate's `Counters`, the policy's counters, the
  audit writer's, each upstream's ``info``/``stats``, the Postgres shipper, the state backend),
  read at scrape time by custom collectors (`checkrein.telemetry.sources`). Their owners keep
  counting exactly as before; nothing is copied on the call path.

Every view reads this registry: ``GET /metrics`` (Prometheus text), ``GET /stats`` and the closing
``gateway.stop`` audit event (`snapshot`), and the OTLP metric exporter (`checkrein.telemetry.otel`).
The registry is private to one `Metrics` (never the process-global one), so two gateways in one
process, as in tests, never mix their numbers.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

from .histogram import LoopHistogram
from .sources import ScrapeErrors

__all__ = ["LATENCY_BUCKETS_S", "PROMETHEUS_CONTENT_TYPE", "UNKNOWN_TOOL", "Metrics"]

log = logging.getLogger("checkrein.telemetry")

PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

LATENCY_BUCKETS_S = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)
"""Seconds. A gateway step takes tens of microseconds, an upstream call up to its timeout."""

UNKNOWN_TOOL = "(unknown)"
"""The ``tool`` label of calls to names the catalog does not know: a client picks those names, and
a label per name would let any client grow the registry without bound."""


class Metrics:
    """The registry plus the instruments the gate feeds. Thread-safe (prometheus-client locks)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        r = self.registry
        self.decisions = Counter(
            "checkrein_decisions",
            "Final decision of every call, by effect (allow, ask, deny, none) and the rule that made it.",
            ["effect", "rule"],
            registry=r,
        )
        self.call_duration = LoopHistogram(
            "checkrein_call_duration_seconds",
            "Time from receiving a call to answering it, per exposed tool, kind and outcome.",
            ["tool", "kind", "outcome"],
            LATENCY_BUCKETS_S,
        )
        r.register(self.call_duration)
        self.step_duration = LoopHistogram(
            "checkrein_step_duration_seconds",
            "Time spent in each pipeline step itself (the steps after it excluded).",
            ["step"],
            LATENCY_BUCKETS_S,
        )
        r.register(self.step_duration)
        self.backend_errors = Counter(
            "checkrein_backend_errors",
            "Errors talking to an external backend (backend: redis, postgres, otlp; op: what was tried).",
            ["backend", "op"],
            registry=r,
        )
        self.scrape_errors = ScrapeErrors()
        r.register(self.scrape_errors)
        self._sources: list[Collector] = []

    # -- sources -----------------------------------------------------------------------------

    def add_source(self, collector: Collector) -> None:
        """Register a collector read at every scrape (see `checkrein.telemetry.sources`)."""
        self.registry.register(collector)
        self._sources.append(collector)
        # Collected in registration order: the error count comes last, so it includes this scrape's.
        self.registry.unregister(self.scrape_errors)
        self.registry.register(self.scrape_errors)

    def remove_source(self, collector: Collector) -> None:
        if collector in self._sources:
            self._sources.remove(collector)
            self.registry.unregister(collector)

    # -- views -------------------------------------------------------------------------------

    def render(self) -> bytes:
        """Everything, in the Prometheus text exposition format (version 0.0.4)."""
        return generate_latest(self.registry)

    def snapshot(self) -> dict[str, Any]:
        """Every sample as plain JSON: ``{name: value}`` without labels, ``{name: {"k=v,...": value}}``
        with labels; a histogram keeps only ``_count`` and ``_sum`` (buckets belong to /metrics)."""
        out: dict[str, Any] = {}
        for family in self.registry.collect():
            for sample in family.samples:
                name = sample.name
                if family.type == "histogram" and not (name.endswith("_count") or name.endswith("_sum")):
                    continue
                if name.endswith("_created"):
                    continue
                value: float | int = int(sample.value) if float(sample.value).is_integer() else sample.value
                if not sample.labels:
                    out[name] = value
                    continue
                key = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
                slot = out.setdefault(name, {})
                if isinstance(slot, dict):
                    slot[key] = value
        return out

    def families(self) -> Iterable[Any]:
        """The collected metric families (for exporters)."""
        return self.registry.collect()
