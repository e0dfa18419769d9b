"""Custom collectors: read an object that already counts, at scrape time, into metric families.

Each takes a zero-argument ``read`` callable rather than the object, so the telemetry package
never imports the gate, the audit or the upstreams (they import it), and a source whose owner is
replaced (the policy's counters after a reload) is read through its current owner.

A read that raises never breaks a scrape: the family is left out and the failure counted in
``checkrein_scrape_errors_total{source}``.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Protocol

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

__all__ = ["CounterSource", "LabelledSource", "ScrapeErrors", "UpstreamLike", "UpstreamSource", "metric_name"]

log = logging.getLogger("checkrein.telemetry")

_NOT_NAME = re.compile(r"[^a-zA-Z0-9_]+")


def metric_name(text: str) -> str:
    """``policy.analyzer_failed`` -> ``policy_analyzer_failed`` (a valid Prometheus name part)."""
    return _NOT_NAME.sub("_", text).strip("_").lower() or "unnamed"


class ScrapeErrors:
    """``checkrein_scrape_errors_total{source}``: reads that raised, per source."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def count(self, source: str) -> None:
        with self._lock:
            self._counts[source] = self._counts.get(source, 0) + 1

    def collect(self) -> Iterator[Metric]:
        fam = CounterMetricFamily("checkrein_scrape_errors", "Metric sources whose read raised.", labels=["source"])
        with self._lock:
            for source, n in sorted(self._counts.items()):
                fam.add_metric([source], n)
        yield fam


class CounterSource:
    """A mapping of counts -> one family per key, ``checkrein_<prefix>_<key>_total`` (a counter),
    or ``checkrein_<prefix>_<key>`` (a gauge) for keys in ``gauges``. Keys the first read did not
    have appear when they do."""

    def __init__(
        self,
        prefix: str,
        read: Callable[[], Mapping[str, int | float] | None],
        errors: ScrapeErrors,
        *,
        gauges: Iterable[str] = (),
        help_text: str = "",
    ) -> None:
        self.prefix = prefix
        self._read = read
        self._errors = errors
        self._gauges = frozenset(gauges)
        self._help = help_text or f"checkrein {prefix} counter"

    def collect(self) -> Iterator[Metric]:
        try:
            values = dict(self._read() or {})
        except Exception:
            self._errors.count(self.prefix)
            log.exception("metric source %s failed", self.prefix)
            return
        for key, value in sorted(values.items()):
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            name = f"checkrein_{self.prefix}_{metric_name(key)}"
            if key in self._gauges:
                yield GaugeMetricFamily(name, f"{self._help}: {key}", value=value)
            else:
                yield CounterMetricFamily(name, f"{self._help}: {key}", value=value)


class LabelledSource:
    """A mapping of counts -> ONE counter family, the key as label ``name`` (for open-ended names
    such as the policy's degradations, ``policy.exception``, ``policy.analyzer_failed``...)."""

    def __init__(
        self, family: str, help_text: str, read: Callable[[], Mapping[str, int] | None], errors: ScrapeErrors
    ) -> None:
        self.family = family
        self._help = help_text
        self._read = read
        self._errors = errors

    def collect(self) -> Iterator[Metric]:
        try:
            values = dict(self._read() or {})
        except Exception:
            self._errors.count(self.family)
            log.exception("metric source %s failed", self.family)
            return
        fam = CounterMetricFamily(self.family, self._help, labels=["name"])
        for key, value in sorted(values.items()):
            fam.add_metric([key], value)
        yield fam


class UpstreamLike(Protocol):
    """What `UpstreamSource` reads of one upstream (`checkrein.upstream.UpstreamInfo` fits)."""

    @property
    def name(self) -> str: ...

    @property
    def transport(self) -> str: ...

    @property
    def state(self) -> str: ...

    @property
    def restarts(self) -> int: ...


UPSTREAM_STATES = ("starting", "ready", "failed", "crashed", "restarting", "closed")


class UpstreamSource:
    """Each upstream's state, restarts and ``stats`` (``bad_messages``, ``hook_errors``, ...)."""

    def __init__(self, read: Callable[[], Iterable[tuple[UpstreamLike, Mapping[str, int]]]], errors: ScrapeErrors) -> None:
        self._read = read
        self._errors = errors

    def collect(self) -> Iterator[Metric]:
        try:
            rows = list(self._read())
        except Exception:
            self._errors.count("upstream")
            log.exception("metric source upstream failed")
            return
        up = GaugeMetricFamily("checkrein_upstream_up", "1 when the server is connected and ready.", labels=["server", "transport"])
        state = GaugeMetricFamily("checkrein_upstream_state", "1 for the state each server is in.", labels=["server", "state"])
        restarts = CounterMetricFamily("checkrein_upstream_restarts", "Restarts of each server.", labels=["server"])
        stats: dict[str, CounterMetricFamily] = {}
        for info, counts in rows:
            up.add_metric([info.name, info.transport], 1 if info.state == "ready" else 0)
            for s in UPSTREAM_STATES:
                state.add_metric([info.name, s], 1 if info.state == s else 0)
            restarts.add_metric([info.name], info.restarts)
            for key, value in sorted(counts.items()):
                if key == "restarts":
                    continue
                fam = stats.get(key)
                if fam is None:
                    fam = stats[key] = CounterMetricFamily(
                        f"checkrein_upstream_{metric_name(key)}", f"Upstream degradation counter: {key}", labels=["server"]
                    )
                fam.add_metric([info.name], value)
        yield up
        yield state
        yield restarts
        yield from stats.values()
