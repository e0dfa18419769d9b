"""The demo report: one p50 everywhere, a latency chart that shows the spread, real chart titles."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkrein.evaluation.report import latency_line, percentile, write_report
from checkrein.evaluation.scenario import ScenarioResult, StepResult


def _result(name: str, calls: list[tuple[float, str]]) -> ScenarioResult:
    steps = [
        StepResult("sandbox__read_file", "", "", "deny" if o == "denied" else "allow", o,
                   "arguments.paths" if o == "denied" else "allow:sandbox__*", ms, "", True)
        for ms, o in calls
    ]
    return ScenarioResult(name, name, "development", "scripted", True, steps, "ok", [], 1.0, True, 5)


CALLS = [(1.0, "denied"), (2.0, "denied"), (10.0, "ok"), (40.0, "ok"), (3000.0, "ok")]


@pytest.mark.parametrize(
    "values, q, expected",
    [([], 0.5, 0.0), ([5.0], 0.99, 5.0), ([1.0, 2.0, 10.0, 40.0], 0.5, 6.0), ([1.0, 2.0, 3.0], 0.5, 2.0),
     ([float(i) for i in range(1, 101)], 0.99, 99.01)],
)
def test_percentile_interpolates_between_ranks(values: list[float], q: float, expected: float) -> None:
    assert percentile(values, q) == pytest.approx(expected)


def test_text_html_and_chart_show_the_same_p50(tmp_path: Path) -> None:
    """Regression: the text said p50 38.0 ms and the chart 37.6 ms (two functions computed it)."""
    results = [_result("a", CALLS[:2]), _result("b", CALLS[2:4])]  # p50 of 1, 2, 10, 40 is 6.0
    line = latency_line(results)
    assert line == "p50 6.0 ms, p99 39.1 ms over 4 calls"
    report = write_report(tmp_path, {"scripted": results}, {})
    assert line in report.read_text(encoding="utf-8")
    assert line in (tmp_path / "report.html").read_text(encoding="utf-8")


def test_charts_have_titles_not_file_names(tmp_path: Path) -> None:
    write_report(tmp_path, {"scripted": [_result("a", CALLS)]}, {})
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "<h3>Tool call latency seen by the agent</h3>" in html and "<h3>Decisions by rule</h3>" in html
    assert "<h3>latency.png" not in html and "![latency.png]" not in md
    assert "### Tool call latency seen by the agent" in md and "(latency.png)" in md
    assert (tmp_path / "latency.png").stat().st_size > 1000


def test_the_latency_histogram_separates_fast_slow_and_outliers(tmp_path: Path) -> None:
    """Regression: linear bins over 1 ms denials and a 3 s outlier drew one bar and the outlier."""
    from checkrein.evaluation.report import _log_bins

    values = [ms for ms, _ in CALLS]
    bins = _log_bins(values)
    occupied = {next(i for i in range(len(bins) - 1) if bins[i] <= v <= bins[i + 1]) for v in values}
    assert bins[0] <= min(values) and bins[-1] >= max(values)
    assert len(occupied) == len(values)  # every order of magnitude gets its own bar
    import numpy

    counts, _ = numpy.histogram(values, bins=bins)
    assert counts.sum() == len(values)  # the outlier is drawn, not dropped at the last edge
