"""`decide` latency: p50/p99 for a typical ~400 B call and a 64 KB call, with 10 and 10,000 tools.

Run: `.venv/bin/python benchmarks/decide.py [--quick]`. Everything is in-process and synthetic (no
corpus, no network): a catalog of file, web, database and shell tools across many servers, a policy
with allow/deny globs, per-tool risks, argument constraints, and ALL analyzers on (the real
`scan_arguments`). Also reports the engine alone (analyzers off) and `compile_policy` time.

With analyzers on, each call is measured twice: **cold** (the policy's verdict cache is emptied
before every timed call, outside the timer: no value has been seen, every analyzer runs) and
**warm** (the same call repeated: every value is a cache hit). Agents repeat arguments, but a
gateway must also afford the first sight of each one, so both rows matter.

`--baseline REF` (a git ref, e.g. `main`) measures the 400 B call with all analyzers on, cold and
warm, for this tree and for REF's `src/` (extracted with `git archive` into a temporary directory)
in alternating subprocesses, `--rounds` times each, and prints the medians and their ratios (a
tree without a verdict cache measures the same thing twice): on a busy machine only a comparison
within one run means anything. The same run times the result-side injection detector
(`detect_injection`) on benign results: a 5-byte text, 1 KB of prose, a 4 KB JSON listing and
2 KB of code (`--detector` prints only those rows).
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from checkrein.canonical import canonical_json
from checkrein.catalog.model import ToolDefinition
from checkrein.config import parse_config
from checkrein.policy import Identity, SessionState, ToolCall, compile_policy, decide

POLICY = """
[[servers]]
name = "fs0"
command = "fs"

[policy]
allow = ["fs*__read_*", "fs*__list_*", "fs*__write_*", "web*__fetch_*", "db*__query_*"]
deny = ["*__delete_*", "sh*__*"]
path_roots = ["/workspace/data"]

[policy.urls]
allowed_hosts = ["api.example.com", "*.example.org"]

[policy.tools."fs*__*"]
risk = "low"

[policy.tools."web*__*"]
risk = "medium"

[policy.tools."db*__*"]
risk = "medium"

[policy.tools."fs0__read_file".args.path]
kind = "path"
max_length = 4096

[policy.tools."fs0__read_file".args.encoding]
enum = ["utf-8", "latin-1"]

[policy.tools."fs0__read_file".args.limit]
minimum = 1
maximum = 1000000

