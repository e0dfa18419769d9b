"""The view's pages over a real audit log (in-process ASGI client): escaping of every hostile
field, the security headers, Host / method / Fetch Metadata checks, filters, cursors, live rows."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from checkrein.audit import LifecycleRecord
from checkrein.ui import CSP, build_ui_app

from .helpers import BIDI, XSS, call, denied, hostile, write_audit


@pytest.fixture(scope="module")
def audit_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ui-app") / "audit"
    records = [LifecycleRecord("gateway.start", {"note": XSS})]
    records += [call(i) if i % 5 else denied(i) for i in range(120)]
    records += [hostile(120)]
    write_audit(d, records)
    return d


@pytest.fixture(scope="module")
def client(audit_dir: Path) -> Iterator[TestClient]:
    with TestClient(build_ui_app(audit_dir), base_url="http://127.0.0.1:8766") as c:
        yield c


def _hostile_seq(client: TestClient) -> int:
    page = client.get("/", params={"outcome": "denied"}).text
    m = re.search(r'<tr data-seq="(\d+)"><td class="seq"><a href="/event/\d+">\d+</a></td>[^\n]*?evil', page)
    assert m, "the hostile call is listed"
    return int(m.group(1))


def _pages(client: TestClient) -> list[str]:
    seq = _hostile_seq(client)
    return [
        "/", "/?kind=all", "/?outcome=denied", f"/event/{seq}", f"/trace?id=t{XSS}", "/charts", "/verify",
        f"/?server=srv{XSS}", f"/?user=u{XSS}", f"/?tool=evil*&session=s{XSS}",
    ]


class _Tags(HTMLParser):
    """Every element and attribute a browser would build from a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(body: str) -> _Tags:
    t = _Tags()
    t.feed(body)
    return t


def test_hostile_strings_are_shown_as_text_on_every_page(client: TestClient) -> None:
    """A <script> (or an onerror attribute) in any field of a record never reaches the page as markup."""
    for path in _pages(client):
        r = client.get(path)
        assert r.status_code == 200, (path, r.text[:300])
        page = _parse(r.text)
        scripts = [a for tag, a in page.tags if tag == "script"]
        assert scripts == [{"src": "/static/ui.js", "defer": None}], (path, scripts)
        assert not [tag for tag, _ in page.tags if tag in ("img", "iframe", "object", "embed", "base", "meta")
                    and tag != "meta"], path
        handlers = [(tag, k) for tag, a in page.tags for k in a if k.startswith("on")]
        assert handlers == [], (path, handlers)
        assert not [v for _, a in page.tags for v in a.values() if v and v.strip().lower().startswith("javascript:")]
    detail = _parse(client.get(f"/event/{_hostile_seq(client)}").text)
    assert any("<script>window.__pwned=1</script>" in t for t in detail.text)  # shown, as text


def test_live_rows_are_escaped_too(client: TestClient) -> None:
    """The JSON rows the live list inserts are the same escaped markup."""
    data = client.get("/events.json", params={"after": "0", "outcome": "denied"}).json()
    assert data["added"] > 0 and "evil&lt;script&gt;" in data["rows"] and "<script>" not in data["rows"]


def test_bidi_overrides_are_made_visible(client: TestClient) -> None:
    """A right-to-left override in a record is shown as a mark, not obeyed."""
    detail = client.get(f"/event/{_hostile_seq(client)}").text
    assert "\u202e" not in detail and "&lt;U+202E&gt;" in detail
    assert BIDI not in detail


def test_every_response_carries_a_strict_csp_and_friends(client: TestClient) -> None:
    """Pages, JSON, assets and errors all carry the CSP, nosniff, no framing, no referrer, no-store."""
    for path in ("/", "/events.json", "/static/ui.js", "/static/ui.css", "/event/999999", "/nope", "/?outcome=bad"):
        h = client.get(path).headers
        assert h["content-security-policy"] == CSP, path
        assert (h["x-content-type-options"], h["x-frame-options"], h["referrer-policy"], h["cache-control"]) == (
            "nosniff", "DENY", "no-referrer", "no-store"), path
    assert "script-src 'self'" in CSP and "'unsafe-inline'" not in CSP and "default-src 'none'" in CSP


def test_assets_ship_in_the_package_with_their_types(client: TestClient) -> None:
    """The script and stylesheet come from the package; nothing else is served as an asset."""
    js, css = client.get("/static/ui.js"), client.get("/static/ui.css")
    assert js.headers["content-type"].startswith("text/javascript") and "trustedTypes" in js.text
    assert css.headers["content-type"].startswith("text/css")
    assert client.get("/static/..%2Fapp.py").status_code == 404
    page = client.get("/").text
    assert "http://" not in re.sub(r'<span class="dir"[^<]*</span>', "", page).split("<main>")[0]  # no CDN


def test_foreign_host_headers_are_refused(audit_dir: Path) -> None:
    """A DNS-rebinding name (any Host but a loopback one) gets 421, before any page is built."""
    with TestClient(build_ui_app(audit_dir), base_url="http://evil.example:8766") as c:
        r = c.get("/")
    assert r.status_code == 421 and "evil" not in r.headers.get("content-type", "")
    with TestClient(build_ui_app(audit_dir), base_url="http://[::1]:8766") as c:
        assert c.get("/health").status_code == 200


