"""The writer end to end: events on disk, chained, checkpointed, indexed, recovered."""

from __future__ import annotations

import copy
import json
import logging
import sqlite3
from pathlib import Path

import anyio
import pytest

from checkrein.audit import LifecycleRecord, open_audit_trail
from checkrein.audit.schema import check_event
from checkrein.audit.signing import generate_keypair
from checkrein.audit.verify import verify_log
from checkrein.errors import AuditUnavailable

from .helpers import make_record, read_lines, settings, write_log


def test_every_written_event_matches_the_schema_and_the_log_verifies(tmp_path: Path) -> None:
    d = tmp_path / "audit"
    records = [LifecycleRecord("gateway.start", {"config_digest": "sha256:aa", "policy_digest": "sha256:bb"})]
    records += [make_record(i) for i in range(35)]
    records += [make_record(99, outcome="denied", error_code="policy.denied", result=None,
                            decision={"effect": "deny", "rule_id": "no-write", "reasons": ["writes are off"], "risk": "high", "approval": None})]
    records += [LifecycleRecord("gateway.stop", {})]
    write_log(d, records)
    lines = read_lines(d)
    events = [json.loads(x) for x in lines]
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert all(check_event(e) is None for e in events), [check_event(e) for e in events]
    types = [e["type"] for e in events]
    assert types[0] == "genesis" and types[-1] == "checkpoint" and events[-1]["reason"] == "shutdown"
    assert sum(t == "call" for t in types) == 36
    assert sum(t == "checkpoint" for t in types) >= 4  # every 10 events + shutdown
    report = verify_log(d)
    assert report.exit_code == 0, report.problem
    assert report.sqlite_checked


def test_call_event_fields_are_exactly_the_design_fields(tmp_path: Path) -> None:
    d = tmp_path / "audit"
    write_log(d, [make_record(1)])
    call = next(json.loads(x) for x in read_lines(d) if b'"type":"call"' in x)
    assert set(call) == {
        "schema_version", "seq", "event_id", "time", "type", "kind", "trace_id", "span_id", "parent_span_id",
        "session_id", "identity", "model", "server", "tool", "exposed_name", "tool_digest", "args_sha256",
        "args_preview", "decision", "outcome", "error_code", "duration_ms", "result", "redactions",
        "degraded", "prev_hash", "hash",
    }
    assert set(call["result"]) == {"size_bytes", "sha256", "summary", "flags"}
    assert set(call["decision"]) == {"effect", "rule_id", "reasons", "risk", "approval"}


def test_recording_never_mutates_the_callers_record(tmp_path: Path) -> None:
    args = {"password": "hunter2hunter2", "nested": {"token": "abc123456", "list": [1, {"api_key": "k" * 20}]},
            "body": '{"secret": "s3cr3t-value"}'}
    rec = make_record(1, arguments=args, result={"content": [{"type": "text", "text": "password=opensesame1"}]})
    before_args, before_result = copy.deepcopy(rec.arguments), copy.deepcopy(rec.result)
    write_log(tmp_path / "audit", [rec])
    assert rec.arguments == before_args and rec.result == before_result


def test_reopening_continues_the_chain_without_a_recovery_event(tmp_path: Path) -> None:
    d = tmp_path / "audit"
    write_log(d, [make_record(i) for i in range(5)])
    write_log(d, [make_record(i) for i in range(5, 9)])
    events = [json.loads(x) for x in read_lines(d)]
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert not any(e.get("event") == "audit.recovery" for e in events)
    assert sum(e["type"] == "genesis" for e in events) == 1
    assert verify_log(d).exit_code == 0


def test_torn_tail_is_cut_and_a_recovery_event_says_what_was_cut(tmp_path: Path) -> None:
    d = tmp_path / "audit"
    write_log(d, [make_record(i) for i in range(3)])
    seg = d / "segment-000001.jsonl"
    good = seg.read_bytes()
    seg.write_bytes(good + b'{"schema_version":1,"seq":9,"trunc')
    trail = write_log(d, [make_record(7)])
    assert trail.counters["recoveries"] == 1
    events = [json.loads(x) for x in read_lines(d)]
    rec = next(e for e in events if e.get("event") == "audit.recovery")
    assert rec["fields"]["cut_bytes"] == len(b'{"schema_version":1,"seq":9,"trunc')
    assert rec["fields"]["clean_shutdown"] is False
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert verify_log(d).exit_code == 0


def test_segments_rotate_by_size_and_each_links_to_the_previous_head(tmp_path: Path) -> None:
    d = tmp_path / "audit"
    write_log(d, [make_record(i, arguments={"blob": "x" * 400, "i": i}) for i in range(60)],
              segment_max_bytes=4096, batch_max=4)
    segs = sorted(d.glob("segment-*.jsonl"))
    assert len(segs) >= 3
    for prev, cur in zip(segs, segs[1:], strict=False):
        last = json.loads(prev.read_bytes().splitlines()[-1])
        first = json.loads(cur.read_bytes().splitlines()[0])
        assert first["type"] == "segment" and first["prev_segment_head"] == last["hash"]
    assert verify_log(d).exit_code == 0


