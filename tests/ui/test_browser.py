"""The web view in a real browser (Playwright driving Debian's Chromium) over a real audit: a
`checkrein serve --transport http --ui` subprocess in front of the bundled sandbox server, called
by the MCP SDK's client. Load the page, filter to denials, open one and read its reason, then make
a new call and watch it appear without a reload; a <script> in a tool argument stays text. Every
wait is Playwright's bounded wait on a condition."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from playwright.sync_api import Browser, Page, expect, sync_playwright

from checkrein.audit import EventFilter, query_events
from checkrein.audit.query import count_events

from .helpers import CHROME_ARGS, XSS, child_env, start_until, stop

TOKEN = "browser-test-token"
CHROMIUM = os.environ.get("CHECKREIN_CHROMIUM", "/usr/bin/chromium")
WAIT_MS = 30_000
expect.set_options(timeout=WAIT_MS)


CONFIG = """\
[gateway]
token = "${GW_TOKEN}"

[[servers]]
name = "sandbox"
command = "python"
args = ["-m", "checkrein.servers.sandbox"]
env = { CHECKREIN_SANDBOX_DIR = "sandbox" }
timeout_s = 20

[policy]
template = "development"

[policy.tools."sandbox__read_file"]
risk = "low"
args = { filename = { kind = "path", roots = ["."] } }

[audit]
dir = "audit"
"""


@dataclass
class Gateway:
    base: str
    audit: Path


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    work = tmp_path_factory.mktemp("browser")
    (work / "checkrein.toml").write_text(CONFIG, encoding="utf-8")
    proc, m = start_until(["serve", "--config", str(work / "checkrein.toml"), "--transport", "http", "--port", "0", "--ui"],
                          r"audit web view on (http://127\.0\.0\.1:\d+)/ui/", env=child_env(GW_TOKEN=TOKEN), cwd=work)
    try:
        yield Gateway(m.group(1), work / "audit")
    finally:
        stop(proc)


def call(gw: Gateway, *calls: tuple[str, dict[str, Any]]) -> list[bool]:
    """Each (tool, arguments) through the gateway's MCP endpoint; returns is_error per call."""

    async def run() -> list[bool]:
        with anyio.fail_after(60):
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30, trust_env=False)
            async with http, Client(streamable_http_client(gw.base + "/mcp", http_client=http), cache=None) as c:  # type: ignore[arg-type]
                return [bool((await c.call_tool(name, args)).is_error) for name, args in calls]

    # Playwright's sync API keeps an event loop on this thread: the client gets its own thread.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, run).result(timeout=120)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("dialog", lambda d: errors.append(f"dialog: {d.message}"))
    try:
        yield pg
    finally:
        context.close()
    assert errors == [], errors  # no CSP violation, no script error, no alert


def _rows(pg: Page) -> Any:
    return pg.locator("tbody#rows tr")


def _stored(gw: Gateway, filename: str) -> dict[str, Any]:
    """The indexed event of the call with this filename argument (the index may lag a moment)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for e in query_events(gw.audit, EventFilter(tool="sandbox__read_file"), limit=20):
            if isinstance(e.get("args_preview"), dict) and e["args_preview"].get("filename") == filename:
                return e
        time.sleep(0.1)
    raise AssertionError(f"no audit event for read_file({filename!r}) within 30 s")


def _what_the_page_had(gw: Gateway, pg: Page) -> str:
    """For a failure: the page's rows, cursor and live state, and what the log and index hold."""
    tbody = pg.locator("tbody#rows")
    shown = tbody.get_attribute("data-last-seq", timeout=1000) if tbody.count() else None
    stored = [(e.get("seq"), e.get("type"), e.get("exposed_name") or e.get("event")) for e in query_events(gw.audit, EventFilter(), limit=30)]
    live = pg.locator("#live")
    return (f"page {pg.url} h1={pg.locator('h1').all_inner_texts()} rows={_rows(pg).all_inner_texts()} "
            f"data-last-seq={shown} live={live.all_inner_texts()}; stored (seq, type, name): {stored}")


