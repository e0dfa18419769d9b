"""Reports of a suite run: `report.md`, `report.html` and PNG charts in `reports/<timestamp>/`."""

from __future__ import annotations

import html
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from .scenario import ScenarioResult

__all__ = ["TemplateMatrix", "latency_line", "percentile", "write_report"]

TemplateMatrix = Mapping[str, Mapping[str, str]]
"""probe call label -> template -> decision text (e.g. `allow`, `deny (rule ...)`)."""


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, linearly interpolated between the closest ranks
    (numpy's default); 0.0 for no values. The one definition every number and chart uses."""
    if not values:
        return 0.0
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _latencies(results: Sequence[ScenarioResult]) -> list[tuple[float, str]]:
    """(duration in ms, outcome) of every tool call the agent made."""
    return [(s.duration_ms, s.outcome) for r in results for s in r.steps if s.duration_ms > 0]


def latency_line(results: Sequence[ScenarioResult]) -> str:
    """``p50 X ms, p99 Y ms over N calls`` (or ``no tool calls``), for the text and the charts alike."""
    lat = [ms for ms, _ in _latencies(results)]
    if not lat:
        return "no tool calls"
    return f"p50 {percentile(lat, 0.5):.1f} ms, p99 {percentile(lat, 0.99):.1f} ms over {len(lat)} calls"


Chart = tuple[str, str]
"""(file name, title)."""


def _log_bins(values: Sequence[float], per_decade: int = 8) -> list[float]:
    # A little room each side: an edge computed through log10 may land just inside the extreme
    # value, and numpy would then drop it (the outlier the chart is there to show).
    lo, hi = math.log10(min(values) * 0.98), math.log10(max(values) * 1.02)
    if hi - lo < 1e-9:
        lo, hi = lo - 0.1, hi + 0.1
    n = max(4, int(math.ceil((hi - lo) * per_decade)))
    return [10 ** (lo + (hi - lo) * i / n) for i in range(n + 1)]


def _charts(results: Sequence[ScenarioResult], out: Path, scope: str = "") -> list[Chart]:
    """Decisions by rule and the latency distribution as PNG (``scope`` names whose calls they
    count when the report covers several models); returns (file, title) of each."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # the `report` extra is optional; the text report stands alone
        return []
    written: list[Chart] = []
    rules = Counter(
        (s.rule_id.split(":")[0] or "none") + f" [{s.effect}]" for r in results for s in r.steps if s.rule_id
    )
    if rules:
        title = "Decisions by rule" + scope
        labels, counts = zip(*rules.most_common(15), strict=True)
        fig, ax = plt.subplots(figsize=(8, 0.4 * len(labels) + 1.2))
        colors = ["#c0392b" if "[deny]" in lbl else "#e67e22" if "[ask]" in lbl else "#27ae60" for lbl in labels]
        ax.barh(list(labels)[::-1], list(counts)[::-1], color=colors[::-1])
        ax.set_xlabel("calls")
        ax.set_title(title)
        fig.tight_layout()
        fig.savefig(out / "decisions_by_rule.png", dpi=110)
        plt.close(fig)
        written.append(("decisions_by_rule.png", title))
    calls = _latencies(results)
    if calls:
        # Log-spaced bins: denials take a millisecond, forwarded calls tens, a slow tool seconds;
        # on a linear axis that is one bar and an outlier.
        title = "Tool call latency seen by the agent" + scope
        values = [ms for ms, _ in calls]
        bins = _log_bins(values)
        groups = [
            ("denied (never forwarded)", "#c0392b", [ms for ms, o in calls if o == "denied"]),
            ("forwarded", "#2c3e50", [ms for ms, o in calls if o != "denied"]),
        ]
        shown = [(label, color, vs) for label, color, vs in groups if vs]
        fig, ax = plt.subplots(figsize=(8, 3.4))
        ax.hist([vs for _, _, vs in shown], bins=bins, stacked=True, color=[c for _, c, _ in shown],
                label=[f"{label} ({len(vs)})" for label, _, vs in shown])
        ax.set_xscale("log")
        for q, style in ((0.5, "--"), (0.99, ":")):
            ax.axvline(percentile(values, q), color="#7f8c8d", linestyle=style, label=f"p{int(q * 100)} {percentile(values, q):.1f} ms")
        ax.set_xlabel("milliseconds (log scale)")
        ax.set_ylabel("calls")
        ax.set_title(f"{title}: {latency_line(results)}")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / "latency.png", dpi=110)
        plt.close(fig)
        written.append(("latency.png", title))
    return written


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def cell(v: str) -> str:
        return v.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def write_report(
    out: Path,
    runs: Mapping[str, Sequence[ScenarioResult]],
    matrix: TemplateMatrix,
    *,
    title: str = "checkrein demo report",
    notes: Sequence[str] = (),
) -> Path:
    """Write report.md, report.html, results.json and charts into ``out``; returns report.md's path.

    ``runs`` maps a model name (`scripted`, or a real model) to its scenario results.
    """
    out.mkdir(parents=True, exist_ok=True)
    all_results = [r for rs in runs.values() for r in rs]
    charts = _charts(all_results, out, f" ({', '.join(runs)} together)" if len(runs) > 1 else "")
    (out / "results.json").write_text(
        json.dumps({m: [r.as_dict() for r in rs] for m, rs in runs.items()}, indent=2, ensure_ascii=False),
        encoding="utf-8",
    )
    md: list[str] = [f"# {title}", ""]
    for model, rs in runs.items():
        passed = sum(r.passed for r in rs)
        md += [
            f"## Model `{model}`: {passed}/{len(rs)} scenarios passed",
            "",
            f"Tool calls: {sum(len(r.steps) for r in rs)}; denied: "
            f"{sum(1 for r in rs for s in r.steps if s.outcome == 'denied')}; "
            f"latency {latency_line(rs)}; "
            f"audit chains verified: {sum(r.audit_verified for r in rs)}/{len(rs)}.",
            "",
        ]
        rows = []
        for r in rs:
            calls = ", ".join(
                f"{s.tool.split('__')[-1]}={s.effect if s.effect != 'allow' else s.outcome}" for s in r.steps
            )
            rows.append(
                [
                    "PASS" if r.passed else "FAIL",
                    r.name,
                    r.title,
                    r.template,
                    calls or "(no tool)",
                    "yes" if r.audit_verified else "NO",
                    f"{r.duration_s:.1f}s",
                    "; ".join(r.failures)[:300],
                ]
            )
        md += [
            _md_table(["result", "scenario", "what", "template", "calls", "audit ok", "time", "failures"], rows),
            "",
        ]
    if matrix:
        templates = sorted({t for row in matrix.values() for t in row})
        md += ["## Policy templates side by side", ""]
        md += [_md_table(["call", *templates], [[k, *(v.get(t, "") for t in templates)] for k, v in matrix.items()])]
        md.append("")
    if charts:
        md += ["## Charts", ""]
        for file, chart_title in charts:
            md += [f"### {chart_title}", "", f"![{chart_title}]({file})", ""]
    if notes:
        md += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    report_md = out / "report.md"
    report_md.write_text("\n".join(md), encoding="utf-8")
    (out / "report.html").write_text(_html(title, runs, matrix, charts, notes), encoding="utf-8")
    return report_md


def _html(
    title: str,
    runs: Mapping[str, Sequence[ScenarioResult]],
    matrix: TemplateMatrix,
    charts: Sequence[Chart],
    notes: Sequence[str],
) -> str:
    e = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{e(title)}</title><style>",
        "body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}",
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;"
        "text-align:left;vertical-align:top;font-size:14px}th{background:#f4f4f4}",
        ".pass{color:#1e8449;font-weight:bold}.fail{color:#c0392b;font-weight:bold}",
        ".deny{color:#c0392b}.ask{color:#d35400}.allow{color:#1e8449}",
        "</style></head><body>",
        f"<h1>{e(title)}</h1>",
    ]
    for model, rs in runs.items():
        passed = sum(r.passed for r in rs)
        parts.append(f"<h2>Model <code>{e(model)}</code>: {passed}/{len(rs)} scenarios passed</h2>")
        parts.append(
            "<table><tr><th>result</th><th>scenario</th><th>what</th><th>template</th>"
            "<th>calls (effect / outcome / rule)</th><th>audit</th><th>time</th><th>failures</th></tr>"
        )
        for r in rs:
            calls = "<br>".join(
                f"<code>{e(s.tool)}</code> <span class='{e(s.effect)}'>{e(s.effect)}</span>"
                f" / {e(s.outcome)} / <small>{e(s.rule_id)}</small>"
                for s in r.steps
            )
            cls = "pass" if r.passed else "fail"
            parts.append(
                f"<tr><td class='{cls}'>{'PASS' if r.passed else 'FAIL'}</td><td>{e(r.name)}</td>"
                f"<td>{e(r.title)}</td><td>{e(r.template)}</td><td>{calls or '(no tool)'}</td>"
                f"<td>{'verified' if r.audit_verified else 'NOT verified'} ({r.audit_events} events)</td>"
                f"<td>{r.duration_s:.1f}s</td><td>{e('; '.join(r.failures))}</td></tr>"
            )
        parts.append("</table>")
        if _latencies(rs):
            parts.append(f"<p>Latency per call as the agent saw it: {e(latency_line(rs))}.</p>")
    if matrix:
        templates = sorted({t for row in matrix.values() for t in row})
        parts.append("<h2>Policy templates side by side</h2><table><tr><th>call</th>")
        parts += [f"<th>{e(t)}</th>" for t in templates]
        parts.append("</tr>")
        for k, v in matrix.items():
            cells = "".join(
                f"<td class='{e(v.get(t, '').split(' ')[0])}'>{e(v.get(t, ''))}</td>" for t in templates
            )
            parts.append(f"<tr><td><code>{e(k)}</code></td>{cells}</tr>")
        parts.append("</table>")
    for file, chart_title in charts:
        parts.append(f"<h3>{e(chart_title)}</h3><img src='{e(file)}' alt='{e(chart_title)}'>")
    if notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{e(n)}</li>" for n in notes) + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts)
