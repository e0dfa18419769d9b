"""Page bodies: the event list (with its filter form), one event's full record, a trace, verify.

Pure functions of values from `checkrein.audit.query` to `Html`; every value from the log goes
through `esc` / `attr` / `url`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from checkrein.audit.query import CallValues

from .filters import FIELDS, ListQuery
from .html import Html, attr, esc, join, pretty_json, url
from .verify_status import VerifyState

__all__ = [
    "event_body",
    "event_rows",
    "filter_form",
    "list_body",
    "trace_body",
    "trace_order",
    "verify_badge",
    "verify_body",
]

_REASON_CHARS = 160
_UNCOUNTED = ' title="Counting stopped: no index serves this combination of filters quickly. The list is complete; page with Older."'


def _short_time(t: object) -> str:
    """``2026-12-01T19:48:03.123456Z`` -> ``2026-12-01 19:48:03.123``."""
    s = str(t)
    return s[:23].replace("T", " ") if len(s) >= 23 and s[10] == "T" else s


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _cut(text: str, limit: int = _REASON_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _badge(outcome: object) -> Html:
    o = str(outcome)
    return Html(f'<span class="badge o-{attr(o)}">{esc(o)}</span>')


def _summary(e: dict[str, Any]) -> tuple[str, str, str]:
    """(name, rule, reason) shown in a list row for any event type."""
    kind = e.get("type")
    if kind == "call":
        d = _dict(e.get("decision"))
        reasons = d.get("reasons") if isinstance(d.get("reasons"), list) else []
        reason = "; ".join(str(r) for r in reasons) if reasons else ""
        if not reason and e.get("outcome") != "ok":
            reason = str(e.get("error_code") or "")
        return str(e.get("exposed_name", "")), str(d.get("rule_id") or ""), reason
    if kind == "lifecycle":
        return str(e.get("event", "")), "", json.dumps(e.get("fields"), sort_keys=True, ensure_ascii=False)
    if kind == "checkpoint":
        return f"checkpoint ({e.get('reason')})", "", f"count {e.get('count')}, root {str(e.get('merkle_root'))[:16]}…"
    return str(kind), "", ""


def event_rows(events: Sequence[dict[str, Any]], *, base: str, highlight: int | None = None) -> Html:
    """``<tr>`` rows, in the order given."""
    rows: list[Html] = []
    for e in events:
        seq = e.get("seq")
        name, rule, reason = _summary(e)
        ident = _dict(e.get("identity"))
        href = url(base, f"/event/{seq}")
        is_call = e.get("type") == "call"
        cls = ' class="hl"' if highlight is not None and seq == highlight else ""
        dur = e.get("duration_ms")
        rows.append(Html(
            f'<tr data-seq="{attr(seq)}"{cls}>'
            f'<td class="seq"><a href="{href}">{esc(seq)}</a></td>'
            f'<td class="time" title="{attr(e.get("time", ""))}">{esc(_short_time(e.get("time", "")))}</td>'
            f"<td>{_badge(e.get('outcome')) if is_call else esc(e.get('type', ''))}</td>"
            f'<td class="name"><a href="{href}">{esc(name)}</a></td>'
            f"<td>{esc(e.get('server', '')) if is_call else ''}</td>"
            f"<td>{esc(ident.get('user', '')) if is_call else ''}</td>"
            f'<td class="rule">{esc(rule)}</td>'
            f'<td class="reason" title="{attr(_cut(reason, 2000))}">{esc(_cut(reason))}</td>'
            f'<td class="num">{esc(f"{dur:.1f}") if isinstance(dur, int | float) and is_call else ""}</td>'
            "</tr>"
        ))
    return join(rows)


_HEAD = ("seq", "time", "outcome", "tool", "server", "user", "rule", "reason", "ms")


def _table(body: Html, *, live_src: Html | None = None, last_seq: int = -1) -> Html:
    head = join(Html(f"<th>{esc(h)}</th>") for h in _HEAD)
    live = f' data-live-src="{live_src}" data-last-seq="{last_seq}"' if live_src is not None else ""
    return Html(f'<table class="events"><thead><tr>{head}</tr></thead><tbody id="rows"{live}>{body}</tbody></table>')


def _options(values: frozenset[str]) -> Html:
    return join(Html(f'<option value="{attr(v)}"></option>') for v in sorted(values)[:500])


def filter_form(q: ListQuery, values: CallValues, *, base: str, error: str | None) -> Html:
    """The GET form over every filter, with known tools, servers and users offered."""
    raw = q.raw

    def text(name: str, label: str, hint: str, datalist: str | None = None) -> Html:
        dl = f' list="{datalist}"' if datalist else ""
        bad = " bad" if error is not None and error.startswith(name + ":") else ""
        return Html(
            f'<label class="f{bad}">{esc(label)}<input name="{name}" value="{attr(raw.get(name, ""))}" '
            f'placeholder="{attr(hint)}"{dl} autocomplete="off"></label>'
        )

    outcome = raw.get("outcome", "")
    opts = join(
        Html(f'<option value="{o}"{" selected" if o == outcome else ""}>{esc(o or "any")}</option>')
        for o in ("", "ok", "denied", "error", "timeout", "not_found")
    )
    kind_all = raw.get("kind") == "all"
    return Html(
        f'<form class="filters" method="get" action="{url(base, "/")}">'
        f'<label class="f">outcome<select name="outcome">{opts}</select></label>'
        f'{text("tool", "tool", "glob: files__*", "dl-tools")}'
        f'{text("server", "server", "exact", "dl-servers")}'
        f'{text("user", "identity", "user", "dl-users")}'
        f'{text("session", "session", "session id")}'
        f'{text("trace", "trace", "trace id")}'
        f'{text("rule", "rule", "rule id")}'
        f'{text("since", "since", "15m, 2h, 2026-12-01T10:00Z")}'
        f'{text("until", "until", "RFC 3339 or duration")}'
        f'<label class="f chk"><input type="checkbox" name="kind" value="all"{" checked" if kind_all else ""}>'
        "lifecycle &amp; checkpoints too</label>"
        '<span class="actions"><button type="submit">Filter</button>'
        f'<a class="btn" href="{url(base, "/", {"outcome": "denied"})}">Denials</a>'
        f'<a class="btn" href="{url(base, "/")}">Clear</a></span>'
        f'<datalist id="dl-tools">{_options(values.tools)}</datalist>'
        f'<datalist id="dl-servers">{_options(values.servers)}</datalist>'
        f'<datalist id="dl-users">{_options(values.users)}</datalist>'
        "</form>"
        + (f'<p class="error" role="alert">{esc(error)}</p>' if error else "")
    )


def list_body(
    q: ListQuery,
    events: Sequence[dict[str, Any]],
    *,
    follows: int,
    base: str,
    total: int | None,
    capped: bool,
    values: CallValues,
    error: str | None,
    note: str | None,
) -> Html:
    """The filter form, counts, the newest-first table (live on the newest page) and cursors.
    ``follows``: the seq the live list polls after (the newest row's, or the log's last seq read
    before the rows when there are none)."""
    newest_first = list(reversed(events))
    live_src = url(base, "/events.json", q.params()) if q.newest else None
    count = "many" if total is None else f"{total:,}{'+' if capped else ''}"
    exact = total is not None and not capped
    filtered = any(k in q.raw for k in FIELDS if k != "kind")
    what = "matching events" if filtered else ("events" if q.flt.calls_only is False else "calls")
    status = ('<span id="live" class="live" data-state="on">live</span>' if q.newest
              else f'<a class="btn" href="{url(base, "/", q.params())}">Back to newest (live)</a>')
    nav: list[Html] = []
    if newest_first:
        oldest = newest_first[-1].get("seq")
        newest = newest_first[0].get("seq")
        if not q.newest:
            nav.append(Html(f'<a class="btn" href="{url(base, "/", q.params(after=newest))}">← Newer</a>'))
        if len(events) >= q.limit:
            nav.append(Html(f'<a class="btn" href="{url(base, "/", q.params(before=oldest))}">Older →</a>'))
    empty = ('<p class="empty">No events match.</p>' if not events and error is None else "")
    return Html(
        filter_form(q, values, base=base, error=error)
        + (f'<p class="note">{esc(note)}</p>' if note else "")
        + f'<div class="bar"><span class="count"{_UNCOUNTED if total is None else ""}>'
        f'<b id="total" data-exact="{int(exact)}">{esc(count)}</b> {esc(what)}'
        f" · showing {len(events)}</span>{status}"
        + '<button type="button" id="pause" class="btn" hidden>pause</button></div>'
        + _table(event_rows(newest_first, base=base), live_src=live_src, last_seq=follows)
        + empty
        + f'<div class="pager">{join(nav)}</div>'
    )


def trace_order(events: Sequence[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """(depth, event) of one trace's calls: each call under the call whose span is its parent,
    siblings in seq order; calls whose parent span is not in the log (the agent's own span)
    start at depth 0."""
    by_span = {str(e.get("span_id")): e for e in events if e.get("span_id")}
    children: dict[str, list[dict[str, Any]]] = {}
    roots: list[dict[str, Any]] = []
    for e in events:
        parent = e.get("parent_span_id")
        if parent and str(parent) in by_span and str(parent) != str(e.get("span_id")):
            children.setdefault(str(parent), []).append(e)
        else:
            roots.append(e)
    out: list[tuple[int, dict[str, Any]]] = []
    seen: set[int] = set()

    def walk(e: dict[str, Any], depth: int) -> None:
        if id(e) in seen:  # a span cycle in a hostile log must not loop
            return
        seen.add(id(e))
        out.append((depth, e))
        for child in sorted(children.get(str(e.get("span_id")), ()), key=lambda c: int(c.get("seq", 0))):
            walk(child, depth + 1)

    for root in sorted(roots, key=lambda c: int(c.get("seq", 0))):
        walk(root, 0)
    for e in events:  # members of a cycle reachable from no root
        if id(e) not in seen:
            walk(e, 0)
    return out


def _trace_table(events: Sequence[dict[str, Any]], *, base: str, highlight: int | None) -> Html:
    rows: list[Html] = []
    for depth, e in trace_order(events):
        seq = e.get("seq")
        name, rule, reason = _summary(e)
        cls = ' class="hl"' if seq == highlight else ""
        pad = "".join('<span class="indent"></span>' for _ in range(min(depth, 12)))
        rows.append(Html(
            f'<tr{cls}><td class="seq"><a href="{url(base, f"/event/{seq}")}">{esc(seq)}</a></td>'
            f'<td class="time">{esc(_short_time(e.get("time", "")))}</td><td>{_badge(e.get("outcome"))}</td>'
            f'<td class="name">{pad}<a href="{url(base, f"/event/{seq}")}">{esc(name)}</a></td>'
            f'<td class="mono">{esc(e.get("span_id", ""))}</td><td class="rule">{esc(rule)}</td>'
            f'<td class="reason">{esc(_cut(reason))}</td></tr>'
        ))
    head = join(Html(f"<th>{h}</th>") for h in ("seq", "time", "outcome", "call", "span", "rule", "reason"))
    return Html(f'<table class="events trace"><thead><tr>{head}</tr></thead><tbody>{join(rows)}</tbody></table>')


def trace_body(trace_id: str, events: Sequence[dict[str, Any]], *, base: str, capped: bool) -> Html:
    if not events:
        return Html(f'<h1>Trace <span class="mono">{esc(trace_id)}</span></h1><p class="empty">No calls in this trace.</p>')
    first, last = events[0], events[-1]
    sessions = sorted({str(e.get("session_id")) for e in events})
    return Html(
        f'<h1>Trace <span class="mono">{esc(trace_id)}</span></h1>'
        f'<p class="note">{len(events)} call(s){" (the first ones only)" if capped else ""}, '
        f"{esc(_short_time(first.get('time')))} → {esc(_short_time(last.get('time')))}; session "
        + ", ".join(f'<a href="{url(base, "/", {"session": s})}">{esc(s)}</a>' for s in sessions[:10])
        + f' · <a href="{url(base, "/", {"trace": trace_id})}">as a filtered list</a></p>'
        + _trace_table(events, base=base, highlight=None)
    )


def _dl(items: Sequence[tuple[str, Html]]) -> Html:
    return join(Html(f"<dt>{esc(k)}</dt><dd>{v}</dd>") for k, v in items)


def _mono(value: object) -> Html:
    return Html(f'<span class="mono">{esc(value)}</span>') if value not in (None, "") else Html('<span class="none">—</span>')


def event_body(e: dict[str, Any], trace: Sequence[dict[str, Any]], *, base: str) -> Html:
    """One event: what was decided and why, its redacted arguments and result, its trace, and the
    full stored record."""
    seq = e.get("seq")
    seq_n = seq if isinstance(seq, int) else 0
    nav = (f'<div class="pager"><a class="btn" href="{url(base, f"/event/{seq_n - 1}")}">← seq {seq_n - 1}</a>'
           f'<a class="btn" href="{url(base, f"/event/{seq_n + 1}")}">seq {seq_n + 1} →</a></div>') if seq_n else ""
    if e.get("type") != "call":
        name, _, _ = _summary(e)
        return Html(f"<h1>#{esc(seq)} {esc(name)}</h1>{nav}<h2>Full record</h2><pre>{pretty_json(e)}</pre>")
    d = _dict(e.get("decision"))
    ident = _dict(e.get("identity"))
    result = _dict(e.get("result"))
    reasons = d.get("reasons") if isinstance(d.get("reasons"), list) else []
    reason_html = (Html("<ul class=\"reasons\">" + join(Html(f"<li>{esc(r)}</li>") for r in reasons) + "</ul>")
                   if reasons else Html('<span class="none">—</span>'))
    trace_id = str(e.get("trace_id", ""))
    decision = _dl([
        ("outcome", _badge(e.get("outcome"))),
        ("effect", esc(d.get("effect", ""))),
        ("rule", Html(f'<a class="mono" href="{url(base, "/", {"rule": d.get("rule_id", "")})}">{esc(d.get("rule_id", ""))}</a>')),
        ("reasons", reason_html),
        ("risk", esc(d.get("risk", ""))),
        ("approval", Html(f"<pre>{pretty_json(d.get('approval'))}</pre>") if d.get("approval") is not None else _mono(None)),
        ("error code", _mono(e.get("error_code"))),
        ("duration", esc(f"{e.get('duration_ms')} ms")),
    ])
    who = _dl([
        ("tool", Html(f'<a class="mono" href="{url(base, "/", {"tool": e.get("exposed_name", "")})}">'
                      f'{esc(e.get("exposed_name", ""))}</a> ({esc(e.get("kind", ""))})')),
        ("server / tool", Html(f'<a href="{url(base, "/", {"server": e.get("server", "")})}">{esc(e.get("server", ""))}</a>'
                               f" / {esc(e.get('tool', ''))}")),
        ("user", Html(f'<a href="{url(base, "/", {"user": ident.get("user", "")})}">{esc(ident.get("user", ""))}</a>'
                      f" · roles {esc(', '.join(str(r) for r in ident.get('roles') or []) or '—')}"
                      f" · {esc(ident.get('source', ''))} · client {esc(ident.get('client') or '—')}")),
        ("model", _mono(e.get("model"))),
        ("session", Html(f'<a class="mono" href="{url(base, "/", {"session": e.get("session_id", "")})}">'
                         f'{esc(e.get("session_id", ""))}</a>')),
        ("trace", Html(f'<a class="mono" href="{url(base, "/trace", {"id": trace_id})}">{esc(trace_id)}</a>')),
        ("span / parent", Html(f"{_mono(e.get('span_id'))} / {_mono(e.get('parent_span_id'))}")),
        ("time", _mono(e.get("time"))),
    ])
    res = (Html("<dl>" + _dl([
        ("size", esc(f"{result.get('size_bytes')} bytes")),
        ("sha256", _mono(result.get("sha256"))),
        ("flags", esc(", ".join(str(f) for f in result.get("flags") or []) or "—")),
        ("summary (redacted)", Html(f"<pre>{pretty_json(result.get('summary'))}</pre>")),
    ]) + "</dl>") if result else Html('<span class="none">no result (the call was not forwarded, or nothing came back)</span>'))
    integrity = _dl([
        ("tool digest", _mono(e.get("tool_digest"))),
        ("args sha256", _mono(e.get("args_sha256"))),
        ("redactions", esc(", ".join(str(r) for r in e.get("redactions") or []) or "—")),
        ("degraded", esc(", ".join(str(r) for r in e.get("degraded") or []) or "—")),
        ("prev hash", _mono(e.get("prev_hash"))),
        ("hash", _mono(e.get("hash"))),
    ])
    others = len(trace) - 1
    return Html(
        f'<h1>#{esc(seq)} <span class="mono">{esc(e.get("exposed_name", ""))}</span> {_badge(e.get("outcome"))}</h1>{nav}'
        f'<section class="cards"><div class="card"><h2>Decision</h2><dl>{decision}</dl></div>'
        f'<div class="card"><h2>Call</h2><dl>{who}</dl></div></section>'
        f'<h2>Arguments (redacted preview)</h2><pre class="args">{pretty_json(e.get("args_preview"))}</pre>'
        f"<h2>Result</h2>{res}"
        f'<h2>Trace <a class="mono" href="{url(base, "/trace", {"id": trace_id})}">{esc(trace_id)}</a> '
        f'<span class="note">({others} other call(s))</span></h2>'
        + _trace_table(trace, base=base, highlight=seq_n)
        + f"<h2>Integrity</h2><dl>{integrity}</dl>"
        f'<h2>Full record</h2><pre class="record">{pretty_json(e)}</pre>'
    )


def verify_badge(state: VerifyState, running: bool, *, base: str, age_s: float | None) -> Html:
    """The header's one-line verify status."""
    href = url(base, "/verify")
    spin = " · verifying…" if running else ""
    if state.state == "pending":
        return Html(f'<a class="vs vs-pending" href="{href}">not verified yet{spin}</a>')
    if state.state == "valid":
        age = f", {age_s:.0f} s ago" if age_s is not None else ""
        return Html(f'<a class="vs vs-valid" href="{href}">✔ chain valid: {state.events:,} events{esc(age)}{spin}</a>')
    if state.state == "invalid":
        at = f" at seq {state.bad_seq}" if state.bad_seq is not None else ""
        return Html(f'<a class="vs vs-invalid" href="{href}">✖ INVALID{esc(at)}{spin}</a>')
    return Html(f'<a class="vs vs-failed" href="{href}">? cannot verify{spin}</a>')


def verify_body(state: VerifyState, running: bool, *, base: str, age_s: float | None, closed: bool | None,
                size_now: int) -> Html:
    """The verify page: the last run's full result, and what it did not cover."""
    rows: list[tuple[str, Html]] = [("result", verify_badge(state, running, base=base, age_s=age_s))]
    if state.state != "pending":
        rows += [
            ("events checked", esc(f"{state.events:,}")),
            ("last seq checked", _mono(state.last_seq)),
            ("checkpoints", esc(state.checkpoints)),
            ("took", esc(f"{state.duration_s:.1f} s")),
        ]
    if state.bad_seq is not None:
        rows.append(("first bad seq", Html(f'<a class="mono" href="{url(base, f"/event/{state.bad_seq}")}">{state.bad_seq}</a>')))
    if state.problem:
        rows.append(("problem", Html(f'<span class="problem">{esc(state.problem)}</span>')))
    for w in state.warnings:
        rows.append(("warning", esc(w)))
    if closed is not None:
        rows.append(("log end", esc("closed with a shutdown checkpoint" if closed
                                    else "open: a gateway is writing it (or one stopped without closing it)")))
    if state.state != "pending" and size_now > state.log_size >= 0:
        rows.append(("not yet verified", esc(f"{size_now - state.log_size:,} bytes written since this run started")))
    return Html(
        "<h1>Verify</h1>"
        '<p class="note">Runs <code>checkrein audit verify --live</code> on the log: every line, the hash chain, '
        "checkpoints and Merkle roots, segment links and the SQLite copy. It runs again as the log grows.</p>"
        f"<dl>{_dl(rows)}</dl>"
        f'<p><a class="btn" href="{url(base, "/verify", {"run": "1"})}">Verify now</a></p>'
    )