def test_denials_reasons_and_live_calls_in_the_browser(gateway: Gateway, page: Page) -> None:
    """Load, filter to denials, open one and see its reason, then see a new call arrive live."""
    assert call(gateway, ("sandbox__read_file", {"filename": "notes.txt"}),
                ("sandbox__read_file", {"filename": "../../../../etc/passwd"}),
                ("sandbox__get_weather", {"city": "Shanghai"})) == [False, True, False]
    page.goto(f"{gateway.base}/ui/?token={TOKEN}")
    expect(page).to_have_url(re.compile(r"/ui/$"))  # the token left the address bar
    try:
        expect(_rows(page).filter(has_text="sandbox__get_weather")).to_have_count(1)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{_what_the_page_had(gateway, page)}") from None

    page.get_by_role("link", name="Denials").click()
    expect(page).to_have_url(re.compile(r"outcome=denied"))
    expect(_rows(page)).to_have_count(1)
    expect(_rows(page).first.locator(".badge")).to_have_text("denied")

    stored = _stored(gateway, "../../../../etc/passwd")
    reason, rule = stored["decision"]["reasons"][0], stored["decision"]["rule_id"]
    assert stored["outcome"] == "denied" and reason
    _rows(page).first.get_by_role("link", name="sandbox__read_file").click()
    expect(page.locator("h1")).to_contain_text(f"#{stored['seq']}")
    expect(page.locator("ul.reasons")).to_contain_text(reason)
    expect(page.locator(".card").first).to_contain_text(rule)
    expect(page.locator("pre.args")).to_contain_text("../../../../etc/passwd")

    page.get_by_role("link", name="Events", exact=True).click()  # not the "chain valid: N events" badge
    expect(page.locator("#live")).to_have_text("live")
    page.evaluate("window.__sameDocument = true")  # a reload would lose this
    before = int(page.locator("#total").inner_text().replace(",", ""))
    top = int(_rows(page).first.get_attribute("data-seq") or "0")
    assert call(gateway, ("sandbox__read_file", {"filename": "readme.md"})) == [False]
    newest = _stored(gateway, "readme.md")
    expect(page.locator(f'tbody#rows tr[data-seq="{newest["seq"]}"]')).to_contain_text("sandbox__read_file")
    # Newest first: the new call sits above every row the page had (listings are audited too).
    assert page.locator(f'tbody#rows tr[data-seq="{top}"] ~ tr[data-seq="{newest["seq"]}"]').count() == 0
    arrived = count_events(gateway.audit, EventFilter(calls_only=True, after_seq=top))
    assert arrived is not None and arrived >= 1
    expect(page.locator("#total")).to_have_text(f"{before + arrived:,}")
    assert page.evaluate("window.__sameDocument") is True
    expect(page.locator("#verify-status")).to_contain_text("chain valid", timeout=120_000)


def test_a_poll_that_never_answers_does_not_stop_the_live_list(gateway: Gateway, page: Page) -> None:
    """The first poll of the live list is held forever (never answered): it is given up without
    relabelling the list paused meanwhile, and after resuming a new call still appears without a
    reload."""
    held: list[Any] = []
    failed: list[str] = []

    def hold_the_first(route: Any) -> None:
        if not held:
            held.append(route)  # neither answered nor aborted
        else:
            route.continue_()

    page.route("**/events.json*", hold_the_first)
    page.on("requestfailed", lambda request: failed.append(request.url) if "/events.json" in request.url else None)
    page.goto(f"{gateway.base}/ui/?token={TOKEN}")
    expect(page.locator("#live")).to_have_text("live")
    page.evaluate("window.__sameDocument = true")
    deadline = time.monotonic() + 30
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    assert held, "the page never polled"
    page.locator("#pause").click()
    expect(page.locator("#live")).to_have_text("paused")
    deadline = time.monotonic() + 60
    while not failed and time.monotonic() < deadline:  # the page gives the held poll up
        page.wait_for_timeout(100)
    assert failed, "the held poll was never given up"
    expect(page.locator("#live")).to_have_text("paused")
    page.locator("#pause").click()
    call(gateway, ("sandbox__read_file", {"filename": "after-a-stuck-poll.txt"}))  # a missing file: still a call
    newest = _stored(gateway, "after-a-stuck-poll.txt")
    expect(page.locator(f'tbody#rows tr[data-seq="{newest["seq"]}"]')).to_contain_text("sandbox__read_file")
    expect(page.locator("#live")).to_have_text("live")
    assert page.evaluate("window.__sameDocument") is True


def test_a_script_in_a_tool_argument_is_shown_as_text(gateway: Gateway, page: Page) -> None:
    """A tool argument holding <script> and an onerror <img> renders as text and runs nothing."""
    call(gateway, ("sandbox__read_file", {"filename": XSS}))
    event = _stored(gateway, XSS)
    page.goto(f"{gateway.base}/ui/?token={TOKEN}")
    page.goto(f"{gateway.base}/ui/event/{event['seq']}")
    expect(page.locator("pre.args")).to_contain_text("<script>window.__pwned=1</script>")
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("pre.args script, pre.args img, pre.record img").count() == 0
    csp = page.request.get(f"{gateway.base}/ui/").headers["content-security-policy"]
    assert "script-src 'self'" in csp and "require-trusted-types-for 'script'" in csp


def test_the_standalone_view_opens_from_the_printed_address(gateway: Gateway, page: Page) -> None:
    """`checkrein ui --audit DIR` prints an address with a one-time token that opens the view."""
    proc, m = start_until(["ui", "--audit", str(gateway.audit), "--port", "0"],
                          r"on (http://127\.0\.0\.1:\d+)/\?token=([\w-]+)", env=child_env())
    try:
        page.goto(f"{m.group(1)}/?token={m.group(2)}")
        expect(_rows(page).first).to_be_visible()
        expect(page.locator("header .dir")).to_contain_text(str(gateway.audit.resolve()))
        page.goto(f"{m.group(1)}/charts")
        expect(page.locator("figure.chart svg")).to_have_count(2)
    finally:
        page.goto("about:blank")  # the view polls: leave it before its server stops, or the poll is refused
        assert stop(proc) == 0


def test_the_audit_of_the_browser_session_verifies(gateway: Gateway) -> None:
    """What the view read is a log `checkrein audit verify --live` accepts, with the key serve made."""
    key = gateway.audit.parent / "checkrein.audit-key"
    out = subprocess.run([sys.executable, "-m", "checkrein", "audit", "verify", str(gateway.audit), "--live", "--json",
                          "--key", str(key)], env=child_env(), capture_output=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads(out.stdout)["valid"] is True
