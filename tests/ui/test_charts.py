"""The SVG charts: bars, links, escaping, and the empty case."""

from __future__ import annotations

from checkrein.audit.query import CallBreakdown, ToolLatency
from checkrein.ui.charts import latency_chart, rules_chart


def test_rules_chart_stacks_outcomes_and_links_each_segment() -> None:
    """One row per rule (largest first), one rect per outcome, each linked to its events."""
    b = CallBreakdown(calls=12, by_rule={"small": {"ok": 2}, "big": {"ok": 7, "denied": 3}})
    svg = rules_chart(b, base="/ui", extra={"since": "1h"})
    assert svg.index(">big<") < svg.index(">small<")
    assert 'href="/ui/?since=1h&amp;rule=big&amp;outcome=denied"' in svg and svg.count('class="o-ok"') == 3  # 2 bars + legend


def test_rules_chart_escapes_rule_ids_and_folds_the_tail() -> None:
    """A hostile rule id is text; rules past the 30 biggest are folded into one row."""
    rules = {f"r{i}": {"ok": 100 - i} for i in range(40)} | {"<script>x</script>": {"denied": 1}}
    svg = rules_chart(CallBreakdown(calls=1, by_rule=rules), base="", extra={})
    assert "<script>" not in svg and "(11 more rules)" in svg


def test_latency_chart_scales_to_the_largest_p99() -> None:
    """p50 and p90 bars and a p99 tick per tool; the longest p99 reaches the scale's end."""
    svg = latency_chart({"a": ToolLatency(10, 1.0, 2.0, 10.0, 12.0), "b": ToolLatency(5, 4.0, 5.0, 5.0, 5.0)}, base="", extra={})
    assert 'x1="780.0"' in svg  # label 260 + bar 520: a's p99 is the scale's end
    assert "scale ends at 10.0 ms" in svg and 'href="/?tool=a"' in svg


def test_charts_say_when_there_is_nothing_to_draw() -> None:
    """No calls: a sentence, not an empty frame."""
    assert "No calls" in rules_chart(CallBreakdown(), base="", extra={})
    assert "No calls" in latency_chart({}, base="", extra={})