def test_signed_checkpoints_verify_with_the_public_key_only(tmp_path: Path) -> None:
    priv, pub, kid = generate_keypair(tmp_path / "keys")
    assert (priv.stat().st_mode & 0o777) == 0o600
    d = tmp_path / "audit"
    write_log(d, [make_record(i) for i in range(25)], signing_key=str(priv))
    text = b"".join(read_lines(d))
    assert priv.read_bytes().split(b"\n")[1] not in text
    report = verify_log(d, public_key=pub)
    assert report.exit_code == 0 and report.signatures_checked == report.checkpoints >= 3
    _, other_pub, _ = generate_keypair(tmp_path / "other")
    wrong = verify_log(d, public_key=other_pub)
    assert wrong.exit_code == 1 and "key" in wrong.problem.reason  # type: ignore[union-attr]


def test_sqlite_index_has_every_event_and_indexes(tmp_path: Path) -> None:
    d = tmp_path / "audit"
    write_log(d, [make_record(i) for i in range(12)])
    db = sqlite3.connect(d / "index.sqlite")
    n = db.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    mode = db.execute("PRAGMA journal_mode").fetchone()[0]
    db.close()
    assert n == len(read_lines(d))
    assert {"events_time", "events_session", "events_trace", "events_tool_duration", "events_outcome_rule",
            "events_call_server", "events_call_user"} <= names
    assert mode == "wal"
    for p in d.iterdir():
        assert p.stat().st_mode & 0o077 == 0, p  # segments and index are private to the owner


def test_index_catches_up_after_losing_rows(tmp_path: Path) -> None:
    d = tmp_path / "audit"
    write_log(d, [make_record(i) for i in range(12)])
    db = sqlite3.connect(d / "index.sqlite")
    db.execute("DELETE FROM events WHERE seq > 5")
    db.commit()
    db.close()
    assert verify_log(d).exit_code == 1
    write_log(d, [make_record(50)])
    assert verify_log(d).exit_code == 0