def test_only_get_and_head_are_served(client: TestClient) -> None:
    """The view is read-only: POST and friends get 405 with an Allow header."""
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        r = client.request(method, "/")
        assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD"
    assert client.head("/").status_code == 200


def test_cross_site_subresource_requests_are_refused(client: TestClient) -> None:
    """Fetch Metadata: another site may link to the view, but not fetch from it."""
    assert client.get("/events.json", headers={"sec-fetch-site": "cross-site", "sec-fetch-mode": "cors"}).status_code == 403
    nav = {"sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate", "sec-fetch-dest": "document"}
    assert client.get("/", headers=nav).status_code == 200
    assert client.get("/events.json", headers={"sec-fetch-site": "same-origin"}).status_code == 200


def test_filter_to_denials_shows_reason_and_rule(client: TestClient) -> None:
    """outcome=denied lists only denials, each with its rule and reason."""
    page = client.get("/", params={"outcome": "denied"}).text
    rows = re.findall(r"<tr data-seq=.*?</tr>", page)
    assert len(rows) == 25 and all("o-denied" in r for r in rows)
    assert sum("analyzer.paths" in r and "outside the allowed roots" in r for r in rows) == 24
    assert '<b id="total" data-exact="1">25</b>' in page


@pytest.mark.parametrize(("params", "expected"), [
    ({"server": "web"}, 60), ({"user": "alice"}, 60), ({"session": "session-1"}, 40), ({"tool": "files__*"}, 60),
    ({"trace": "trace-3"}, 4), ({"rule": "analyzer.paths", "server": "files"}, 12), ({"kind": "all"}, None),
])
def test_each_filter_selects_its_events(client: TestClient, params: dict[str, str], expected: int | None) -> None:
    """Outcome, tool, server, identity, session, trace and rule filters each narrow the list."""
    page = client.get("/", params={**params, "limit": "500"}).text
    rows = re.findall(r"<tr data-seq=", page)
    if expected is None:
        assert len(rows) > 121  # lifecycle and checkpoint events too
    else:
        assert len(rows) == expected, params


def test_time_filters_accept_durations_and_times(client: TestClient) -> None:
    """since/until take durations back from now or RFC 3339 times."""
    assert len(re.findall(r"<tr data-seq=", client.get("/", params={"since": "1h", "limit": "500"}).text)) == 121
    assert "No events match" in client.get("/", params={"until": "2000-01-01T00:00:00Z"}).text


def test_bad_filters_are_named_and_refused(client: TestClient) -> None:
    """A bad value is a 400 that names the field, never a silent empty list."""
    for params, field in (({"outcome": "maybe"}, "outcome"), ({"since": "yesterday"}, "since"),
                          ({"limit": "0"}, "limit"), ({"before": "x"}, "before")):
        r = client.get("/", params=params)
        assert r.status_code == 400 and f"{field}:" in r.text, params
    assert client.get("/events.json", params={"since": "nonsense"}).status_code == 400
    assert client.get("/events.json", params={"after": "9" * 30}).status_code == 400


def test_pages_go_back_and_forth_by_seq(client: TestClient) -> None:
    """Older/Newer links walk the filtered list in pages without gaps or repeats."""
    first = client.get("/", params={"limit": "50"}).text
    seqs = [int(s) for s in re.findall(r'<tr data-seq="(\d+)"', first)]
    older_link = re.search(r'href="/\?before=(\d+)">Older', first)
    assert older_link and int(older_link.group(1)) == seqs[-1]
    second = client.get("/", params={"limit": "50", "before": older_link.group(1)}).text
    seqs2 = [int(s) for s in re.findall(r'<tr data-seq="(\d+)"', second)]
    assert len(seqs2) == 50 and max(seqs2) < min(seqs) and "Back to newest" in second
    newer = client.get("/", params={"limit": "50", "after": str(seqs2[0])}).text
    assert [int(s) for s in re.findall(r'<tr data-seq="(\d+)"', newer)] == seqs


def test_live_endpoint_returns_only_rows_past_the_cursor(client: TestClient) -> None:
    """events.json?after=N gives the rows after N, newest first, and the new last seq."""
    page = client.get("/").text
    last = int(re.search(r'data-last-seq="(\d+)"', page).group(1))  # type: ignore[union-attr]
    none = client.get("/events.json", params={"after": str(last)}).json()
    assert none["added"] == 0 and none["last_seq"] == last
    some = client.get("/events.json", params={"after": str(last - 10)}).json()
    got = [int(s) for s in re.findall(r'data-seq="(\d+)"', some["rows"])]
    assert got == sorted(got, reverse=True) and all(last - 10 < s <= last for s in got) and some["last_seq"] == last