[policy.tools."fs0__write_file".args.path]
kind = "path"
"""

ANALYZERS_OFF = """
[policy.analyzers]
paths = "off"
urls = "off"
shell = "off"
sql = "off"
secrets = "off"
"""

READ_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "File to read"},
        "encoding": {"type": "string"},
        "offset": {"type": "integer", "minimum": 0},
        "limit": {"type": "integer", "minimum": 1},
        "follow_symlinks": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "note": {"type": "string"},
    },
    "required": ["path"],
    "additionalProperties": False,
}
WRITE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}, "append": {"type": "boolean"}},
    "required": ["path", "content"],
    "additionalProperties": False,
}
KINDS = [
    ("fs", "read_file", READ_SCHEMA),
    ("fs", "write_file", WRITE_SCHEMA),
    ("fs", "list_dir", {"type": "object", "properties": {"path": {"type": "string"}}}),
    ("fs", "delete_file", {"type": "object", "properties": {"path": {"type": "string"}}}),
    ("web", "fetch_url", {"type": "object", "properties": {"url": {"type": "string", "format": "uri"}}}),
    ("db", "query_sql", {"type": "object", "properties": {"sql": {"type": "string"}}}),
    ("sh", "run_command", {"type": "object", "properties": {"command": {"type": "string"}}}),
    ("fs", "read_meta", {"type": "object", "properties": {"path": {"type": "string"}, "fields": {"type": "array"}}}),
    ("web", "fetch_page", {"type": "object", "properties": {"url": {"type": "string"}}}),
    ("db", "query_table", {"type": "object", "properties": {"table": {"type": "string"}}}),
]

SMALL_ARGS: dict[str, Any] = {
    "path": "/workspace/data/reports/2026/q3/revenue-by-region.csv",
    "encoding": "utf-8",
    "offset": 0,
    "limit": 20000,
    "follow_symlinks": False,
    "tags": ["finance", "quarterly", "emea", "apac", "draft"],
    "note": "Summarise the regional revenue for the board deck; keep the numbers exactly as they are in the "
    "file. Ask before reading anything outside the reports folder, and say which rows you skipped.",
}


def _prose(size: int) -> str:
    words = (
        "the quarterly report lists revenue by region and product line with notes on growth churn and "
        "pipeline; figures are in thousands of euros and were reconciled against the ledger on friday. "
    )
    text = (words * (size // len(words) + 1))[:size]
    return text


_PROSE = (
    "The quarterly report lists revenue by region and product line, with notes on growth, churn and pipeline. "
    "Figures are in thousands of euros and were reconciled against the ledger on Friday. Please review the EMEA "
    "numbers before the board meeting. "
)
_CODE = (
    "def handler(event):\n    # parse the request and return the rows\n"
    "    rows = db.query('select id, name from users where id = ?', event['id'])\n    return {'status': 200, 'rows': rows}\n"
)
RESULTS: dict[str, str] = {
    "text 5 B": "hello",
    "prose 1 KB": (_PROSE * 6)[:1024],
    "JSON listing 4 KB": json.dumps(
        [{"name": f"report-{i}.csv", "size": 1024 * i, "modified": "2026-11-30T10:00:00Z", "type": "file"} for i in range(45)]
    )[:4096],
    "code 2 KB": (_CODE * 12)[:2048],
}
"""Benign tool results for the injection detector rows (synthetic: no corpus needed)."""


def detector_rows(clock: Callable[[], int], quick: bool) -> list[dict[str, Any]]:
    """p50/p99 of `detect_injection` on each of `RESULTS` (all benign: nothing is flagged)."""
    from checkrein.policy.injection import detect_injection

    rows: list[dict[str, Any]] = []
    for label, text in RESULTS.items():
        iters = (300 if quick else 3000) if len(text) < 100 else (40 if quick else 400)
        p50, p99 = measure(functools.partial(detect_injection, text), iters, clock)
        flagged = bool(detect_injection(text))
        rows.append({"cache": "detector", "call": label, "effect": "flag" if flagged else "clean", "p50_us": round(p50, 1), "p99_us": round(p99, 1)})
    return rows


def catalog(n: int) -> dict[str, ToolDefinition]:
    tools: dict[str, ToolDefinition] = {}
    i = 0
    while len(tools) < n:
        for prefix, name, schema in KINDS:
            server = f"{prefix}{i}"
            tools[f"{server}__{name}"] = ToolDefinition(server, name, f"{name} on {server}", schema)
            if len(tools) >= n:
                break
        i += 1
    return tools


def measure(
    fn: Callable[[], object], iterations: int, clock: Callable[[], int], before: Callable[[], None] | None = None
) -> tuple[float, float]:
    """p50 and p99 in microseconds of ``fn``; ``before`` runs ahead of every call, outside the timer."""
    for _ in range(min(200, iterations)):
        if before is not None:
            before()
        fn()
    samples: list[float] = []
    gc.disable()
    try:
        for _ in range(iterations):
            if before is not None:
                before()
            t0 = clock()
            fn()
            samples.append((clock() - t0) / 1000.0)
    finally:
        gc.enable()
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.99))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="fewer iterations")
    ap.add_argument("--json", action="store_true", help="print JSON rows")
    ap.add_argument(
        "--wall", action="store_true", help="time with the wall clock (default: this thread's CPU time, robust on a busy machine)"
    )
    ap.add_argument("--baseline", metavar="REF", help="compare the 400 B call and the detector rows with this git ref's src/ (alternating subprocesses; with --detector only the detector rows)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds per tree with --baseline")
    ap.add_argument("--detector", action="store_true", help="only the injection detector rows")
    ap.add_argument("--small-only", action="store_true", help=argparse.SUPPRESS)
    ns = ap.parse_args(argv)
    if ns.baseline:
        return compare(ns.baseline, ns.rounds, ns.wall, detector_only=ns.detector)
    small_n, big_n = (2000, 30) if ns.quick else (20000, 300)
    clock = time.perf_counter_ns if ns.wall else time.thread_time_ns
    if ns.detector:
        for r in detector_rows(clock, ns.quick):
            print(json.dumps(r) if ns.json else f"detector  {r['call']:<18} {r['effect']:<6} p50 {r['p50_us']:>9} us  p99 {r['p99_us']:>9} us")
        return 0

    big_args = {"path": "/workspace/data/notes/board.txt", "content": _prose(64 * 1024 - 60), "append": False}
    sizes = {"400 B": len(canonical_json(SMALL_ARGS)), "64 KB": len(canonical_json(big_args))}
    who = Identity("alice", source="stdio")
    rows: list[dict[str, Any]] = []
    for n in (10,) if ns.small_only else (10, 10_000):
        tools = catalog(n)
        for analyzers in ("all on",) if ns.small_only else ("all on", "off"):
            config = parse_config(POLICY + (ANALYZERS_OFF if analyzers == "off" else ""))
            t0 = time.perf_counter()
            policy = compile_policy(config, tools)
            compile_ms = (time.perf_counter() - t0) * 1000
            if policy.analyzers_missing:
                print(f"analyzers unavailable: {policy.analyzers_missing}", file=sys.stderr)
                return 1
            session = SessionState("bench")
            cases = [("400 B", "fs0__read_file", SMALL_ARGS, small_n), ("64 KB", "fs0__write_file", big_args, big_n)]
            for label, exposed, args, iters in cases[:1] if ns.small_only else cases:
                call = ToolCall(who, "bench", "t", "s", exposed, args, server="fs0", tool=exposed.split("__")[1])
                d = decide(policy, call, session, 0.0)
                # A tree without the verdict cache (`--baseline` of an older ref) measures cold twice.
                cache = getattr(policy, "verdicts", None)
                modes: list[tuple[str, Callable[[], None] | None]] = (
                    [("cold", cache.clear if cache is not None else None), ("warm", None)] if analyzers == "all on" else [("-", None)]
                )
                for mode, before in modes:
                    p50, p99 = measure(functools.partial(decide, policy, call, session, 0.0), iters, clock, before)
                    rows.append(
                        {
                            "tools": n,
                            "analyzers": analyzers,
                            "cache": mode,
                            "call": f"{label} ({sizes[label]} B)",
                            "effect": d.effect,
                            "p50_us": round(p50, 1),
                            "p99_us": round(p99, 1),
                            "compile_ms": round(compile_ms, 1),
                        }
                    )
    detector = detector_rows(clock, ns.quick)
    if ns.json:
        for r in rows + detector:
            print(json.dumps(r))
        return 0
    for r in detector:
        rows.append({"tools": "-", "analyzers": "injection", "compile_ms": "-", **r})
    print(f"{'tools':>6}  {'analyzers':<9}  {'cache':<5}  {'call':<16}  {'effect':<6}  {'p50 us':>8}  {'p99 us':>8}  {'compile ms':>10}")
    for r in rows:
        print(
            f"{r['tools']:>6}  {r['analyzers']:<9}  {r['cache']:<5}  {r['call']:<16}  {r['effect']:<6}  "
            f"{r['p50_us']:>8}  {r['p99_us']:>8}  {r['compile_ms']:>10}"
        )
    return 0


def compare(ref: str, rounds: int, wall: bool, detector_only: bool = False) -> int:
    """p50 of the 400 B call (10 tools, analyzers on) and the detector rows for this tree and for ``ref``,
    alternating (only the detector rows with ``detector_only``)."""
    import subprocess
    import tarfile
    import tempfile
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    here = repo / "src"
    with tempfile.TemporaryDirectory(prefix="checkrein-baseline-") as tmp:
        archive = subprocess.run(["git", "-C", str(repo), "archive", ref, "src"], capture_output=True, check=False)
        if archive.returncode != 0:
            print(f"cannot read {ref}: {archive.stderr.decode(errors='replace').strip()}", file=sys.stderr)
            return 2
        tar_path = Path(tmp) / "src.tar"
        tar_path.write_bytes(archive.stdout)
        with tarfile.open(tar_path) as tar:
            tar.extractall(tmp, filter="data")
        trees = {"this tree": here, ref: Path(tmp) / "src"}
        p50s: dict[tuple[str, str], list[float]] = {}
        p99s: dict[tuple[str, str], list[float]] = {}
        for _ in range(rounds):
            for name, src in trees.items():
                cmd = [sys.executable, __file__, "--json", "--detector" if detector_only else "--small-only"] + (["--wall"] if wall else [])
                out = subprocess.run(cmd, capture_output=True, text=True, env={**__import__("os").environ, "PYTHONPATH": str(src)}, check=False)
                rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
                if len(rows) < 2:
                    print(f"{name}: no result ({out.stderr.strip()[:300]})", file=sys.stderr)
                    return 1
                for r in rows:
                    row = r["cache"] if r["cache"] != "detector" else f"detector {r['call']}"
                    p50s.setdefault((name, row), []).append(r["p50_us"])
                    p99s.setdefault((name, row), []).append(r["p99_us"])
    load = " ".join(open("/proc/loadavg").read().split()[:3]) if Path("/proc/loadavg").exists() else "?"
    print(f"decide, 400 B call, 10 tools, analyzers on, and detect_injection on benign results ({rounds} alternating rounds, {'wall' if wall else 'CPU'} time; load average at the end {load}):")
    print(f"  {'tree':<12} {'row':<28} {'p50 median':>10}  {'p99 median':>10}   p50 rounds")
    for (name, row), values in sorted(p50s.items(), key=lambda kv: (kv[0][1], kv[0][0] != "this tree")):
        print(
            f"  {name:<12} {row:<28} {statistics.median(values):8.1f} us {statistics.median(p99s[(name, row)]):8.1f} us   "
            + ", ".join(f"{v:.1f}" for v in values)
        )
    for row in sorted({row for _, row in p50s}):
        if (ref, row) not in p50s or ("this tree", row) not in p50s:
            continue
        base_row = "cold" if row == "warm" else row
        mine, base = statistics.median(p50s[("this tree", row)]), statistics.median(p50s[(ref, base_row)])
        print(f"  ratio p50 this {row} / {ref} {base_row}: {mine / base:.3f}")
    return 0

if __name__ == "__main__":
    sys.exit(main())
