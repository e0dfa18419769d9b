"""What a pause costs: the same per-call work timed back to back and after idle gaps.

    .venv/bin/python benchmarks/coldwake.py [--calls 400] [--gaps 0,0.5,2,4,10] [--busy 0|N]

A gateway does its work in short bursts: a call's steps, then a wait for the upstream or the
client; the audit writer, a batch every few milliseconds, then a wait. This measures how much
slower the same Python work runs when the thread has just slept (``time.sleep`` of each gap) than
when it runs back to back, for two pieces of the call path:

* ``audit event``: `EventFactory.call` of one echo call's `CallRecord` (redaction, canonical
  encodings, digests; what the audit writer does per event), with the policy's secret finder;
* ``decide``: the policy's decision on `benchmarks/decide.py`'s 400 B call with every analyzer
  on, warm (the verdict cache holds every value, as for a repeated call).

Each row is the mean thread CPU time per call (``time.thread_time``: waiting is not counted) and
its ratio to the back-to-back row of the same run. ``--busy N`` starts N processes that spin for
the length of the run, so no CPU goes idle during the gaps: what is left of the slowdown is the
other work evicting this thread's caches; what goes away was the CPU going idle (on a VM, the
host parks an idle vCPU, and it comes back cold). No network, no files.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import decide as bench_decide

from checkrein.audit import CallRecord
from checkrein.audit.event import EventFactory
from checkrein.audit.redact import Redactor
from checkrein.config import parse_config
from checkrein.policy import Identity, SessionState, ToolCall, compile_policy, decide
from checkrein.policy.analyzers import find_secrets
from checkrein.policy.analyzers.secrets import may_find


def echo_record() -> CallRecord:
    """The record the gate passes the trail for one allowed echo call (as `overhead.py` makes)."""
    return CallRecord(
        kind="tool",
        trace_id="4bf92f3577b34da6a3ce929d0e0e4736",
        span_id="00f067aa0ba902b7",
        parent_span_id=None,
        session_id="stdio-3f2a",
        identity={"user": "local", "roles": [], "source": "stdio", "client": "bench"},
        model=None,
        server="echo",
        tool="echo",
        exposed_name="echo__echo",
        tool_digest="sha256:" + "ab" * 32,
        arguments={"text": "hello"},
        decision={
            "effect": "allow",
            "rule_id": "allow:echo__echo",
            "reasons": ["allowed by policy rule 'echo__echo'"],
            "risk": "low",
            "approval": None,
        },  # fmt: skip
        outcome="ok",
        error_code=None,
        duration_ms=0.412,
        result={"content": [{"type": "text", "text": "hello"}], "isError": False},
        result_flags=(),
        args_scanned=True,
    )


def workloads() -> dict[str, Callable[[], Any]]:
    factory = EventFactory(
        Redactor(secret_finder=find_secrets, secret_prefilter=lambda t: may_find(t, None), max_chars=512)
    )
    record = echo_record()
    policy = compile_policy(parse_config(bench_decide.POLICY), bench_decide.catalog(10))
    call = ToolCall(Identity("alice", source="stdio"), "bench", "t", "s", "fs0__read_file", bench_decide.SMALL_ARGS,
                    server="fs0", tool="read_file")  # fmt: skip
    session = SessionState("bench")
    return {
        "audit event": lambda: factory.call(record, 1764700000.25),
        "decide": lambda: decide(policy, call, session, 0.0),
    }


def per_call(work: Callable[[], Any], gap_s: float, calls: int) -> float:
    """Mean thread CPU seconds of one ``work()``, each after sleeping ``gap_s`` (none when 0)."""
    total = 0.0
    for _ in range(calls):
        if gap_s:
            time.sleep(gap_s)
        t0 = time.thread_time()
        work()
        total += time.thread_time() - t0
    return total / calls


def _spin(stop: Any) -> None:
    while not stop.is_set():
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=400, help="calls per row")
    parser.add_argument("--gaps", default="0,0.5,2,4,10", help="idle gaps in ms (0: back to back)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; each row prints the median")
    parser.add_argument("--busy", type=int, default=0, help="spinning processes for the length of the run")
    args = parser.parse_args()
    gaps = [float(g) / 1000.0 for g in args.gaps.split(",")]
    if 0.0 not in gaps:
        gaps.insert(0, 0.0)
    works = workloads()
    for work in works.values():  # warm every cache, and the imports
        per_call(work, 0.0, 2000)
    stop = multiprocessing.Event()
    spinners = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True) for _ in range(args.busy)]
    for p in spinners:
        p.start()
    try:
        results: dict[tuple[str, float], list[float]] = {}
        for _ in range(args.rounds):  # rows alternate within a round, so drift hits all alike
            for name, work in works.items():
                for gap in gaps:
                    results.setdefault((name, gap), []).append(per_call(work, gap, args.calls))
    finally:
        stop.set()
        for p in spinners:
            p.join(timeout=5)
    cpus = os.cpu_count() or 1
    print(
        f"{args.rounds} rounds x {args.calls} calls per row; {args.busy} spinning process(es) on {cpus} CPUs"
    )
    print(f"{'work':14s} {'gap ms':>7s} {'us/call':>9s} {'vs back to back':>16s}")
    for name in works:
        base = statistics.median(results[(name, 0.0)])
        for gap in gaps:
            value = statistics.median(results[(name, gap)])
            print(f"{name:14s} {gap * 1000:7.1f} {value * 1e6:9.1f} {value / base:15.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
