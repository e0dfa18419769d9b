"""Context compression: what is kept, what is summarized, and a failed summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from checkrein.agent.compression import compress, estimate_tokens, split_for_compression
from checkrein.agent.loop import RunSettings
from checkrein.agent.model import Message
from checkrein.agent.runner import run_query
from checkrein.agent.scripted import ScriptedModel, ScriptStep
from checkrein.agent.trace import read_trace, summarize_trace

from .conftest import inproc

pytestmark = pytest.mark.anyio


def _conversation(turns: int) -> list[Message]:
    msgs: list[Message] = [{"role": "system", "content": "sys"}, {"role": "user", "content": "question " * 50}]
    for i in range(turns):
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "t", "arguments": "{}"}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"result {i} " + "x" * 400})
    return msgs


def test_the_kept_tail_never_starts_with_a_tool_result() -> None:
    msgs = _conversation(5)  # 12 messages: sys, user, (assistant, tool) x 5
    head, middle, tail = split_for_compression(msgs, keep_last=5)
    assert head == msgs[:1]
    assert tail[0]["role"] == "assistant" and len(tail) == 6
    assert head + middle + tail == msgs


def test_the_estimate_is_about_four_characters_per_token() -> None:
    assert estimate_tokens([{"role": "user", "content": "x" * 400}]) == 104


async def test_below_the_threshold_nothing_changes() -> None:
    msgs = _conversation(1)
    out = await compress(msgs, ScriptedModel([]), threshold=10_000)
    assert not out.compressed and out.messages == msgs and out.error is None


async def test_older_turns_become_one_summary_and_the_last_six_stay() -> None:
    msgs = _conversation(6)
    out = await compress(msgs, ScriptedModel([], summary="The user asked a question; six results came back."),
                         threshold=100)
    assert out.compressed and out.tokens_after < out.tokens_before
    assert out.messages[0] == msgs[0]
    assert out.messages[1]["content"].endswith("six results came back.")
    assert out.messages[2:] == msgs[-6:]
    assert out.summarized_messages == len(msgs) - 1 - 6


async def test_a_failed_summary_leaves_the_messages_as_they_were() -> None:
    msgs = _conversation(6)
    snapshot: list[dict[str, Any]] = [dict(m) for m in msgs]
    out = await compress(msgs, ScriptedModel([], fail_summary=True), threshold=100)
    assert not out.compressed and out.messages == snapshot
    assert out.error is not None and "scripted summary failure" in out.error
    empty = await compress(msgs, ScriptedModel([], summary="  "), threshold=100)
    assert not empty.compressed and empty.error == "the model returned an empty summary"
    longer = await compress(msgs, ScriptedModel([], summary="y" * 20_000), threshold=100)
    assert not longer.compressed and longer.messages == snapshot and "not shorter" in (longer.error or "")


async def test_nothing_old_enough_is_skipped_not_failed() -> None:
    msgs = _conversation(2)
    out = await compress(msgs, ScriptedModel([], fail_summary=True), threshold=1)
    assert not out.compressed and out.error is None and out.skipped


@pytest.mark.parametrize("fail", [False, True])
async def test_compression_in_a_run_is_recorded_in_the_trace(
    fail: bool, server_env: dict[str, str], tmp_path: Path
) -> None:
    steps = [ScriptStep("read_file", {"filename": "important.txt"})] * 6
    model = ScriptedModel(steps, "done: {result[5]}", fail_summary=fail)
    settings = RunSettings(compress_at_tokens=300, max_steps=10)
    out = await run_query(inproc("sandbox", server_env), model, "read it many times", tmp_path / "t", settings)
    assert out.result.status == "answered" and "access review" in out.result.answer
    events = [e for e in read_trace(out.trace_path) if e["type"] == "compression"]
    assert events and all(e["ok"] is False for e in events) if fail else any(e["ok"] for e in events)
    if fail:
        assert all("scripted summary failure" in e["error"] for e in events)
    summary = summarize_trace(read_trace(out.trace_path))
    assert (summary.compressions > 0) is (not fail)
    if fail:
        assert summary.compression_failures > 0
