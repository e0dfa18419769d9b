"""Helpers for the audit tests: records, and writing a real log."""


from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio

from checkrein.audit import CallRecord, LifecycleRecord, open_audit_trail
from checkrein.audit.trail import AuditTrailImpl
from checkrein.config import AuditSettings


def make_record(i: int = 0, **over: Any) -> CallRecord:
    fields: dict[str, Any] = {
        "kind": "tool",
        "trace_id": f"trace-{i}",
        "span_id": f"span-{i}",
        "parent_span_id": None,
        "session_id": f"session-{i % 3}",
        "identity": {"user": "alice", "roles": ["dev"], "source": "stdio", "client": "test"},
        "model": "m1",
        "server": "fs",
        "tool": "read_file" if i % 2 == 0 else "write_file",
        "exposed_name": "fs__read_file" if i % 2 == 0 else "fs__write_file",
        "tool_digest": "sha256:00",
        "arguments": {"path": f"/tmp/file-{i}.txt", "n": i},
        "decision": {"effect": "allow", "rule_id": "default", "reasons": [], "risk": "low", "approval": None},
        "outcome": "ok",
        "error_code": None,
        "duration_ms": float(i % 50),
        "result": {"content": [{"type": "text", "text": f"contents of file {i}"}], "isError": False},
    }
    fields.update(over)
    return CallRecord(**fields)


def settings(directory: Path, **over: Any) -> AuditSettings:
    base: dict[str, Any] = {"dir": str(directory), "checkpoint_every": 10, "checkpoint_interval_s": 3600.0}
    base.update(over)
    return AuditSettings(**base)


def write_log(
    directory: Path,
    records: Sequence[CallRecord | LifecycleRecord],
    *,
    opener: Callable[[Path], Any] | None = None,
    **over: Any,
) -> AuditTrailImpl:
    """Open a trail on ``directory``, record everything, close it; return the (closed) trail."""

    async def run() -> AuditTrailImpl:
        trail = open_audit_trail(settings(directory, **over), directory.parent, opener=opener)
        for r in records:
            if isinstance(r, CallRecord):
                await trail.record_call(r)
            else:
                await trail.record_lifecycle(r)
        await trail.aclose()
        return trail

    return anyio.run(run)


def read_lines(directory: Path) -> list[bytes]:
    out: list[bytes] = []
    for p in sorted(directory.glob("segment-*.jsonl")):
        out.extend(p.read_bytes().splitlines(keepends=True))
    return out
