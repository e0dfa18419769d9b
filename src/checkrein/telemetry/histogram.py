"""`LoopHistogram`: a histogram for the call path, observed without a lock.

prometheus-client's `Histogram` takes a lock per observation (about 1.5 us here, eight times per
call for the step timings). Every observation of these comes from the gateway's event-loop
thread, so plain list updates are safe; a scrape from another thread reads a moment's copy, which
can at worst lag one observation behind (never a torn or decreasing count).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence

from prometheus_client.metrics_core import HistogramMetricFamily, Metric

__all__ = ["LoopHistogram"]


class _Child:
    __slots__ = ("_bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self._bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self._bounds, value)] += 1
        self.total += value


class LoopHistogram:
    """A labelled histogram family: ``labels(*values).observe(seconds)``; a collector itself."""

    def __init__(self, name: str, help_text: str, labelnames: Sequence[str], buckets: Sequence[float]) -> None:
        self.name = name
        self._help = help_text
        self._labelnames = tuple(labelnames)
        self._bounds = tuple(sorted(float(b) for b in buckets))
        self._children: dict[tuple[str, ...], _Child] = {}

    def labels(self, *values: str) -> _Child:
        child = self._children.get(values)
        if child is None:
            if len(values) != len(self._labelnames):
                raise ValueError(f"{self.name} takes labels {self._labelnames}, got {values}")
            child = self._children[values] = _Child(self._bounds)
        return child

    def collect(self) -> Iterator[Metric]:
        fam = HistogramMetricFamily(self.name, self._help, labels=list(self._labelnames))
        for values, child in list(self._children.items()):
            counts = list(child.counts)
            cumulative, buckets = 0, []
            for bound, n in zip((*self._bounds, float("inf")), counts, strict=True):
                cumulative += n
                buckets.append(("+Inf" if bound == float("inf") else _fmt(bound), cumulative))
            fam.add_metric(list(values), buckets, child.total)
        yield fam


def _fmt(bound: float) -> str:
    return repr(bound) if bound != int(bound) else f"{bound:.1f}"
