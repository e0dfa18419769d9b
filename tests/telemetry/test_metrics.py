"""The registry: instruments, scrape-time sources, the JSON snapshot, and Prometheus text that parses."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from checkrein.telemetry import CounterSource, LabelledSource, Metrics


def parsed(metrics: Metrics) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for fam in text_string_to_metric_families(metrics.render().decode()):
        for s in fam.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def test_a_source_is_read_at_scrape_time_not_copied() -> None:
    """The owner keeps counting; each render shows its current value."""
    m = Metrics()
    counts = {"calls": 1, "denials": 0}
    m.add_source(CounterSource("gate", lambda: counts, m.scrape_errors))
    assert parsed(m)["checkrein_gate_calls_total"][()] == 1
    counts["calls"] = 5
    assert parsed(m)["checkrein_gate_calls_total"][()] == 5
    assert m.snapshot()["checkrein_gate_calls_total"] == 5


def test_gauges_are_gauges_and_counters_count() -> None:
    m = Metrics()
    m.add_source(CounterSource("audit", lambda: {"queue_depth": 3, "events_written": 9}, m.scrape_errors, gauges={"queue_depth"}))
    types = {f.name: f.type for f in text_string_to_metric_families(m.render().decode())}
    assert types["checkrein_audit_queue_depth"] == "gauge"
    assert types["checkrein_audit_events_written"] == "counter"


def test_a_source_that_raises_is_counted_and_the_scrape_still_answers() -> None:
    m = Metrics()

    def broken() -> dict[str, int]:
        raise RuntimeError("boom")

    m.add_source(CounterSource("broken", broken, m.scrape_errors))
    m.add_source(CounterSource("fine", lambda: {"x": 1}, m.scrape_errors))
    got = parsed(m)
    assert got["checkrein_fine_x_total"][()] == 1
    assert got["checkrein_scrape_errors_total"][(("source", "broken"),)] == 1


def test_labelled_source_keeps_open_ended_names_as_labels() -> None:
    m = Metrics()
    m.add_source(LabelledSource("checkrein_policy_degradations", "help", lambda: {"policy.exception": 2}, m.scrape_errors))
    assert parsed(m)["checkrein_policy_degradations_total"][(("name", "policy.exception"),)] == 2
    assert m.snapshot()["checkrein_policy_degradations_total"] == {"name=policy.exception": 2}


def test_histograms_parse_and_snapshot_keeps_count_and_sum() -> None:
    m = Metrics()
    m.call_duration.labels("a__echo", "tool", "ok").observe(0.002)
    m.call_duration.labels("a__echo", "tool", "ok").observe(0.004)
    got = parsed(m)
    key = (("kind", "tool"), ("outcome", "ok"), ("tool", "a__echo"))
    assert got["checkrein_call_duration_seconds_count"][key] == 2
    assert got["checkrein_call_duration_seconds_bucket"][(key[0], ("le", "0.0025"), *key[1:])] == 1
    snap = m.snapshot()
    assert snap["checkrein_call_duration_seconds_count"] == {"kind=tool,outcome=ok,tool=a__echo": 2}
    assert "checkrein_call_duration_seconds_bucket" not in snap


def test_two_registries_never_mix() -> None:
    a, b = Metrics(), Metrics()
    a.decisions.labels("allow", "r").inc()
    assert "checkrein_decisions_total" not in b.snapshot() or b.snapshot()["checkrein_decisions_total"] == {}
