"""A fault-injecting `LogFile` for testing the audit writer's fail-closed path.

    plan = FaultPlan()
    trail = open_audit_trail(settings, base, opener=plan.opener)
    plan.fail("write", errno.ENOSPC, times=1, partial=True)   # next write: half the bytes, then ENOSPC
    plan.fail("sync", errno.EIO)                              # fsync raises EIO until cleared
    plan.clear()

Steps are ``open``, ``write``, ``sync``, ``truncate``. ``times=None`` keeps failing until
`clear`. A partial write really writes the first half of the bytes before raising, so the test
sees exactly the torn state a full disk leaves. Thread-safe: the writer thread consults the plan
while the test changes it.
"""

from __future__ import annotations

import errno as errno_mod
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from checkrein.audit.segments import OsLogFile

__all__ = ["STEPS", "FaultPlan", "FaultyLogFile"]

STEPS = ("open", "write", "sync", "truncate")


@dataclass
class _Fault:
    errno: int
    times: int | None
    partial: bool


class FaultPlan:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: dict[str, _Fault] = {}
        self.injected: dict[str, int] = dict.fromkeys(STEPS, 0)
        self.calls: dict[str, int] = dict.fromkeys(STEPS, 0)

    def fail(self, step: str, errno: int = errno_mod.ENOSPC, *, times: int | None = None, partial: bool = False) -> None:
        """Make the next ``times`` calls of ``step`` (all of them when None) raise ``OSError(errno)``."""
        if step not in STEPS:
            raise ValueError(f"unknown step {step!r}; one of {STEPS}")
        with self._lock:
            self._faults[step] = _Fault(errno, times, partial)

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def check(self, step: str) -> _Fault | None:
        """Count the call; return the fault to inject now, if any."""
        with self._lock:
            self.calls[step] += 1
            fault = self._faults.get(step)
            if fault is None:
                return None
            if fault.times is not None:
                fault.times -= 1
                if fault.times <= 0:
                    del self._faults[step]
            self.injected[step] += 1
            return fault

    def opener(self, path: Path) -> FaultyLogFile:
        """A `checkrein.audit.segments.LogOpener`."""
        fault = self.check("open")
        if fault is not None:
            raise OSError(fault.errno, os.strerror(fault.errno), str(path))
        return FaultyLogFile(path, self)


class FaultyLogFile:
    """`OsLogFile` with injected failures."""

    def __init__(self, path: Path, plan: FaultPlan) -> None:
        self._real = OsLogFile(path)
        self._plan = plan
        self.path = path

    def _raise(self, fault: _Fault) -> None:
        raise OSError(fault.errno, os.strerror(fault.errno), str(self.path))

    def write(self, data: bytes) -> None:
        fault = self._plan.check("write")
        if fault is not None:
            if fault.partial and len(data) > 1:
                self._real.write(data[: len(data) // 2])
            self._raise(fault)
        self._real.write(data)

    def sync(self) -> None:
        fault = self._plan.check("sync")
        if fault is not None:
            self._raise(fault)
        self._real.sync()

    def truncate(self, size: int) -> None:
        fault = self._plan.check("truncate")
        if fault is not None:
            self._raise(fault)
        self._real.truncate(size)

    def size(self) -> int:
        return self._real.size()

    def close(self) -> None:
        self._real.close()
