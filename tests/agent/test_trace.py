"""Run traces: event shape, trace ids, summaries, torn files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from checkrein.agent.trace import (
    TraceWriter,
    new_span_id,
    new_trace_id,
    read_trace,
    summarize_trace,
    traceparent,
)


def test_traceparent_is_w3c_shaped() -> None:
    assert re.fullmatch(r"00-[0-9a-f]{32}-[0-9a-f]{16}-01", traceparent(new_trace_id(), new_span_id()))


def test_every_event_carries_schema_seq_time_and_trace_id(tmp_path: Path) -> None:
    with TraceWriter.in_dir(tmp_path, "ab" * 16) as trace:
        trace.emit("run_start", model="m", query="q")
        trace.emit("run_end", status="answered", duration_s=1.5, answer="A")
        with pytest.raises(ValueError):
            trace.emit("something_else")
    events = read_trace(trace.path)
    assert [e["seq"] for e in events] == [1, 2]
    assert all(e["schema_version"] == 1 and e["trace_id"] == "ab" * 16 and e["time"].endswith("Z") for e in events)
    assert trace.path.name.endswith(f"-{('ab' * 16)[:12]}.jsonl")


def test_a_torn_last_line_is_skipped_but_a_torn_middle_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"type": "run_start"}) + "\n" + '{"type": "llm_res')
    assert [e["type"] for e in read_trace(path)] == ["run_start"]
    path.write_text('{"type": "run_st\n' + json.dumps({"type": "run_end"}) + "\n")
    with pytest.raises(ValueError):
        read_trace(path)


def test_summary_counts_calls_tokens_outcomes_and_time() -> None:
    events = [
        {"type": "run_start", "trace_id": "t", "model": "m", "query": "q"},
        {"type": "llm_response", "usage": {"prompt_tokens": 10, "completion_tokens": 2}, "retries": 1},
        {"type": "tool_call", "status": "ok", "tool": "a"},
        {"type": "tool_call", "status": "denied", "tool": "b"},
        {"type": "security", "kind": "denial"},
        {"type": "tool_call", "status": "error", "tool": "c"},
        {"type": "security", "kind": "approval"},
        {"type": "compression", "ok": False, "usage": {"prompt_tokens": 5, "completion_tokens": 0}},
        {"type": "llm_response", "usage": {"prompt_tokens": 20, "completion_tokens": 4}},
        {"type": "run_end", "status": "answered", "duration_s": 2.5, "answer": "done"},
    ]
    s = summarize_trace(events)
    assert (s.model_calls, s.prompt_tokens, s.completion_tokens, s.model_retries) == (3, 35, 6, 1)
    assert (s.tool_calls, s.tool_ok, s.tool_errors, s.denials, s.approvals) == (3, 1, 1, 1, 1)
    assert s.tool_success_rate == pytest.approx(1 / 3) and s.denied == ["b"]
    assert (s.compression_failures, s.status, s.duration_s, s.answer) == (1, "answered", 2.5, "done")
