"""The log's `verify` status for the page header, kept fresh without hogging a core.

The verifier of `checkrein audit verify --live` runs in a child process (at low priority, and
importing only `checkrein.audit`), so a long verification neither holds this process's GIL (the
gateway's event loop, when the view is mounted in it) nor can crash it. A run starts on the first request, and again once the log has
grown, at most every ``max(min_interval_s, 10 x the last run's duration)``: on a 100,000-event log
(about 9 s to verify here) that is every 90 s. ``refresh`` asks for one now.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checkrein.audit.segments import list_segments

__all__ = ["VerifyMonitor", "VerifyState"]

_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class VerifyState:
    """One finished run (or none yet: ``state == "pending"``)."""

    state: str
    """pending | valid | invalid | unreadable | failed"""
    events: int = 0
    last_seq: int | None = None
    checkpoints: int = 0
    bad_seq: int | None = None
    problem: str | None = None
    warnings: tuple[str, ...] = ()
    finished_at: float | None = None
    duration_s: float = 0.0
    log_size: int = 0
    """Bytes of the segments when the run started (newer bytes are not verified yet)."""


_CHILD = (
    "import json, sys\n"
    "from pathlib import Path\n"
    "from checkrein.audit.verify import verify_log\n"
    "report = verify_log(Path(sys.argv[1]), live=True)\n"
    "print(json.dumps(report.as_dict(), sort_keys=True))\n"
    "sys.exit(report.exit_code)\n"
)
"""What `checkrein audit verify DIR --live --json` does, without loading the whole CLI."""


def _verify_command(directory: Path) -> list[str]:
    base = [sys.executable, "-c", _CHILD, str(directory)]
    nice = shutil.which("nice")
    return [nice, "-n", "10", *base] if nice else base


def parse_report(stdout: str, returncode: int, started: float, size: int, now: float) -> VerifyState:
    """A `VerifyState` from the JSON report the child printed (`VerifyReport.as_dict`)."""
    try:
        data: Any = json.loads(stdout)
        if not isinstance(data, dict):
            raise ValueError("not an object")
    except ValueError:
        return VerifyState("failed", problem=f"verify exited {returncode} without a report", finished_at=now,
                           duration_s=now - started, log_size=size)
    problem = data.get("problem") if isinstance(data.get("problem"), dict) else None
    state = {0: "valid", 1: "invalid"}.get(returncode, "unreadable")
    return VerifyState(
        state,
        events=int(data.get("events") or 0),
        last_seq=data.get("last_seq") if isinstance(data.get("last_seq"), int) else None,
        checkpoints=int(data.get("checkpoints") or 0),
        bad_seq=problem.get("seq") if problem and isinstance(problem.get("seq"), int) else None,
        problem=_describe(problem) if problem else None,
        warnings=tuple(str(w) for w in data.get("warnings") or ()),
        finished_at=now,
        duration_s=now - started,
        log_size=size,
    )


def _describe(problem: dict[str, Any]) -> str:
    where = [f"seq {problem['seq']}"] if isinstance(problem.get("seq"), int) else []
    if problem.get("file"):
        where.append(f"{problem['file']}" + (f" line {problem['line']}" if problem.get("line") else ""))
    reason = str(problem.get("reason", "?"))
    return f"{', '.join(where)}: {reason}" if where else reason


class VerifyMonitor:
    """Thread-safe; `current` never blocks on a run."""

    def __init__(
        self,
        directory: Path,
        *,
        min_interval_s: float = 15.0,
        command: Callable[[Path], Sequence[str]] = _verify_command,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.directory = directory
        self.min_interval_s = min_interval_s
        self._command = command
        self._clock = clock
        self._lock = threading.Lock()
        self._state = VerifyState("pending")
        self._running: threading.Thread | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._last_start = -1e18
        self._closed = False

    def log_size(self) -> int:
        try:
            return sum(p.stat().st_size for _, p in list_segments(self.directory))
        except OSError:
            return -1

    def current(self, *, refresh: bool = False) -> tuple[VerifyState, bool]:
        """The last finished run and whether one is running now; starts a run when due (or asked)."""
        with self._lock:
            running = self._running is not None
            if not running and not self._closed and (refresh or self._due()):
                self._start()
                running = True
            return self._state, running

    def _due(self) -> bool:
        state = self._state
        if state.state == "pending":
            return True
        wait = max(self.min_interval_s, 10 * state.duration_s)
        return self._clock() - self._last_start >= wait and self.log_size() != state.log_size

    def _start(self) -> None:
        self._last_start = self._clock()
        thread = threading.Thread(target=self._run, name="checkrein-ui-verify", daemon=True)
        self._running = thread
        thread.start()

    def _run(self) -> None:
        started = self._clock()
        size = self.log_size()
        try:
            proc = subprocess.Popen(
                list(self._command(self.directory)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
            with self._lock:
                self._proc = proc
                if self._closed:  # closed while the child was starting
                    proc.kill()
            try:
                out, err = proc.communicate(timeout=_TIMEOUT_S)
                state = parse_report(out, proc.returncode, started, size, self._clock())
                if state.state == "failed" and err.strip():
                    state = VerifyState("failed", problem=err.strip().splitlines()[-1][:500], finished_at=state.finished_at,
                                        duration_s=state.duration_s, log_size=size)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                state = VerifyState("failed", problem=f"verify took longer than {_TIMEOUT_S:.0f} s",
                                    finished_at=self._clock(), duration_s=_TIMEOUT_S, log_size=size)
        except OSError as exc:
            state = VerifyState("failed", problem=f"cannot run verify: {exc}", finished_at=self._clock(), log_size=size)
        with self._lock:
            self._state = state
            self._running = None
            self._proc = None

    def close(self) -> None:
        """Stop a running verification (its child process) and start no more."""
        with self._lock:
            self._closed = True
            proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
