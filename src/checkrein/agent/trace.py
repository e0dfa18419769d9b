"""Run traces: one JSONL file per agent run, joined to the gateway's audit by trace id.

Every line is ``{"schema_version": 1, "seq", "time", "type", "trace_id", ...}`` where ``type`` is
one of `EVENT_TYPES`. The trace id is the W3C trace id the runner sends to the gateway in each
call's ``_meta.traceparent``, so ``audit`` events with the same ``trace_id`` belong to this run.

Traces hold what the model and tools said (they are the run's record) but never API keys: the
loop masks what it records, and `TraceWriter.emit` masks the ``error`` text of every event, since
an error message quotes whatever failed (an endpoint's answer, a server's command line).
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from checkrein.audit.redact import Redactor

__all__ = [
    "EVENT_TYPES",
    "TRACE_SCHEMA_VERSION",
    "TraceSummary",
    "TraceWriter",
    "new_span_id",
    "new_trace_id",
    "read_trace",
    "summarize_trace",
    "traceparent",
]

TRACE_SCHEMA_VERSION = 1
EVENT_TYPES = (
    "run_start", "tools_list", "llm_response", "tool_call", "compression", "security", "error", "run_end",
)


def new_trace_id() -> str:
    """32 lowercase hex digits, never all zeros (W3C trace-context)."""
    while True:
        value = secrets.token_hex(16)
        if value != "0" * 32:
            return value


def new_span_id() -> str:
    """16 lowercase hex digits, never all zeros."""
    while True:
        value = secrets.token_hex(8)
        if value != "0" * 16:
            return value


def traceparent(trace_id: str, span_id: str) -> str:
    """``00-<trace id>-<span id>-01`` (version 00, sampled)."""
    return f"00-{trace_id}-{span_id}-01"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TraceWriter:
    """Appends events to ``path``; each line is flushed at once so a crashed run keeps its trace."""

    def __init__(self, path: Path, trace_id: str, observer: Callable[[dict[str, Any]], None] | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.trace_id = trace_id
        self.observer = observer
        """Called with each event after it is written (e.g. to show progress); must not raise."""
        self._seq = 0
        self._redactor = Redactor(max_chars=1000)
        self._fh: IO[str] | None = path.open("a", encoding="utf-8")

    @classmethod
    def in_dir(
        cls,
        directory: Path,
        trace_id: str | None = None,
        observer: Callable[[dict[str, Any]], None] | None = None,
    ) -> TraceWriter:
        """A new trace file ``<UTC time>-<trace id prefix>.jsonl`` in ``directory``."""
        tid = trace_id or new_trace_id()
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        return cls(directory / f"{stamp}-{tid[:12]}.jsonl", tid, observer)

    def emit(self, type_: str, **fields: Any) -> None:
        """Write one event; raises ``ValueError`` for a type outside `EVENT_TYPES`."""
        if type_ not in EVENT_TYPES:
            raise ValueError(f"unknown trace event type {type_!r}")
        if self._fh is None:
            raise ValueError("trace is closed")
        if isinstance(fields.get("error"), str):
            fields["error"] = self._redactor.mask_text(fields["error"])[0]
        self._seq += 1
        event = {"schema_version": TRACE_SCHEMA_VERSION, "seq": self._seq, "time": _now(), "type": type_,
                 "trace_id": self.trace_id, **fields}
        self._fh.write(json.dumps(event, ensure_ascii=False, default=str) + "\n")
        self._fh.flush()
        if self.observer is not None:
            self.observer(event)

    def close(self) -> None:
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
            self._fh = None

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_trace(path: Path) -> list[dict[str, Any]]:
    """The events of a trace file; a torn last line (a crashed writer) is skipped.
    Raises ``OSError`` when unreadable and ``ValueError`` when a middle line is not JSON."""
    lines = path.read_text(encoding="utf-8").splitlines()
    events: list[dict[str, Any]] = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break
            raise ValueError(f"{path}:{i + 1}: not a JSON line") from None
        if isinstance(value, dict):
            events.append(value)
    return events


@dataclass
class TraceSummary:
    """What `checkrein trace show` prints for one run."""

    trace_id: str = ""
    model: str = ""
    query: str = ""
    status: str = "unknown"
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_retries: int = 0
    tool_calls: int = 0
    tool_ok: int = 0
    tool_errors: int = 0
    denials: int = 0
    approvals: int = 0
    compressions: int = 0
    compression_failures: int = 0
    errors: int = 0
    duration_s: float = 0.0
    answer: str = ""
    denied: list[str] = field(default_factory=list)

    @property
    def tool_success_rate(self) -> float | None:
        """ok / all tool calls (denials count as not successful); None without tool calls."""
        return None if self.tool_calls == 0 else self.tool_ok / self.tool_calls

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def summarize_trace(events: list[dict[str, Any]]) -> TraceSummary:
    """Fold trace events into a `TraceSummary`. Pure."""
    s = TraceSummary()
    for e in events:
        kind = e.get("type")
        if kind == "run_start":
            s.trace_id, s.model, s.query = str(e.get("trace_id", "")), str(e.get("model", "")), str(e.get("query", ""))
        elif kind == "llm_response":
            s.model_calls += 1
            usage = e.get("usage") or {}
            s.prompt_tokens += int(usage.get("prompt_tokens", 0))
            s.completion_tokens += int(usage.get("completion_tokens", 0))
            s.model_retries += int(e.get("retries", 0))
        elif kind == "tool_call":
            s.tool_calls += 1
            status = e.get("status")
            if status == "ok":
                s.tool_ok += 1
            elif status == "denied":
                s.denials += 1
                s.denied.append(str(e.get("tool", "")))
            else:
                s.tool_errors += 1
        elif kind == "security" and e.get("kind") == "approval":
            s.approvals += 1
        elif kind == "compression":
            usage = e.get("usage") or {}
            if usage.get("prompt_tokens") or usage.get("completion_tokens"):
                s.model_calls += 1  # the summary was written by the model
            s.prompt_tokens += int(usage.get("prompt_tokens", 0))
            s.completion_tokens += int(usage.get("completion_tokens", 0))
            if e.get("ok"):
                s.compressions += 1
            else:
                s.compression_failures += 1
        elif kind == "error":
            s.errors += 1
        elif kind == "run_end":
            s.status = str(e.get("status", "unknown"))
            s.duration_s = float(e.get("duration_s", 0.0))
            s.answer = str(e.get("answer") or "")
    return s

