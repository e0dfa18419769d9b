"""Crash test: a durable writer under load is SIGKILLed at random points, then restarted.

After each restart: every event the child acknowledged (printed after `record_call` returned in
durable mode) is in the log exactly once, nothing is duplicated, and `verify` passes.
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from checkrein.audit.verify import verify_log

from .helpers import read_lines, write_log

_CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import anyio
    from checkrein.audit import CallRecord, open_audit_trail
    from checkrein.config import AuditSettings

    run = sys.argv[2]
    settings = AuditSettings(dir=sys.argv[1], durability="durable", checkpoint_every=25,
                             segment_max_bytes=64 * 1024, checkpoint_interval_s=0.05)

    def record(name):
        return CallRecord(kind="tool", trace_id=name, span_id="s", parent_span_id=None, session_id=run,
                          identity={"user": "u", "roles": [], "source": "stdio", "client": None}, model=None,
                          server="fs", tool="t", exposed_name="fs__t", tool_digest=None,
                          arguments={"i": name, "pad": "x" * 200},
                          decision={"effect": "allow", "rule_id": "r", "reasons": [], "risk": "low", "approval": None},
                          outcome="ok", error_code=None, duration_ms=1.0, result={"ok": True})

    async def worker(trail, w):
        i = 0
        while True:
            name = f"{run}-{w}-{i}"
            await trail.record_call(record(name))
            sys.stdout.write(name + "\\n")
            sys.stdout.flush()
            i += 1

    async def main():
        trail = open_audit_trail(settings, Path("."))
        sys.stdout.write("READY\\n")
        sys.stdout.flush()
        async with anyio.create_task_group() as tg:
            for w in range(6):
                tg.start_soon(worker, trail, w)

    anyio.run(main)
    """
)


def _run_and_kill(directory: Path, run: str, acks_before_kill: int, acked: list[str]) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(directory), run],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    buf = b""
    seen = 0
    try:
        while seen < acks_before_kill:
            remaining = deadline - time.monotonic()
            assert remaining > 0, "child did not acknowledge events in time"
            ready, _, _ = select.select([proc.stdout], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                err = proc.stderr.read().decode() if proc.stderr else ""
                raise AssertionError(f"child exited early: {err[-2000:]}")
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                if line and line != b"READY":
                    acked.append(line.decode())
                    seen += 1
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    # Whatever complete lines the pipe still holds were acknowledged before the kill too.
    rest = proc.stdout.read()
    for line in (buf + rest).split(b"\n")[:-1]:
        if line and line != b"READY":
            acked.append(line.decode())
    proc.stdout.close()
    if proc.stderr:
        proc.stderr.close()


@pytest.mark.slow
def test_sigkill_under_load_never_loses_an_acknowledged_event(tmp_path: Path) -> None:
    d = tmp_path / "audit"
    rng = random.Random(4)
    acked: list[str] = []
    for run in range(6):
        _run_and_kill(d, f"r{run}", rng.randint(5, 400), acked)
        # restart: recovery cuts any torn tail, records it, and closes cleanly
        write_log(d, [], checkpoint_interval_s=60.0)
        traces = [e["trace_id"] for e in map(json.loads, read_lines(d)) if e["type"] == "call"]
        assert len(traces) == len(set(traces)), "an event was written twice"
        missing = set(acked) - set(traces)
        assert not missing, f"acknowledged events lost after kill {run}: {sorted(missing)[:5]}"
        report = verify_log(d)
        assert report.exit_code == 0, report.problem
    events = list(map(json.loads, read_lines(d)))
    assert sum(e.get("event") == "audit.recovery" for e in events) == 6
    assert len(list(d.glob("segment-*.jsonl"))) > 1  # the kills also landed across rotations
