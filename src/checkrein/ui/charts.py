"""Charts as inline SVG rendered here (no script, no styles but classes): decisions by rule, and
latency per tool. Each bar links to the events behind it."""

from __future__ import annotations

from checkrein.audit.query import CallBreakdown, ToolLatency

from .html import Html, attr, esc, join, url

__all__ = ["OUTCOME_ORDER", "latency_chart", "rules_chart"]

OUTCOME_ORDER = ("ok", "denied", "error", "timeout", "not_found")
_ROW = 26
_LABEL_W = 260
_BAR_W = 520
_TOP = 28
_MAX_ROWS = 30


def _label(text: str, limit: int = 38) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _frame(title: str, rows: int, body: Html, legend: Html) -> Html:
    height = _TOP + rows * _ROW + 24
    width = _LABEL_W + _BAR_W + 150
    return Html(
        f'<figure class="chart"><figcaption>{esc(title)}</figcaption>'
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{attr(title)}">{legend}{body}</svg></figure>'
    )


def rules_chart(b: CallBreakdown, *, base: str, extra: dict[str, object]) -> Html:
    """Horizontal bars, one per rule id, stacked by outcome; the biggest ``_MAX_ROWS`` rules."""
    totals = sorted(b.by_rule.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
    shown, rest = totals[:_MAX_ROWS], totals[_MAX_ROWS:]
    if rest:
        merged: dict[str, int] = {}
        for _, outcomes in rest:
            for o, n in outcomes.items():
                merged[o] = merged.get(o, 0) + n
        shown.append((f"({len(rest)} more rules)", merged))
    if not shown:
        return Html('<p class="empty">No calls in this window.</p>')
    top = max(sum(o.values()) for _, o in shown) or 1
    parts: list[Html] = []
    for i, (rule, outcomes) in enumerate(shown):
        y = _TOP + i * _ROW
        name = rule or "(no rule)"
        is_rule = not rule.startswith("(") and bool(rule)
        link = url(base, "/", {**extra, "rule": rule}) if is_rule else None
        label = esc(_label(name))
        label_el = f'<a href="{link}">{label}</a>' if link else label
        parts.append(Html(f'<text class="lbl" x="{_LABEL_W - 8}" y="{y + 17}" text-anchor="end">'
                          f'<title>{esc(name)}</title>{label_el}</text>'))
        x = float(_LABEL_W)
        for outcome in sorted(outcomes, key=lambda o: OUTCOME_ORDER.index(o) if o in OUTCOME_ORDER else 99):
            n = outcomes[outcome]
            w = _BAR_W * n / top
            seg = (f'<rect class="o-{attr(outcome)}" x="{x:.1f}" y="{y + 4}" width="{max(w, 1):.1f}" height="{_ROW - 8}">'
                   f"<title>{esc(name)}: {n} {esc(outcome)}</title></rect>")
            if is_rule:
                seg = f'<a href="{url(base, "/", {**extra, "rule": rule, "outcome": outcome})}">{seg}</a>'
            parts.append(Html(seg))
            x += w
        parts.append(Html(f'<text class="num" x="{x + 6:.1f}" y="{y + 17}">{sum(outcomes.values())}</text>'))
    present = [o for o in OUTCOME_ORDER if any(o in oc for _, oc in shown)]
    legend = join(
        Html(f'<rect class="o-{o}" x="{_LABEL_W + i * 110}" y="6" width="12" height="12"></rect>'
             f'<text class="lgd" x="{_LABEL_W + i * 110 + 17}" y="17">{esc(o)}</text>')
        for i, o in enumerate(present)
    )
    return _frame("Decisions by rule (calls, by outcome)", len(shown), join(parts), legend)


def _ms(v: float) -> str:
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 1 else f"{v:.2f}"


def latency_chart(latency: dict[str, ToolLatency], *, base: str, extra: dict[str, object]) -> Html:
    """Per tool: a bar to p50, a lighter one to p90, a tick at p99; the scale ends at the largest p99."""
    rows = sorted(latency.items(), key=lambda kv: (-kv[1].p50_ms, kv[0]))[:_MAX_ROWS]
    if not rows:
        return Html('<p class="empty">No calls in this window.</p>')
    top = max(t.p99_ms for _, t in rows) or 1.0
    parts: list[Html] = []
    for i, (tool, t) in enumerate(rows):
        y = _TOP + i * _ROW

        def x(v: float) -> float:
            return _LABEL_W + _BAR_W * min(v, top) / top

        link = url(base, "/", {**extra, "tool": tool})
        tip = f"{tool}: {t.calls} calls, p50 {_ms(t.p50_ms)} ms, p90 {_ms(t.p90_ms)} ms, p99 {_ms(t.p99_ms)} ms, max {_ms(t.max_ms)} ms"
        parts.append(Html(
            f'<a href="{link}"><text class="lbl" x="{_LABEL_W - 8}" y="{y + 17}" text-anchor="end">{esc(_label(tool))}</text>'
            f'<rect class="p90" x="{_LABEL_W}" y="{y + 6}" width="{max(x(t.p90_ms) - _LABEL_W, 1):.1f}" height="{_ROW - 12}">'
            f"<title>{esc(tip)}</title></rect>"
            f'<rect class="p50" x="{_LABEL_W}" y="{y + 6}" width="{max(x(t.p50_ms) - _LABEL_W, 1):.1f}" height="{_ROW - 12}">'
            f"<title>{esc(tip)}</title></rect>"
            f'<line class="p99" x1="{x(t.p99_ms):.1f}" x2="{x(t.p99_ms):.1f}" y1="{y + 3}" y2="{y + _ROW - 3}"></line></a>'
            f'<text class="num" x="{_LABEL_W + _BAR_W + 8}" y="{y + 17}">{esc(_ms(t.p50_ms))} / {esc(_ms(t.p99_ms))} ms'
            f" · {t.calls}</text>"
        ))
    legend = Html(
        f'<rect class="p50" x="{_LABEL_W}" y="6" width="12" height="12"></rect><text class="lgd" x="{_LABEL_W + 17}" y="17">p50</text>'
        f'<rect class="p90" x="{_LABEL_W + 70}" y="6" width="12" height="12"></rect><text class="lgd" x="{_LABEL_W + 87}" y="17">p90</text>'
        f'<line class="p99" x1="{_LABEL_W + 146}" x2="{_LABEL_W + 146}" y1="5" y2="19"></line>'
        f'<text class="lgd" x="{_LABEL_W + 153}" y="17">p99 (scale ends at {esc(_ms(top))} ms)</text>'
        f'<text class="lgd" x="{_LABEL_W + _BAR_W + 8}" y="17">p50 / p99 · calls</text>'
    )
    return _frame("Latency per tool (ms, gateway-measured)", len(rows), join(parts), legend)
