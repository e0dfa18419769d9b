"""Audit trail throughput: events/s into JSONL + SQLite, batch and durable, against baselines.

    .venv/bin/python benchmarks/audit.py [--events 50000] [--durable-events 4000] [--rounds 3]
    .venv/bin/python benchmarks/audit.py --baseline main [--events 20000] [--rounds 3]

``--baseline REF`` runs the trail rows (batch with and without SQLite, durable sequential and
concurrent) for this tree and for a git ref's ``src/`` in alternating subprocesses and prints
both and their ratio (the same records: the ref gets ``args_scanned`` only if it knows it).

Measured in one run, each best of ``--rounds`` (this is a shared 2-core machine; the best round is
the least disturbed one):

* baseline JSONL: ``json.dumps`` of a pre-built event of the same shape + ``write``, one fsync per
  4096 events (no redaction, no hashing, no index);
* baseline SQLite: ``executemany`` of pre-built rows into the same indexed table, one transaction;
* trail batch (with / without the SQLite index): ``record_call`` for every record from one task,
  timed until ``aclose`` returns (everything redacted, hashed, chained, written, fsynced, indexed);
  the trail is opened as the gateway opens it, with the policy's secret finder (``find_secrets``)
  that ``build_gate`` injects, and once with only the built-in finder to show what that costs;
  each record carries what the gate passes from ``decide`` (the secrets analyzer's pointers and
  ``args_scanned``), and once without (the trail then scans the arguments again itself);
* trail durable: one sequential caller, and ``--concurrency`` tasks each awaiting ``record_call``,
  each with the default group-commit window and with ``group_commit_ms = 0`` (fsyncs per event);
* added p50 of a gateway call with auditing on vs off, when ``checkrein.gate`` can build a gate.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from checkrein.audit import CallRecord, open_audit_trail
from checkrein.audit.secrets import SecretFinder
from checkrein.audit.sqlite_index import _INSERT, _SCHEMA
from checkrein.config import AuditSettings
from checkrein.policy.analyzers import ScanContext, find_secrets, scan_arguments
from checkrein.policy.analyzers.secrets import may_find

# What `default_audit` passes with the finder (a tree from before the prefilter has no such parameter).
SHIPPED_PREFILTER: dict[str, Any] = (
    {"secret_prefilter": lambda text: may_find(text, None)}
    if "secret_prefilter" in inspect.signature(open_audit_trail).parameters else {}
)
SECRET_EVERY = 20  # one record in 20 carries a credential, so redaction work is realistic


def policy_view(args: dict[str, Any]) -> tuple[tuple[str, ...], bool]:
    """(redactions, args_scanned) as the gate passes them: the policy's secrets analyzer run
    over the arguments (`decide` with analyzers on does exactly this scan)."""
    raw = scan_arguments(args, ScanContext(enabled=frozenset({"secrets"})))
    pointers = tuple(dict.fromkeys(f.path for f in raw if f.analyzer == "secrets"))
    return pointers, not any(f.analyzer == "scan" for f in raw)


def make_records(n: int, *, scanned: bool = True) -> list[CallRecord]:
    """``scanned`` False: records without the policy's findings (the audit scans everything)."""
    out = []
    known = {f.name for f in dataclasses.fields(CallRecord)}
    scanned = scanned and "args_scanned" in known  # an older tree (--baseline) has no such field
    for i in range(n):
        args: dict[str, Any] = {"path": f"/srv/data/project/file-{i}.txt", "mode": "read", "limit": 4096}
        text = f"line one of file {i}\nline two with some more words to make a realistic result\n" * 2
        if i % SECRET_EVERY == 0:
            args["env"] = {"AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE", "password": "hunter2hunter2"}
        out.append(CallRecord(
            kind="tool", trace_id=f"{i:032x}", span_id=f"{i:016x}", parent_span_id=None, session_id=f"s{i % 8}",
            identity={"user": "alice", "roles": ["dev"], "source": "stdio", "client": "claude-code"},
            model="model-x", server="files", tool="read_file", exposed_name="files__read_file",
            tool_digest="sha256:" + "ab" * 32, arguments=args,
            # the reason the policy gives for every allowed call (the gate always passes one)
            decision={"effect": "allow", "rule_id": "default-allow", "reasons": ["files__read_file matches allow rule 'files__*'"],
                      "risk": "low", "approval": None},
            outcome="ok", error_code=None, duration_ms=1.25,
            result={"content": [{"type": "text", "text": text}], "isError": False},
            **({"redactions": (view := policy_view(args))[0], "args_scanned": view[1]} if scanned else {}),
        ))
    return out