def test_event_page_shows_decision_trace_and_record(client: TestClient) -> None:
    """An event shows why it was decided, its trace in order, and the full stored record."""
    page = client.get("/", params={"outcome": "denied", "trace": "trace-5"}).text
    seq = int(re.search(r'<tr data-seq="(\d+)"', page).group(1))  # type: ignore[union-attr]
    detail = client.get(f"/event/{seq}").text
    assert "outside the allowed roots" in detail and "analyzer.paths" in detail
    assert detail.count('<span class="indent"></span>') == 3  # three calls under the trace's first
    assert '&quot;hash&quot;: &quot;' in detail and '&quot;prev_hash&quot;: &quot;' in detail
    assert client.get("/event/999999").status_code == 404
    assert client.get(f"/event/{2**70}").status_code == 404


def test_trace_page_orders_calls_under_their_parents(client: TestClient) -> None:
    """A trace lists its calls in seq order, children under the call whose span is their parent."""
    page = client.get("/trace", params={"id": "trace-2"}).text
    spans = re.findall(r'<td class="mono">(span-\d+)</td>', page)
    assert spans == ["span-8", "span-9", "span-10", "span-11"]
    assert client.get("/trace").status_code == 400


def test_charts_render_decisions_by_rule_and_latency_per_tool(client: TestClient) -> None:
    """The charts page is inline SVG: one bar per rule (by outcome) and per tool, linked to the list."""
    page = client.get("/charts").text
    assert page.count("<svg") == 2
    assert 'href="/?rule=analyzer.paths&amp;outcome=denied"' in page
    assert ">files__read_file</text>" in page and ">web__read_file</text>" in page
    assert client.get("/charts", params={"since": "soon"}).status_code == 400
    assert "No calls in this window" in client.get("/charts", params={"since": "2999-01-01T00:00:00Z"}).text


def test_login_redirect_drops_the_token_from_the_address(client: TestClient) -> None:
    """?token= (already checked by the guard) is answered with a redirect without it."""
    r = client.get("/event/3", params={"token": "t0k", "x": "1"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/event/3?x=1"


def test_a_missing_log_is_a_clear_503(tmp_path: Path) -> None:
    """An empty directory (no gateway has written yet) says so, page and JSON alike."""
    (tmp_path / "empty").mkdir()
    with TestClient(build_ui_app(tmp_path / "empty"), base_url="http://127.0.0.1:8766") as c:
        page = c.get("/")
        assert page.status_code == 503 and "no audit segments" in page.text
        assert c.get("/events.json").json()["waiting"] is True


def test_an_empty_list_follows_the_log_from_before_its_rows_were_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A filter nothing matched yet: an event written right after the rows were read still
    reaches the live list (the page's cursor was not taken from a later read of the log)."""
    from checkrein.ui import app as ui_app

    d = tmp_path / "audit"
    write_audit(d, [call(i) for i in range(5)])
    real = ui_app.query_events

    def rows_then_a_denial(*args: object, **kw: object) -> list[dict[str, object]]:
        found: list[dict[str, object]] = real(*args, **kw)  # type: ignore[arg-type]
        write_audit(d, [denied(99)])  # closed: logged and indexed before the page reads on
        return found

    with TestClient(build_ui_app(d), base_url="http://127.0.0.1:8766") as c:
        monkeypatch.setattr(ui_app, "query_events", rows_then_a_denial)
        page = c.get("/", params={"outcome": "denied"}).text
        monkeypatch.setattr(ui_app, "query_events", real)
        assert "No events match" in page
        last = re.search(r'data-last-seq="(-?\d+)"', page).group(1)  # type: ignore[union-attr]
        live = c.get("/events.json", params={"outcome": "denied", "after": last}).json()
    assert live["added"] == 1 and "outside the allowed roots" in live["rows"], (last, live)


def test_the_newest_total_stops_where_the_live_list_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A denial written between the rows' read and the count's: the page counts what it shows,
    the live list adds the new one, and the total the page then shows is the log's."""
    from checkrein.ui import app as ui_app

    d = tmp_path / "audit"
    write_audit(d, [call(i) if i % 2 else denied(i) for i in range(6)])  # three denials
    real = ui_app.query_events

    def rows_then_a_denial(*args: object, **kw: object) -> list[dict[str, object]]:
        found: list[dict[str, object]] = real(*args, **kw)  # type: ignore[arg-type]
        write_audit(d, [denied(99)])
        return found

    with TestClient(build_ui_app(d), base_url="http://127.0.0.1:8766") as c:
        monkeypatch.setattr(ui_app, "query_events", rows_then_a_denial)
        page = c.get("/", params={"outcome": "denied"}).text
        monkeypatch.setattr(ui_app, "query_events", real)
        shown = re.findall(r'<tr data-seq="(\d+)"', page)
        total = int(re.search(r'<b id="total" data-exact="1">(\d+)</b>', page).group(1))  # type: ignore[union-attr]
        last = re.search(r'data-last-seq="(-?\d+)"', page).group(1)  # type: ignore[union-attr]
        live = c.get("/events.json", params={"outcome": "denied", "after": last}).json()
        now = int(re.search(r'<b id="total" data-exact="1">(\d+)</b>', c.get("/", params={"outcome": "denied"}).text).group(1))  # type: ignore[union-attr]
    assert (len(shown), total, live["added"], now) == (3, 3, 1, 4)
