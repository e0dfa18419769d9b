"""What the gateway's checks cost on real-sized text: each analyzer, the secret finders and the
injection detector on 4 KB of code, prose, a JSON listing and log lines.

    .venv/bin/python benchmarks/scan_text.py [--bytes 4096] [--rounds 3]
    .venv/bin/python benchmarks/scan_text.py --baseline main [--rounds 3]

Each figure is the best of 15 timed runs, in this thread's CPU time, of one call on one text
(a tool result or an argument of that size: a file read, a search, a log tail). ``--baseline REF``
runs the same measurements for a git ref's ``src/`` (extracted with `git archive`) and this tree
in alternating subprocesses, ``--rounds`` times each, and prints the medians and the ratio
this / REF per row: on a shared machine only ratios within one run mean anything.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def texts(size: int) -> dict[str, str]:
    def fill(unit: str) -> str:
        return "".join(unit.format(i=i) for i in range(size // 30 + 1))[:size]

    return {
        "code": fill("def handler_{i}(request: Request) -> Response:\n    value = request.args.get('key_{i}', default=None)\n    return Response(status=200, body=value)\n"),
        "prose": fill("The quarterly report for region {i} shows that revenue grew, with the strongest gains in the north. "),
        "json": fill('{{"name": "file-{i}.txt", "size": {i}7, "modified": "2026-11-30T10:00:00Z", "owner": "alice"}}, '),
        "logs": fill("2026-11-30 10:00:{i:02d} INFO worker-{i} request id={i}7919 path=/api/v1/items/{i} status=200 took={i}ms\n"),
    }


def best(fn: Callable[[], object], n: int = 15) -> float:
    fn()
    out = float("inf")
    for _ in range(n):
        t = time.thread_time_ns()
        fn()
        out = min(out, time.thread_time_ns() - t)
    return out / 1000


def measure(size: int) -> dict[str, float]:
    """Row name -> us (run in the tree on ``sys.path``)."""
    from checkrein.audit.secrets import find_builtin_secrets
    from checkrein.policy.analyzers import ScanContext, find_secrets, scan_arguments
    from checkrein.policy.analyzers.scan import CHECKS
    from checkrein.policy.injection import detect_injection

    rows: dict[str, float] = {}
    everything = ScanContext(enabled=frozenset(CHECKS))
    for kind, text in texts(size).items():
        for name, check in CHECKS.items():
            ctx = ScanContext(enabled=frozenset({name}))
            rows[f"{kind:5s} analyzer {name}"] = best(lambda check=check, ctx=ctx, text=text: check([text], "/text", None, ctx))
        rows[f"{kind:5s} scan_arguments (all analyzers)"] = best(lambda text=text: scan_arguments({"text": text}, everything))
        rows[f"{kind:5s} find_secrets"] = best(lambda text=text: find_secrets(text))
        rows[f"{kind:5s} audit built-in finder"] = best(lambda text=text: find_builtin_secrets(text))
        rows[f"{kind:5s} detect_injection"] = best(lambda text=text: detect_injection(text))
    return rows


def child(src: str, size: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--bytes", str(size)], env={**os.environ, "PYTHONPATH": src},
        capture_output=True, text=True, check=True,
    )
    return dict(json.loads(out.stdout))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--bytes", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", metavar="REF", help="compare with this git ref's src/ (alternating subprocesses)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.bytes)))
        return
    if not args.baseline:
        for name, us in measure(args.bytes).items():
            print(f"{name:42s} {us:9.1f} us")
        return
    with tempfile.TemporaryDirectory(prefix="checkrein-scan-base-") as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline, "src"], capture_output=True, check=True).stdout
        tar_path = Path(tmp) / "src.tar"
        tar_path.write_bytes(archive)
        with tarfile.open(tar_path) as tar:
            tar.extractall(tmp, filter="data")
        runs: dict[str, list[dict[str, float]]] = {"this": [], "base": []}
        for _ in range(args.rounds):
            runs["this"].append(child(str(ROOT / "src"), args.bytes))
            runs["base"].append(child(str(Path(tmp) / "src"), args.bytes))
    print(f"{args.bytes} B texts, best of 15 per run, median of {args.rounds} alternated runs; us of thread CPU")
    print(f"{'row':42s} {'this':>9s} {args.baseline[:9]:>9s} {'ratio':>7s}")
    for name in runs["this"][0]:
        this = statistics.median(r[name] for r in runs["this"])
        base = statistics.median(r[name] for r in runs["base"])
        print(f"{name:42s} {this:9.1f} {base:9.1f} {this / base:7.2f}")


if __name__ == "__main__":
    main()
