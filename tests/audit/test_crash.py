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

# One process imports checkrein once and forks a fresh writer per run (importing the package takes
# seconds on a loaded 2-core machine; forking takes milliseconds). Each writer prints "name" after
# each durable `record_call` returns; the zygote prints "PID n" after forking and "REAPED" once the
# killed writer is gone, so every ack line before "REAPED" is complete.
_ZYGOTE = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    import anyio
    from checkrein.audit import CallRecord, open_audit_trail
    from checkrein.config import AuditSettings

    directory = sys.argv[1]

    def record(run, name):
        return CallRecord(kind="tool", trace_id=name, span_id="s", parent_span_id=None, session_id=run,
                          identity={"user": "u", "roles": [], "source": "stdio", "client": None}, model=None,
                          server="fs", tool="t", exposed_name="fs__t", tool_digest=None,
                          arguments={"i": name, "pad": "x" * 200},
                          decision={"effect": "allow", "rule_id": "r", "reasons": [], "risk": "low", "approval": None},
                          outcome="ok", error_code=None, duration_ms=1.0, result={"ok": True})

    async def worker(trail, run, w):
        i = 0
        while True:
            name = f"{run}-{w}-{i}"
            await trail.record_call(record(run, name))
            os.write(1, (name + "\\n").encode())
            i += 1

    async def main(run):
        settings = AuditSettings(dir=directory, durability="durable", checkpoint_every=25,
                                 segment_max_bytes=64 * 1024, checkpoint_interval_s=0.05)
        trail = open_audit_trail(settings, Path("."))
        async with anyio.create_task_group() as tg:
            for w in range(6):
                tg.start_soon(worker, trail, run, w)

    for line in sys.stdin:
        run = line.strip()
        pid = os.fork()
        if pid == 0:
            try:
                anyio.run(main, run)
            finally:
                os._exit(1)
        os.write(1, f"PID {pid}\\n".encode())
        os.waitpid(pid, 0)
        os.write(1, b"REAPED\\n")
    """
)


class _Zygote:
    def __init__(self, directory: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _ZYGOTE, str(directory)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self._buf = b""

    def _lines(self, deadline: float) -> list[bytes]:
        assert self.proc.stdout is not None
        remaining = deadline - time.monotonic()
        assert remaining > 0, "writer did not make progress in time"
        ready, _, _ = select.select([self.proc.stdout], [], [], remaining)
        if not ready:
            return []
        chunk = os.read(self.proc.stdout.fileno(), 65536)
        if not chunk:
            err = self.proc.stderr.read().decode() if self.proc.stderr else ""
            raise AssertionError(f"zygote exited: {err[-2000:]}")
        self._buf += chunk
        *lines, self._buf = self._buf.split(b"\n")
        return lines

    def run_and_kill(self, run: str, acks_before_kill: int, acked: list[str]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(run.encode() + b"\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + 30
        pid = None
        seen = 0
        while pid is None or seen < acks_before_kill:
            for line in self._lines(deadline):
                if line.startswith(b"PID "):
                    pid = int(line[4:])
                elif line:
                    acked.append(line.decode())
                    seen += 1
        os.kill(pid, signal.SIGKILL)
        while True:
            for line in self._lines(deadline):
                if line == b"REAPED":
                    return
                if line:
                    acked.append(line.decode())

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=10)
        for f in (self.proc.stdout, self.proc.stderr):
            if f:
                f.close()


@pytest.mark.slow
def test_sigkill_under_load_never_loses_an_acknowledged_event(tmp_path: Path) -> None:
    d = tmp_path / "audit"
    rng = random.Random(4)
    acked: list[str] = []
    zygote = _Zygote(d)
    try:
        for run in range(6):
            zygote.run_and_kill(f"r{run}", rng.randint(5, 300), acked)
            _check_after_restart(d, acked, run)
    finally:
        zygote.close()
    events = list(map(json.loads, read_lines(d)))
    assert sum(e.get("event") == "audit.recovery" for e in events) == 6
    assert len(list(d.glob("segment-*.jsonl"))) > 1  # the kills also landed across rotations


def _check_after_restart(d: Path, acked: list[str], run: int) -> None:
    """Restart: recovery cuts any torn tail, records it, and closes cleanly; then check."""
    write_log(d, [], checkpoint_interval_s=60.0)
    traces = [e["trace_id"] for e in map(json.loads, read_lines(d)) if e["type"] == "call"]
    assert len(traces) == len(set(traces)), "an event was written twice"
    missing = set(acked) - set(traces)
    assert not missing, f"acknowledged events lost after kill {run}: {sorted(missing)[:5]}"
    report = verify_log(d)
    assert report.exit_code == 0, report.problem