@pytest.mark.anyio
async def test_rows_an_index_write_could_not_take_go_in_without_a_next_event(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A failed index insert (another connection holds SQLite's write lock past the busy timeout)
    is retried on its own once the lock is gone: the last call before a quiet spell is indexed.
    A spell of failures is one warning, and one when it ends."""
    caplog.set_level(logging.WARNING, logger="checkrein")
    d = tmp_path / "audit"
    trail = open_audit_trail(settings(d), tmp_path)

    def indexed(trace: str) -> bool:
        db = sqlite3.connect(f"file:{d / 'index.sqlite'}?mode=ro", uri=True)
        try:
            return db.execute("SELECT COUNT(*) FROM events WHERE trace_id = ?", (trace,)).fetchone()[0] == 1
        finally:
            db.close()

    with anyio.fail_after(60):
        await trail.record_call(make_record(1, trace_id="before"))
        while not indexed("before"):
            await anyio.sleep(0.02)
        blocker = sqlite3.connect(d / "index.sqlite", isolation_level=None)
        try:
            blocker.execute("BEGIN EXCLUSIVE")
            await trail.record_call(make_record(2, trace_id="quiet-spell"))
            while trail.counters["sqlite_errors"] < 2:  # the first try and one retry
                await anyio.sleep(0.05)
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        while not indexed("quiet-spell"):
            await anyio.sleep(0.05)
        await trail.aclose()
    assert trail.counters["sqlite_rows_behind"] == 0
    said = [r.getMessage() for r in caplog.records if "audit index write" in r.getMessage()]
    # Two or more failures (more if this machine was slow to take the lock away), one warning.
    assert len(said) == 2 and "write failed" in said[0] and "writes resumed after" in said[1], said


@pytest.mark.anyio
async def test_rows_dropped_from_a_full_index_backlog_are_read_back_from_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """More rows wait for a failing index than its backlog holds: the oldest are dropped from
    memory, and once inserts work again they are read back from the segments (no hole in the
    index, which the web view and `audit query` would silently show as missing calls)."""
    from checkrein.audit.sqlite_index import IndexWorker

    monkeypatch.setattr(IndexWorker, "BACKLOG_MAX", 3)
    caplog.set_level(logging.WARNING, logger="checkrein")
    d = tmp_path / "audit"
    trail = open_audit_trail(settings(d), tmp_path)

    def indexed() -> set[str]:
        db = sqlite3.connect(f"file:{d / 'index.sqlite'}?mode=ro", uri=True)
        try:
            return {r[0] for r in db.execute("SELECT trace_id FROM events WHERE trace_id IS NOT NULL")}
        finally:
            db.close()

    wanted = {f"gap-{i}" for i in range(10)}
    with anyio.fail_after(90):
        await trail.record_call(make_record(0, trace_id="before"))
        while "before" not in indexed():
            await anyio.sleep(0.02)
        blocker = sqlite3.connect(d / "index.sqlite", isolation_level=None)
        try:
            blocker.execute("BEGIN EXCLUSIVE")
            for i in range(10):
                await trail.record_call(make_record(i + 1, trace_id=f"gap-{i}"))
            while trail.counters["sqlite_errors"] < 2:
                await anyio.sleep(0.05)
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        while not wanted <= indexed():
            await anyio.sleep(0.05)
        await trail.aclose()
    said = " | ".join(r.getMessage() for r in caplog.records)
    assert "backlog full" in said and "are read back from the log" in said and "read-back" not in said, said
    assert trail.counters["sqlite_rows_behind"] == 0
    assert verify_log(d).exit_code == 0  # the index agrees with the chain


def test_located_lines_from_a_known_place_are_the_same_lines(tmp_path: Path) -> None:
    """`iter_located_lines_at` from a line's (seq, segment, offset) gives what `iter_located_lines`
    gives from that seq, across a segment rotation, without reading the lines before it."""
    from checkrein.audit.segments import iter_located_lines, iter_located_lines_at

    d = tmp_path / "audit"
    write_log(d, [make_record(i) for i in range(60)], segment_max_bytes=8192, batch_max=4)
    every = list(iter_located_lines(d))
    assert len({segment for _, segment, _, _ in every}) >= 3  # the log rotated
    for seq, segment, offset, _ in every[::7]:
        assert list(iter_located_lines_at(d, seq, segment, offset)) == every[seq:]


@pytest.mark.anyio
async def test_durable_mode_returns_after_the_event_is_on_disk(tmp_path: Path) -> None:
    d = tmp_path / "audit"
    trail = open_audit_trail(settings(d, durability="durable"), tmp_path)
    with anyio.fail_after(10):
        await trail.record_call(make_record(1, trace_id="durable-1"))
        assert b"durable-1" in b"".join(read_lines(d))
        await trail.aclose()


@pytest.mark.anyio
async def test_timer_checkpoint_is_written_while_idle(tmp_path: Path) -> None:
    d = tmp_path / "audit"
    trail = open_audit_trail(settings(d, checkpoint_interval_s=0.05), tmp_path)
    with anyio.fail_after(10):
        while not any(b'"reason":"timer"' in x for x in read_lines(d)):
            await anyio.sleep(0.02)
        await trail.aclose()
    assert verify_log(d).exit_code == 0


@pytest.mark.anyio
async def test_closed_trail_denies_calls(tmp_path: Path) -> None:
    trail = open_audit_trail(settings(tmp_path / "audit"), tmp_path)
    await trail.aclose()
    assert not trail.writable()
    with pytest.raises(AuditUnavailable):
        await trail.record_call(make_record(1))


def test_counters_name_every_degradation(tmp_path: Path) -> None:
    trail = write_log(tmp_path / "audit", [make_record(i) for i in range(3)])
    c = trail.counters
    for name in ("events_queued", "events_written", "queue_depth", "queue_max_seen", "dropped",
                 "rejected_unwritable", "failed_open", "write_errors", "sqlite_errors", "recoveries"):
        assert name in c
    assert c["events_queued"] == 3 and c["dropped"] == 0


@pytest.mark.anyio
async def test_a_second_writer_on_the_same_log_is_refused_until_the_first_closes(tmp_path: Path) -> None:
    from checkrein.errors import AuditError

    d = tmp_path / "audit"
    first = open_audit_trail(settings(d), tmp_path)
    with pytest.raises(AuditError, match="another checkrein writer"):
        open_audit_trail(settings(d), tmp_path)
    await first.aclose()
    second = open_audit_trail(settings(d), tmp_path)
    await second.aclose()
    assert verify_log(d).exit_code == 0


def test_hostile_record_values_still_give_a_valid_event(tmp_path: Path) -> None:
    class Weird:
        def __repr__(self) -> str:
            return "Weird(password=hunter2hunter2)"

    d = tmp_path / "audit"
    rec = make_record(
        1,
        arguments={"b": b"\x00\xff", "s": {1, 2}, "n": float("nan"), "o": Weird(), 3: "int key"},
        result={"x": float("inf")},
        identity={"user": None, "roles": "admin", "source": 5},
        decision={"effect": "allow", "reasons": ["x" * 5000, 7], "approval": "yes"},
        duration_ms=float("nan"),
        result_flags=("injection", 42),  # type: ignore[arg-type]
    )
    write_log(d, [rec])
    call = next(json.loads(x) for x in read_lines(d) if b'"type":"call"' in x)
    assert check_event(call) is None
    assert "audit.args_not_canonical" in call["degraded"] and "audit.result_not_canonical" in call["degraded"]
    assert b"hunter2hunter2" not in b"".join(read_lines(d))
    assert verify_log(d).exit_code == 0
