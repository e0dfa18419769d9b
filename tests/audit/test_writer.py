"""The writer's group commit: one fsync shared by the events queued within the window, and an
acknowledged event is always on disk."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from checkrein.audit import open_audit_trail

from .helpers import make_record, read_lines, settings

pytestmark = pytest.mark.anyio


async def _fsyncs_for_spaced_events(tmp_path: Path, window_ms: float, *, wait_for_each: bool) -> int:
    trail = open_audit_trail(settings(tmp_path / "audit", batch_window_ms=window_ms, group_commit_ms=window_ms), tmp_path)
    try:
        before = trail.counters["fsyncs"]
        with anyio.fail_after(60):
            for i in range(10):
                written = trail.counters["events_written"]
                await trail.record_call(make_record(i))
                if wait_for_each:  # the writer synced it before the next arrives
                    while trail.counters["events_written"] == written:
                        await anyio.sleep(0.001)
                else:
                    await anyio.sleep(0.01)  # arrivals spread over ~0.1 s, inside the window
        return trail.counters["fsyncs"] - before
    finally:
        await trail.aclose()


async def test_events_queued_within_the_window_share_one_fsync(tmp_path: Path) -> None:
    """Ten events arriving 10 ms apart inside a 1 s window are synced together, not one by one."""
    assert await _fsyncs_for_spaced_events(tmp_path, 1000.0, wait_for_each=False) <= 2


async def test_without_a_window_each_wake_up_syncs_at_once(tmp_path: Path) -> None:
    """batch_window_ms = 0: an event that finds the writer idle gets its own fsync."""
    assert await _fsyncs_for_spaced_events(tmp_path, 0.0, wait_for_each=True) == 10


async def test_concurrent_durable_callers_are_each_acknowledged_on_disk(tmp_path: Path) -> None:
    """32 callers awaiting durable writes at once all return with their event in the file,
    sharing fsyncs."""
    d = tmp_path / "audit"
    trail = open_audit_trail(settings(d, durability="durable", group_commit_ms=50.0), tmp_path)
    acknowledged: list[int] = []
    try:
        before = trail.counters["fsyncs"]

        async def call(i: int) -> None:
            await trail.record_call(make_record(i, trace_id=f"group-{i}"))
            assert f"group-{i}".encode() in b"".join(read_lines(d))
            acknowledged.append(i)

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for i in range(32):
                    tg.start_soon(call, i)
        assert sorted(acknowledged) == list(range(32))
        assert trail.counters["fsyncs"] - before < 32
    finally:
        await trail.aclose()


@pytest.mark.parametrize("window_ms", [0.0, 2.0])
async def test_a_sequential_durable_caller_is_acknowledged_only_once_on_disk(tmp_path: Path, window_ms: float) -> None:
    """With or without a window, each acknowledged event is already in the segment file."""
    d = tmp_path / "audit"
    trail = open_audit_trail(settings(d, durability="durable", group_commit_ms=window_ms), tmp_path)
    try:
        with anyio.fail_after(60):
            for i in range(5):
                await trail.record_call(make_record(i, trace_id=f"seq-{i}"))
                assert f"seq-{i}".encode() in b"".join(read_lines(d))
    finally:
        await trail.aclose()


async def test_closing_does_not_wait_out_the_window(tmp_path: Path) -> None:
    """A queued batch-mode event is written on close even with the longest window."""
    d = tmp_path / "audit"
    trail = open_audit_trail(settings(d, batch_window_ms=1000.0), tmp_path)
    await trail.record_call(make_record(1, trace_id="last-one"))
    with anyio.fail_after(30):
        await trail.aclose()
    assert b"last-one" in b"".join(read_lines(d))


@pytest.mark.parametrize("window_ms", [1.0, 50.0])
async def test_a_lone_batch_event_is_synced_within_the_window(tmp_path: Path, window_ms: float) -> None:
    """An event queued alone, with nothing after it and the trail left open, is written and
    fsynced once its window is out: the window bounds the wait, it does not wait for company."""
    d = tmp_path / "audit"
    trail = open_audit_trail(settings(d, batch_window_ms=window_ms), tmp_path)
    try:
        fsyncs = trail.counters["fsyncs"]
        await trail.record_call(make_record(1, trace_id="alone"))
        with anyio.fail_after(30):
            while trail.counters["fsyncs"] == fsyncs or b"alone" not in b"".join(read_lines(d)):
                await anyio.sleep(0.005)
        assert trail.counters["events_written"] >= 1
        assert trail.counters["queue_depth"] == 0
    finally:
        await trail.aclose()


async def test_events_queued_during_a_write_are_gathered_too(tmp_path: Path) -> None:
    """Forty events 5 ms apart with a 1 s batch window share batches (one per window, whether an
    event found the writer idle or arrived while it wrote the previous batch), and all get written."""
    d = tmp_path / "audit"
    trail = open_audit_trail(settings(d, batch_window_ms=1000.0), tmp_path)
    try:
        before = trail.counters["batches"]
        for i in range(40):
            await trail.record_call(make_record(i, trace_id=f"gathered-{i}"))
            await anyio.sleep(0.005)
        with anyio.fail_after(30):
            while trail.counters["events_written"] < 40:
                await anyio.sleep(0.005)
        assert trail.counters["batches"] - before < 20  # one per event without the window
    finally:
        await trail.aclose()
    lines = b"".join(read_lines(d))
    assert all(f"gathered-{i}".encode() in lines for i in range(40))


async def test_durable_mode_ignores_the_batch_window(tmp_path: Path) -> None:
    """A durable caller is acknowledged on disk without waiting out a long batch window."""
    d = tmp_path / "audit"
    trail = open_audit_trail(settings(d, durability="durable", batch_window_ms=1000.0, group_commit_ms=0.0), tmp_path)
    try:
        with anyio.fail_after(60):
            for i in range(3):
                await trail.record_call(make_record(i, trace_id=f"dur-{i}"))
                assert f"dur-{i}".encode() in b"".join(read_lines(d))
        assert trail.counters["fsyncs"] >= 3
    finally:
        await trail.aclose()
