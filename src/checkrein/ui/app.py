"""`build_ui_app`: the read-only web view of one audit directory, as a Starlette app.

Routes (under the mount prefix, if any): ``/`` the event list (filters in the query string,
newest first, live), ``/events.json`` what is new since a seq (the list's polling), ``/event/N``
one event, ``/trace?id=`` one trace, ``/charts``, ``/verify`` and ``/verify.json``, ``/static/*``
(assets shipped in this package), ``/health``.

Every response carries a strict Content-Security-Policy (scripts and styles from this app only,
no inline code, Trusted Types), ``nosniff``, no framing, no referrer, no caching. Only GET and
HEAD are served. Requests whose ``Host`` is not one of ``allowed_hosts`` (loopback names by
default, against DNS rebinding) and cross-site subresource requests (``Sec-Fetch-Site``) are
refused. Authentication is not here: wrap the app in `checkrein.frontend.HttpGuard` (and
`BrowserLogin`), as `checkrein ui` and `checkrein serve --ui` do.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from checkrein.audit.query import (
    CallValues,
    EventFilter,
    call_breakdown,
    call_values,
    count_events,
    event_at,
    parse_since,
    query_events,
)
from checkrein.audit.segments import INDEX_FILE
from checkrein.errors import AuditError

from .charts import latency_chart, rules_chart
from .filters import FIELDS, FilterError, ListQuery, parse_list_query, with_cursor
from .html import Html, esc, layout, url
from .pages import event_body, event_rows, list_body, trace_body, verify_badge, verify_body
from .verify_status import VerifyMonitor

__all__ = ["CSP", "LOOPBACK_HOSTS", "build_ui_app"]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src data:; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'; "
    "require-trusted-types-for 'script'; trusted-types checkrein-ui"
)
_SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]
_STATIC = {"ui.css": "text/css; charset=utf-8", "ui.js": "text/javascript; charset=utf-8"}
_COUNT_CAP = 100_000
_COUNT_BUDGET_S = 0.15
"""A count no index serves stops after this long; the list then says "many" instead of a number."""
_LIVE_MAX = 200
_TRACE_MAX = 2000
_VALUES_EVERY_S = 5.0
_CHART_WINDOWS = (("15m", "15 min"), ("1h", "1 hour"), ("24h", "24 hours"), ("7d", "7 days"), ("", "all"))


class _Security:
    """Host allow-list, methods, Fetch Metadata, and the security headers on every response."""

    def __init__(self, app: ASGIApp, allowed_hosts: Sequence[str] | None) -> None:
        self.app = app
        self.allowed = None if allowed_hosts is None else {h.lower().strip("[]") for h in allowed_hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        name = host.rsplit("]", 1)[0].lstrip("[") if host.startswith("[") else host.rpartition(":")[0] or host
        if self.allowed is not None and name.lower() not in self.allowed:
            await _plain(send, 421, f"Host {host!r} is not served here (loopback names only)")
            return
        if scope.get("method") not in ("GET", "HEAD"):
            await _plain(send, 405, "this view is read-only: GET and HEAD only", allow=True)
            return
        site = headers.get("sec-fetch-site")
        navigation = headers.get("sec-fetch-mode") == "navigate" and headers.get("sec-fetch-dest") == "document"
        if site == "cross-site" and not navigation:
            await _plain(send, 403, "cross-site requests are refused")
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        if any(k == "token" for k, _ in query):
            # A login (`BrowserLogin` turned it into a bearer token the guard accepted): drop the
            # token from the address bar and history; the session cookie rides on this redirect.
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            target = quote(scope.get("path", "/"), safe="/") + (f"?{rest}" if rest else "")
            await send({"type": "http.response.start", "status": 303,
                        "headers": [(b"location", target.encode("latin-1")), (b"content-length", b"0"), *_SECURITY_HEADERS]})
            await send({"type": "http.response.body", "body": b""})
            return

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = dict(message)
                message["headers"] = [*message.get("headers", []), *_SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)


async def _plain(send: Send, status: int, text: str, *, allow: bool = False) -> None:
    body = text.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
               *_SECURITY_HEADERS]
    if allow:
        headers.append((b"allow", b"GET, HEAD"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@dataclass
class _Values:
    """Known tools/servers/users for the filter form, refreshed incrementally."""

    values: CallValues = field(default_factory=CallValues)
    checked: float = -1e18


class UiState:
    def __init__(self, directory: Path, monitor: VerifyMonitor, poll_ms: int, clock: Callable[[], float]) -> None:
        self.directory = directory
        self.monitor = monitor
        self.poll_ms = poll_ms
        self.clock = clock
        self._values = _Values()
        self._values_lock = anyio.Lock()

    async def run(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        """A blocking read, off the event loop (the gateway's, when mounted there)."""
        return await anyio.to_thread.run_sync(lambda: fn(*args, **kw))

    async def values(self) -> CallValues:
        async with self._values_lock:
            v = self._values
            if self.clock() - v.checked >= _VALUES_EVERY_S:
                new = await self.run(call_values, self.directory, after_seq=v.values.last_seq)
                v.values = CallValues(v.values.tools | new.tools, v.values.servers | new.servers,
                                      v.values.users | new.users, new.last_seq)
                v.checked = self.clock()
            return v.values

    def has_index(self) -> bool:
        return (self.directory / INDEX_FILE).exists()

    def status(self, base: str, *, refresh: bool = False) -> Html:
        state, running = self.monitor.current(refresh=refresh)
        age = self.clock() - state.finished_at if state.finished_at is not None else None
        return verify_badge(state, running, base=base, age_s=age)


def _base(request: Request) -> str:
    return str(request.scope.get("root_path", "")).rstrip("/")


def _page(request: Request, state: UiState, title: str, active: str, body: Html, status: int = 200) -> Response:
    base = _base(request)
    page = layout(base=base, title=title, active=active, body=body, status=state.status(base), directory=str(state.directory))
    return Response(page, status_code=status, media_type="text/html; charset=utf-8")


def _unavailable(request: Request, state: UiState, exc: Exception) -> Response:
    why = exc.message if isinstance(exc, AuditError) else f"cannot read the audit: {exc}"
    body = Html(f'<h1>No audit to show yet</h1><p class="error">{esc(why)}</p>'
                '<p class="note">This page does not reload by itself: reload it once the gateway has written events.</p>')
    return _page(request, state, "unavailable", "events", body, 503)


_READ_ERRORS = (AuditError, OSError, sqlite3.Error, ValueError)


def build_ui_app(
    directory: Path,
    *,
    allowed_hosts: Sequence[str] | None = LOOPBACK_HOSTS,
    poll_ms: int = 1500,
    monitor: VerifyMonitor | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> ASGIApp:
    """The view of the audit in ``directory`` (read-only). ``allowed_hosts=None`` serves any Host
    header (for a non-loopback bind, where the token guards it)."""
    state = UiState(directory.resolve(), monitor or VerifyMonitor(directory.resolve()), poll_ms, clock)
    assets = {name: (resources.files(__package__) / "static" / name).read_bytes() for name in _STATIC}

    async def events_page(request: Request) -> Response:
        base = _base(request)
        error = None
        try:
            q = parse_list_query(request.query_params)
        except FilterError as exc:
            error = str(exc)
            raw = {k: v for k, v in request.query_params.items() if k in FIELDS and k != exc.field}
            q = ListQuery(raw, EventFilter(calls_only=True))
        try:
            # Before the rows: an empty list follows the log from `values.last_seq`, which must not
            # count an event written after the rows were read (the live list would skip it).
            values = await state.values()
            if q.after is not None:
                events = await state.run(query_events, state.directory, with_cursor(q, after=q.after), limit=q.limit, first=True)
            else:
                events = await state.run(query_events, state.directory, with_cursor(q, before=q.before), limit=q.limit)
            follows = max((int(e["seq"]) for e in events if isinstance(e.get("seq"), int)), default=values.last_seq)
            # The newest page's total stops where the live list starts (it adds what comes after):
            # an event indexed between the reads is counted once, not twice.
            counted = with_cursor(q, before=follows + 1) if q.newest else q.flt
            total = await state.run(count_events, state.directory, counted, cap=_COUNT_CAP, budget_s=_COUNT_BUDGET_S)
        except _READ_ERRORS as exc:
            return _unavailable(request, state, exc)
        note = None if state.has_index() else (
            f"This directory has no {INDEX_FILE}: every page scans the whole log. Run `checkrein audit reindex "
            f"{state.directory}` while no gateway writes it.")
        body = list_body(q, events, follows=follows, base=base, total=total, capped=total is not None and total >= _COUNT_CAP,
                         values=values, error=error, note=note)
        return _page(request, state, "events", "events", body, 400 if error else 200)

    async def events_json(request: Request) -> Response:
        """Rows newer than ``after`` for the live list (the newest ``_LIVE_MAX`` of them); no count,
        so a poll costs one indexed range read."""
        base = _base(request)
        try:
            q = parse_list_query({k: v for k, v in request.query_params.items() if k != "after"})
            after_text = request.query_params.get("after", "-1").strip()
            if not re.fullmatch(r"-1|\d{1,18}", after_text):
                raise FilterError("after", f"expected a seq number, got {after_text!r}")
            after = int(after_text)
        except FilterError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        try:
            flt = replace(q.flt, after_seq=after, before_seq=None)
            events = await state.run(query_events, state.directory, flt, limit=_LIVE_MAX + 1)
        except _READ_ERRORS as exc:
            why = exc.message if isinstance(exc, AuditError) else str(exc)
            return JSONResponse({"error": why, "waiting": True}, status_code=503)
        more = len(events) > _LIVE_MAX
        events = events[-_LIVE_MAX:]
        last = max((int(e["seq"]) for e in events), default=after)
        return JSONResponse({
            "rows": event_rows(list(reversed(events)), base=base),
            "added": len(events), "more": more, "last_seq": last,  # the page adds `added` to an exact total
            "verify": state.status(base),
        })

    async def event_page(request: Request) -> Response:
        seq = int(request.path_params["seq"])
        try:
            # Past 2**62: no log is that long, and SQLite's integers end at 2**63.
            e = await state.run(event_at, state.directory, seq) if seq < 2**62 else None
            trace: list[dict[str, Any]] = []
            if e is not None and e.get("type") == "call" and e.get("trace_id"):
                trace = await state.run(query_events, state.directory, EventFilter(trace=str(e["trace_id"])),
                                        limit=_TRACE_MAX, first=True)
        except _READ_ERRORS as exc:
            return _unavailable(request, state, exc)
        if e is None:
            body = Html(f'<h1>No event #{esc(seq)}</h1><p class="note">The log has no event with this seq (yet).</p>'
                        f'<p><a class="btn" href="{url(_base(request), "/")}">Back to the list</a></p>')
            return _page(request, state, f"#{seq}", "events", body, 404)
        return _page(request, state, f"#{seq}", "events", event_body(e, trace, base=_base(request)))

    async def trace_page(request: Request) -> Response:
        trace_id = request.query_params.get("id", "").strip()
        if not trace_id or len(trace_id) > 512:
            body = Html('<h1>Trace</h1><p class="error">id: give a trace id (?id=...)</p>')
            return _page(request, state, "trace", "events", body, 400)
        try:
            events = await state.run(query_events, state.directory, EventFilter(trace=trace_id), limit=_TRACE_MAX, first=True)
        except _READ_ERRORS as exc:
            return _unavailable(request, state, exc)
        body = trace_body(trace_id, events, base=_base(request), capped=len(events) >= _TRACE_MAX)
        return _page(request, state, f"trace {trace_id[:16]}", "events", body)

    async def charts_page(request: Request) -> Response:
        base = _base(request)
        window = request.query_params.get("since", "").strip()
        try:
            since = parse_since(window) if window else None
        except ValueError as exc:
            return _page(request, state, "charts", "charts", Html(f'<h1>Charts</h1><p class="error">since: {esc(exc)}</p>'), 400)
        try:
            b = await state.run(call_breakdown, state.directory, since=since)
        except _READ_ERRORS as exc:
            return _unavailable(request, state, exc)
        tabs = "".join(
            f'<a class="btn{" on" if w == window else ""}" href="{url(base, "/charts", {"since": w})}">{esc(label)}</a>'
            for w, label in _CHART_WINDOWS
        )
        extra: dict[str, object] = {"since": window} if window else {}
        denied = sum(o.get("denied", 0) for o in b.by_rule.values())
        body = Html(
            f'<h1>Charts</h1><div class="bar"><span class="count"><b>{b.calls:,}</b> calls, <b>{denied:,}</b> denied'
            f'</span><span class="tabs">{tabs}</span></div>'
            + rules_chart(b, base=base, extra=extra) + latency_chart(b.latency, base=base, extra=extra)
        )
        return _page(request, state, "charts", "charts", body)

    async def last_event_closed() -> bool | None:
        last = await state.run(query_events, state.directory, EventFilter(), limit=1)
        if not last:
            return None
        return bool(last[0].get("type") == "checkpoint" and last[0].get("reason") == "shutdown")

    async def verify_page(request: Request) -> Response:
        base = _base(request)
        refresh = request.query_params.get("run") == "1"
        verify_state, running = state.monitor.current(refresh=refresh)
        if refresh:
            return RedirectResponse(base + "/verify", status_code=303)
        try:
            closed = await last_event_closed()
        except _READ_ERRORS:
            closed = None
        age = state.clock() - verify_state.finished_at if verify_state.finished_at is not None else None
        body = verify_body(verify_state, running, base=base, age_s=age, closed=closed,
                           size_now=await state.run(state.monitor.log_size))
        return _page(request, state, "verify", "verify", body)

    async def verify_json(request: Request) -> Response:
        s, running = state.monitor.current()
        return JSONResponse({"state": s.state, "running": running, "events": s.events, "bad_seq": s.bad_seq,
                             "problem": s.problem, "last_seq": s.last_seq, "html": state.status(_base(request))})

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in assets:
            return Response("not found", status_code=404, media_type="text/plain")
        return Response(assets[name], media_type=_STATIC[name])

    async def health(request: Request) -> Response:
        del request
        return JSONResponse({"status": "ok", "directory": str(state.directory)})

    app = Starlette(routes=[
        Route("/", events_page, methods=["GET"]),
        Route("/events.json", events_json, methods=["GET"]),
        Route("/event/{seq:int}", event_page, methods=["GET"]),
        Route("/trace", trace_page, methods=["GET"]),
        Route("/charts", charts_page, methods=["GET"]),
        Route("/verify", verify_page, methods=["GET"]),
        Route("/verify.json", verify_json, methods=["GET"]),
        Route("/static/{name}", static, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
    ])
    return _Security(app, allowed_hosts)
