"""Web view page load on a large audit: server time per page, and full loads in Chromium.

    .venv/bin/python benchmarks/ui.py [--events 100000] [--small 1000] [--rounds 15] [--audit DIR]

Writes (or reuses, with ``--audit``) a log of ``--events`` calls through the real trail (varied
servers, users, tools, traces; 12 % denied), starts `checkrein ui` on it as a subprocess, and
times each page over loopback (median and p90 of ``--rounds`` requests). Baselines measured in
the same run: the stylesheet (the server's floor: guard, routing, headers, no audit read) and
the same pages over a ``--small``-event log (what a page costs beyond a small log's). Then
Chromium (Playwright) loads the list, the denials and the charts ``--rounds`` times and reports
the Navigation Timing load event (HTML, CSS, script, first render). Pages are timed once the
view's first background `verify` run is over (it takes a core for a while on a large log).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import anyio

from checkrein.audit import CallRecord, open_audit_trail
from checkrein.config import AuditSettings

SERVERS = {"files": ["read_file", "write_file", "list_dir"], "tickets": ["search", "create"],
           "sandbox": ["execute_command", "delete_file"], "kb": ["search", "add_document"], "web": ["fetch"]}
USERS = ["alice", "bob", "ci", "carol", "dave", "erin"]
RULES = ["analyzer.paths", "analyzer.shell", "deny:*delete*", "template.production", "analyzer.sql"]
CHROME_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _record(i: int, rnd: random.Random) -> CallRecord:
    server = rnd.choice(list(SERVERS))
    tool = rnd.choice(SERVERS[server])
    denied = rnd.random() < 0.12
    decision = ({"effect": "deny", "rule_id": rnd.choice(RULES), "reasons": [f"argument {i} is outside the policy"],
                 "risk": "high", "approval": None} if denied else
                {"effect": "allow", "rule_id": f"allow:{server}__*", "reasons": [], "risk": "low", "approval": None})
    return CallRecord(
        kind="tool", trace_id=f"{i // 8:032x}", span_id=f"{i:016x}", parent_span_id=f"{(i // 8) * 8:016x}" if i % 8 else None,
        session_id=f"session-{i // 40}", identity={"user": rnd.choice(USERS), "roles": ["dev"], "source": "token", "client": "bench"},
        model="model-x", server=server, tool=tool, exposed_name=f"{server}__{tool}", tool_digest="sha256:" + "ab" * 32,
        arguments={"path": f"/srv/data/file-{i}.txt", "query": "q" * rnd.randint(10, 200)}, decision=decision,
        outcome="denied" if denied else "ok", error_code="policy.denied" if denied else None,
        duration_ms=rnd.lognormvariate(1.5, 0.8),
        result=None if denied else {"content": [{"type": "text", "text": "result line " * 12}], "isError": False},
    )


def write_audit(directory: Path, n: int) -> float:
    """``n`` calls through the real trail; returns the seconds it took."""
    rnd = random.Random(7)

    async def run() -> None:
        trail = open_audit_trail(AuditSettings(dir=str(directory), checkpoint_every=1000), directory.parent)
        for i in range(n):
            while trail.counters["queue_depth"] > 20_000:
                await anyio.sleep(0.01)
            await trail.record_call(_record(i, rnd))
        await trail.aclose()

    started = time.monotonic()
    anyio.run(run)
    return time.monotonic() - started


def start_ui(directory: Path) -> tuple[subprocess.Popen[bytes], str]:
    proc = subprocess.Popen([sys.executable, "-m", "checkrein", "ui", "--audit", str(directory), "--port", "0", "--no-token"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ})
    assert proc.stderr is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        m = re.search(rb"on (http://127\.0\.0\.1:\d+)/", proc.stderr.readline())
        if m:
            return proc, m.group(1).decode()
    proc.kill()
    raise SystemExit("checkrein ui did not start")


_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fetch_ms(url: str) -> float:
    started = time.perf_counter()
    with _opener.open(url, timeout=60) as r:
        r.read()
        if r.status != 200:
            raise SystemExit(f"{url}: HTTP {r.status}")
    return (time.perf_counter() - started) * 1000


def pages(base: str, directory: Path) -> dict[str, str]:
    from checkrein.audit.query import EventFilter, query_events

    last = query_events(directory, EventFilter(calls_only=True), limit=1)[0]
    mid = query_events(directory, EventFilter(calls_only=True, before_seq=int(last["seq"]) // 2), limit=1)[0]
    return {
        "stylesheet (baseline)": f"{base}/static/ui.css",
        "event list, newest 50": f"{base}/",
        "denials": f"{base}/?outcome=denied",
        "server filter": f"{base}/?server=web",
        "identity filter": f"{base}/?user=erin",
        "server + identity + denied": f"{base}/?server=web&user=erin&outcome=denied",
        "tool glob": f"{base}/?tool=kb__*",
        "older page (middle of the log)": f"{base}/?before={mid['seq']}",
        "one event (with its trace)": f"{base}/event/{mid['seq']}",
        "trace": f"{base}/trace?id={mid['trace_id']}",
        "charts, whole log": f"{base}/charts",
        "live poll, nothing new": f"{base}/events.json?after={last['seq'] + 1000}",
    }


def wait_verified(base: str) -> float:
    """Wait until the view's first `verify` run is done (it competes for the CPU while it runs);
    returns the seconds it took."""
    started = time.monotonic()
    while time.monotonic() - started < 1800:
        with _opener.open(f"{base}/verify.json", timeout=60) as r:
            status = json.loads(r.read())
        if status["state"] != "pending" and not status["running"]:
            return time.monotonic() - started
        time.sleep(0.5)
    raise SystemExit("verify did not finish in 30 minutes")


def time_pages(urls: dict[str, str], rounds: int) -> dict[str, tuple[float, float]]:
    out = {}
    for name, url in urls.items():
        fetch_ms(url)  # warm: the first values/charts read of a process
        samples = sorted(fetch_ms(url) for _ in range(rounds))
        out[name] = (statistics.median(samples), samples[int(0.9 * (len(samples) - 1))])
    return out


def browser_loads(base: str, rounds: int) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    out = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=os.environ.get("CHECKREIN_CHROMIUM", "/usr/bin/chromium"), args=CHROME_ARGS)
        page = browser.new_page()
        for name, path in (("event list", "/"), ("denials", "/?outcome=denied"), ("charts", "/charts")):
            samples = []
            for _ in range(rounds + 1):
                page.goto(base + path, wait_until="load")
                timing: Any = page.evaluate("JSON.stringify(performance.getEntriesByType('navigation')[0])")
                samples.append(float(json.loads(timing)["loadEventEnd"]))
            out[name] = statistics.median(samples[1:])
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--small", type=int, default=1_000)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--audit", type=Path, default=None, help="Reuse (or create) the large log here.")
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="checkrein-ui-bench-"))
    try:
        big = args.audit or tmp / "big"
        if not (big / "index.sqlite").exists():
            print(f"writing {args.events:,} calls to {big} ... {write_audit(big, args.events):.0f} s", flush=True)
        small = tmp / "small"
        write_audit(small, args.small)
        size = sum(p.stat().st_size for p in big.glob("segment-*.jsonl")) + (big / "index.sqlite").stat().st_size
        results: dict[str, dict[str, tuple[float, float]]] = {}
        loads: dict[str, float] = {}
        verify_s = 0.0
        for label, d in (("big", big), ("small", small)):
            proc, base = start_ui(d)
            try:
                if label == "big":
                    verify_s = wait_verified(base)
                else:
                    wait_verified(base)
                results[label] = time_pages(pages(base, d), args.rounds)
                if label == "big" and not args.no_browser:
                    loads = browser_loads(base, args.rounds)
            finally:
                proc.terminate()
                proc.wait(timeout=30)
        print(f"web view page times: {args.events:,}-event log ({size / 1e6:.0f} MB with its index) vs "
              f"{args.small:,}-event log, median / p90 of {args.rounds}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
        floor = results["big"]["stylesheet (baseline)"][0]
        print(f"  {'page':<34} {'big ms':>8} {'p90':>7} {'small ms':>9} {'x small':>8} {'x floor':>8}")
        for name, (med, p90) in results["big"].items():
            s_med = results["small"][name][0]
            print(f"  {name:<34} {med:8.1f} {p90:7.1f} {s_med:9.1f} {med / s_med:8.2f} {med / floor:8.1f}")
        print(f"  (timed after the view's first `verify` of the big log finished: {verify_s:.0f} s at low priority)")
        if loads:
            print(f"Chromium page load (navigation start to load event end), median of {args.rounds}:")
            for name, ms in loads.items():
                print(f"  {name:<34} {ms:8.1f} ms")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
