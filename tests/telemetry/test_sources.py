"""Upstream source: state, restarts and per-server stats as labelled families."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from checkrein.telemetry import Metrics, UpstreamSource


@dataclass
class Info:
    name: str
    transport: str
    state: str
    restarts: int


def test_upstream_states_restarts_and_stats() -> None:
    m = Metrics()
    rows = [(Info("a", "stdio", "ready", 0), {"bad_messages": 2}), (Info("b", "sse", "crashed", 3), {"bad_messages": 0})]
    m.add_source(UpstreamSource(lambda: rows, m.scrape_errors))
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(m.render().decode())
        for s in f.samples
    }
    assert samples[("checkrein_upstream_up", (("server", "a"), ("transport", "stdio")))] == 1
    assert samples[("checkrein_upstream_up", (("server", "b"), ("transport", "sse")))] == 0
    assert samples[("checkrein_upstream_state", (("server", "b"), ("state", "crashed")))] == 1
    assert samples[("checkrein_upstream_state", (("server", "b"), ("state", "ready")))] == 0
    assert samples[("checkrein_upstream_restarts_total", (("server", "b"),))] == 3
    assert samples[("checkrein_upstream_bad_messages_total", (("server", "a"),))] == 2