def best(rates: list[float]) -> float:
    return max(rates)


def baseline_jsonl(directory: Path, sample: dict[str, Any], n: int) -> tuple[float, float]:
    """(events/s, process CPU µs per event)."""
    path = directory / "plain.jsonl"
    events = []
    for i in range(n):
        e = dict(sample)
        e["seq"] = i
        events.append(e)
    t0, c0 = time.perf_counter(), time.process_time()
    with path.open("wb") as f:
        for i, e in enumerate(events):
            f.write(json.dumps(e, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")
            if i % 4096 == 4095:
                f.flush()
                os.fsync(f.fileno())
        f.flush()
        os.fsync(f.fileno())
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    path.unlink()
    return n / dt, cpu / n * 1e6


def baseline_sqlite(directory: Path, line: str, n: int) -> float:
    path = directory / "raw.sqlite"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(_SCHEMA)
    size = len(line.encode()) + 1
    rows = [(i, "call", "2026-11-30T00:00:00.000000Z", f"s{i % 8}", f"{i:032x}", "read_file", "files__read_file",
             "files", "alice", "ok", "default-allow", 1.25, "ab" * 32, 1, i * size, size - 1) for i in range(n)]
    t0 = time.perf_counter()
    db.execute("BEGIN")
    db.executemany(_INSERT, rows)
    db.execute("COMMIT")
    dt = time.perf_counter() - t0
    db.close()
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    return n / dt


async def trail_batch(
    directory: Path, records: list[CallRecord], *, sqlite: bool, finder: SecretFinder | None = find_secrets
) -> tuple[float, float, float]:
    """(events/s until closed, p50 µs of record_call on the call path, process CPU µs per event:
    every thread's, so less disturbed by other jobs than the wall-clock rate)."""
    shutil.rmtree(directory, ignore_errors=True)
    trail = open_audit_trail(AuditSettings(dir=str(directory), sqlite=sqlite, max_queue=len(records) + 10), directory.parent,
                             secret_finder=finder, **(SHIPPED_PREFILTER if finder is find_secrets else {}))
    lat: list[int] = []
    perf = time.perf_counter_ns
    t0, c0 = time.perf_counter(), time.process_time()
    for r in records:
        a = perf()
        await trail.record_call(r)
        lat.append(perf() - a)
    await trail.aclose()
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    return len(records) / dt, statistics.median(lat) / 1000, cpu / len(records) * 1e6


async def trail_durable(
    directory: Path, records: list[CallRecord], concurrency: int, group_commit_ms: float | None = None
) -> tuple[float, float, float, float]:
    """(events/s, p50 ms, p99 ms of record_call, events per fsync) with ``concurrency`` callers in
    flight; ``group_commit_ms`` None is the default window."""
    shutil.rmtree(directory, ignore_errors=True)
    window = {} if group_commit_ms is None else {"group_commit_ms": group_commit_ms}
    trail = open_audit_trail(AuditSettings(dir=str(directory), durability="durable", **window), directory.parent,
                             secret_finder=find_secrets, **SHIPPED_PREFILTER)
    fsyncs0 = trail.counters["fsyncs"]
    lat: list[float] = []
    it = iter(records)

    async def caller() -> None:
        for r in it:
            a = time.perf_counter()
            await trail.record_call(r)
            lat.append(time.perf_counter() - a)

    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(concurrency):
            tg.start_soon(caller)
    dt = time.perf_counter() - t0
    per_fsync = len(records) / max(1, trail.counters["fsyncs"] - fsyncs0)
    await trail.aclose()
    lat.sort()
    return len(records) / dt, lat[len(lat) // 2] * 1000, lat[int(len(lat) * 0.99)] * 1000, per_fsync


async def gateway_overhead(directory: Path, calls: int) -> str:
    """Added p50 of `Gate.call_tool` with the trail on vs the gate's no-op trail."""
    try:
        from checkrein.config import config_from_mapping
        from checkrein.gate.factory import build_gate
        from checkrein.policy import Identity, ToolCall
        from checkrein.testing.memory_upstream import MemoryUpstream
    except ImportError as exc:
        return f"skipped: checkrein.gate cannot be imported ({exc})"

    async def p50(mode: str) -> float:
        audit_on = mode != "off"
        work = directory / mode
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        durability = "durable" if mode == "durable" else "batch"
        config = config_from_mapping({"audit": {"dir": "audit", "durability": durability}, "policy": {"allow": ["files__read"]}},
                                     source=str(work / "checkrein.toml"))
        up = MemoryUpstream("files")
        up.add_tool("read", lambda args: f"contents of {args.get('path')}", annotations={"readOnlyHint": True})
        trail = open_audit_trail(config.audit, work) if audit_on else None
        lat: list[float] = []
        async with build_gate(config, upstreams=[up], audit=trail) as gate:
            sep = config.gateway.separator
            for i in range(calls):
                call = ToolCall(identity=Identity("bench"), session_id="s", trace_id=f"t{i}", span_id=f"p{i}",
                                exposed_name=f"files{sep}read", arguments={"path": f"/tmp/{i}"}, server="files", tool="read")
                a = time.perf_counter()
                result = await gate.call_tool(call)
                lat.append(time.perf_counter() - a)
                if result.is_error:
                    raise RuntimeError(f"the benchmark call was refused: {result.content}")
        if trail is not None:
            await trail.aclose()
        return statistics.median(lat) * 1e6

    try:
        runs: dict[str, list[float]] = {"off": [], "batch": [], "durable": []}
        for _ in range(3):
            for mode in runs:
                runs[mode].append(await p50(mode))
    except Exception as exc:
        return f"skipped: could not build a gate ({type(exc).__name__}: {str(exc)[:120]})"
    off, on, durable = (min(v) for v in runs.values())
    return (f"gate.call_tool p50: audit off {off:.0f} µs, batch {on:.0f} µs (added {on - off:.0f} µs), "
            f"durable {durable:.0f} µs (added {durable - off:.0f} µs); {calls} sequential calls, best of 3")


def trail_rows(opts: argparse.Namespace) -> dict[str, float]:
    """One round of the rows `compare` puts side by side."""
    records = make_records(opts.events)
    tmp = Path(tempfile.mkdtemp(prefix="checkrein-bench-audit-"))
    try:
        out: dict[str, float] = {}
        out["batch"], _, out["batch_cpu_us"] = anyio.run(lambda: trail_batch(tmp / "b", records, sqlite=True))
        out["nosql"], _, out["nosql_cpu_us"] = anyio.run(lambda: trail_batch(tmp / "n", records, sqlite=False))
        few = records[: opts.durable_events]
        out["durable_1"] = anyio.run(trail_durable, tmp / "d", few[: max(1, len(few) // 8)], 1, None)[0]
        out[f"durable_{opts.concurrency}"] = anyio.run(trail_durable, tmp / "d", few, opts.concurrency, None)[0]
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def compare(opts: argparse.Namespace) -> int:
    """`trail_rows` for this tree and ``opts.baseline``, alternating; medians and ratios."""
    import subprocess
    import tarfile

    repo = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="checkrein-baseline-") as tmp:
        archive = subprocess.run(["git", "-C", str(repo), "archive", opts.baseline, "src"], capture_output=True, check=False)
        if archive.returncode != 0:
            print(f"cannot read {opts.baseline}: {archive.stderr.decode(errors='replace').strip()}", file=sys.stderr)
            return 2
        (Path(tmp) / "src.tar").write_bytes(archive.stdout)
        with tarfile.open(Path(tmp) / "src.tar") as tar:
            tar.extractall(tmp, filter="data")
        trees = {"this tree": repo / "src", opts.baseline: Path(tmp) / "src"}
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        args = ["--trail-only", "--events", str(opts.events), "--durable-events", str(opts.durable_events),
                "--concurrency", str(opts.concurrency)]
        for rnd in range(opts.rounds):
            for name in (list(trees) if rnd % 2 == 0 else list(trees)[::-1]):
                proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=False,
                                      env={**os.environ, "PYTHONPATH": str(trees[name])})
                if proc.returncode != 0 or not proc.stdout.strip():
                    print(f"{name}: no result ({proc.stderr.strip()[-300:]})", file=sys.stderr)
                    return 1
                runs[name].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    mine, base = runs["this tree"], runs[opts.baseline]
    print(f"audit trail, this tree vs {opts.baseline}: {opts.events} events, {opts.rounds} alternating rounds, "
          f"medians, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    for key in mine[0]:
        a, b = statistics.median(r[key] for r in mine), statistics.median(r[key] for r in base)
        unit = "µs CPU/event" if key.endswith("_cpu_us") else "events/s"
        print(f"  {key:<14} this tree {a:>10,.1f}  {opts.baseline} {b:>10,.1f} {unit:<13} ratio {a / b:.2f}")
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=50_000)
    ap.add_argument("--durable-events", type=int, default=4_000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--gate-calls", type=int, default=2_000)
    ap.add_argument("--json", type=Path, default=None, help="Also write the figures here.")
    ap.add_argument("--baseline", metavar="REF", help="compare the trail rows with this git ref's src/ (alternating subprocesses)")
    ap.add_argument("--trail-only", action="store_true", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    for name in ("events", "durable_events", "concurrency", "rounds", "gate_calls"):
        if getattr(opts, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    if opts.baseline:
        sys.exit(compare(opts))
    if opts.trail_only:
        print(json.dumps(trail_rows(opts)))
        return

    records = make_records(opts.events)
    tmp = Path(tempfile.mkdtemp(prefix="checkrein-bench-audit-"))
    results: dict[str, Any] = {"events": opts.events, "cpus": os.cpu_count(), "python": sys.version.split()[0]}
    try:
        # One real stored line gives the baselines the same shape and size as the product's.
        anyio.run(lambda: trail_batch(tmp / "probe", make_records(2)[1:], sqlite=False))
        line = next(x for x in (tmp / "probe" / "segment-000001.jsonl").read_text().splitlines() if '"type":"call"' in x)
        sample = json.loads(line)
        results["event_bytes"] = len(line) + 1

        unscanned = make_records(opts.events, scanned=False)
        keys = ("batch", "batch_nosqlite", "batch_builtin", "batch_unscanned")
        rows: dict[str, list[float]] = {k: [] for k in ("jsonl", "sqlite", *keys)}
        cpu: dict[str, list[float]] = {k: [] for k in ("jsonl", *keys)}
        call_path: list[float] = []
        for _ in range(opts.rounds):
            rate, cpu_us = baseline_jsonl(tmp, sample, opts.events)
            rows["jsonl"].append(rate)
            cpu["jsonl"].append(cpu_us)
            rows["sqlite"].append(baseline_sqlite(tmp, line, opts.events))
            rate, p50, cpu_us = anyio.run(lambda: trail_batch(tmp / "batch", records, sqlite=True))
            rows["batch"].append(rate)
            cpu["batch"].append(cpu_us)
            call_path.append(p50)
            rate, _, cpu_us = anyio.run(lambda: trail_batch(tmp / "nosql", records, sqlite=False))
            rows["batch_nosqlite"].append(rate)
            cpu["batch_nosqlite"].append(cpu_us)
            rate, _, cpu_us = anyio.run(lambda: trail_batch(tmp / "builtin", records, sqlite=True, finder=None))
            rows["batch_builtin"].append(rate)
            cpu["batch_builtin"].append(cpu_us)
            rate, _, cpu_us = anyio.run(lambda: trail_batch(tmp / "unscanned", unscanned, sqlite=True))
            rows["batch_unscanned"].append(rate)
            cpu["batch_unscanned"].append(cpu_us)
        durable_runs: dict[str, list[tuple[float, float, float, float]]] = {}
        few = records[: opts.durable_events]
        for rnd in range(opts.rounds):  # alternating: window on / off, sequential / concurrent
            cases = [(1, None), (1, 0.0), (opts.concurrency, None), (opts.concurrency, 0.0)]
            for callers, window in (cases if rnd % 2 == 0 else cases[::-1]):
                key = f"{callers}/{'default' if window is None else 'off'}"
                durable_runs.setdefault(key, []).append(
                    anyio.run(trail_durable, tmp / "durable", few[: max(1, len(few) // (8 if callers == 1 else 1))], callers, window))
        gate = anyio.run(gateway_overhead, tmp / "gate", opts.gate_calls)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def show(name: str, value: float, note: str = "") -> None:
        print(f"  {name:<46} {value:>10,.0f} events/s {note}")

    print(f"audit benchmark: {opts.events} call events of {results['event_bytes']} bytes, best of {opts.rounds}, "
          f"{results['cpus']} CPUs, Python {results['python']}")
    def cpu_note(key: str) -> str:
        return f"({min(cpu[key]):.1f} µs CPU/event)"

    show("baseline: plain JSONL append (dumps+write)", best(rows["jsonl"]), cpu_note("jsonl"))
    show("baseline: raw SQLite executemany (indexed)", best(rows["sqlite"]))
    show("trail batch: JSONL + SQLite (writer thread)", best(rows["batch"]), cpu_note("batch"))
    show("trail batch: JSONL only", best(rows["batch_nosqlite"]), cpu_note("batch_nosqlite"))
    show("trail batch: built-in finder only (not shipped)", best(rows["batch_builtin"]), cpu_note("batch_builtin"))
    show("trail batch: arguments rescanned (no args_scanned)", best(rows["batch_unscanned"]), cpu_note("batch_unscanned"))
    print(f"  passing the policy's scan: {best(rows['batch']) / best(rows['batch_unscanned']):.2f}x events/s, "
          f"{min(cpu['batch']) / min(cpu['batch_unscanned']):.2f}x CPU/event")
    print(f"  record_call on the call path, batch mode: p50 {min(call_path):.1f} µs")
    for key, runs in durable_runs.items():
        callers, window = key.split("/")
        top = max(runs)
        print(f"  trail durable, {callers:>3} caller(s), group commit {window:<7}: {top[0]:>8,.0f} events/s, "
              f"record_call p50 {statistics.median(r[1] for r in runs):.2f} ms, p99 {statistics.median(r[2] for r in runs):.2f} ms, "
              f"{statistics.median(r[3] for r in runs):.1f} events/fsync")
    durable = max(durable_runs[f"{opts.concurrency}/default"])
    print(f"  {gate}")
    results.update({k: best(v) for k, v in rows.items()})
    results.update({f"{k}_cpu_us": min(v) for k, v in cpu.items()})
    results.update({"call_path_p50_us": min(call_path), "durable_eps": durable[0], "durable_p50_ms": durable[1],
                    "durable_p99_ms": durable[2], "gate": gate})
    if opts.json:
        opts.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
