"""Result inspection cost per result: the gate's view -> inspect -> apply, in process.

    .venv/bin/python benchmarks/inspection.py [--rounds 7] [--baseline-src ../base/src]

Times ``view_of(result)``, ``DefaultInspector.inspect(call, view)`` and
``apply_inspection(result, view, inspection)`` (default ``[policy.results]``) on SDK results: a
5-byte text, 10 KB of prose, and (when the code under test knows them) other content kinds. CPU
time of this thread, p50 over many calls per round. ``--baseline-src`` runs the same measurement
on another source tree (e.g. a checkout of main before a change) in a subprocess, alternating
rounds with this tree, and prints the ratio of the two: same machine, same load, same run.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import mcp.types as types

PROSE = (
    "The quarterly report shows revenue up four percent over the last quarter, driven by the new "
    "subscription plans and lower churn in the enterprise segment. Support tickets fell after the "
    "onboarding guide was rewritten, and the median first response time is now under two hours. "
    "Next quarter the team plans to migrate the billing service, retire the legacy export job and "
    "publish the public roadmap. Risks: a slower hiring pipeline and the vendor contract renewal.\n"
)


def results() -> dict[str, Any]:
    text_10k = (PROSE * (10_240 // len(PROSE) + 1))[:10_240]
    out: dict[str, Any] = {
        "text 5 B": types.CallToolResult(content=[types.TextContent(type="text", text="hello")]),
        "text 10 KB": types.CallToolResult(content=[types.TextContent(type="text", text=text_10k)]),
        "text + structured (20 keys)": types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps({f"field_{i}": f"value {i}" for i in range(20)}))],
            structured_content={f"field_{i}": f"value {i}" for i in range(20)},
        ),
        "3 text blocks + link": types.CallToolResult(
            content=[
                types.TextContent(type="text", text=PROSE),
                types.TextContent(type="text", text=PROSE),
                types.ResourceLink(type="resource_link", name="report", uri="file:///r.txt", description="The report."),
                types.TextContent(type="text", text=PROSE),
            ]
        ),
        "image 100 KB": types.CallToolResult(
            content=[types.ImageContent(type="image", data=base64.b64encode(b"\x89PNG\r\n\x1a\n" + os.urandom(100_000)).decode(), mime_type="image/png")]
        ),
    }
    return out


def measure(rounds_per_call: int, names: list[str] | None) -> dict[str, float]:
    """p50 microseconds per result, for each case this tree can run."""
    from checkrein.config.policy import ResultSettings
    from checkrein.gate.result_view import apply_inspection, view_of
    from checkrein.policy import Identity, ToolCall
    from checkrein.policy.inspect import DefaultInspector

    call = ToolCall(Identity("bench"), "s", "t", "p", "bench__tool", {}, "bench", "tool")
    inspector = DefaultInspector(ResultSettings())
    out: dict[str, float] = {}
    for name, result in results().items():
        if names is not None and name not in names:
            continue

        def once(r: Any = result) -> None:
            view = view_of(r)
            apply_inspection(r, view, inspector.inspect(call, view))

        n = max(5, rounds_per_call // (1 + len(json.dumps(result.model_dump(mode="json"))) // 2000))
        out[name] = _p50(once, n)
    return out


def _p50(fn: Callable[[], None], n: int) -> float:
    for _ in range(max(3, n // 10)):
        fn()
    times = []
    for _ in range(n):
        t = time.thread_time_ns()
        fn()
        times.append((time.thread_time_ns() - t) / 1000.0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000, help="calls per case per round (fewer for large results)")
    parser.add_argument("--baseline-src", help="source tree to compare with (its src/ directory)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--names", help=argparse.SUPPRESS)
    args = parser.parse_args()
    names = json.loads(args.names) if args.names else None
    if args.child:
        print(json.dumps(measure(args.calls, names)))
        return
    mine: dict[str, list[float]] = {}
    base: dict[str, list[float]] = {}
    for r in range(args.rounds):
        for which in (("base", "mine") if r % 2 else ("mine", "base")):
            if which == "base" and not args.baseline_src:
                continue
            src = args.baseline_src if which == "base" else os.path.join(os.path.dirname(__file__), "..", "src")
            env = {**os.environ, "PYTHONPATH": os.path.abspath(src)}
            cmd = [sys.executable, __file__, "--child", "--calls", str(args.calls)]
            got = json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout)
            for k, v in got.items():
                (base if which == "base" else mine).setdefault(k, []).append(v)
    print(f"{args.rounds} rounds; p50 CPU us per result (median over rounds): view_of + inspect + apply_inspection")
    print(f"{'result':<30} {'this tree':>10}" + (f" {'baseline':>10} {'ratio':>6}" if base else ""))
    for k, vs in mine.items():
        line = f"{k:<30} {statistics.median(vs):10.1f}"
        if k in base:
            b = statistics.median(base[k])
            line += f" {b:10.1f} {statistics.median(vs) / b:6.2f}x"
        elif base:
            line += f" {'-':>10} {'-':>6}"
        print(line)


if __name__ == "__main__":
    main()
