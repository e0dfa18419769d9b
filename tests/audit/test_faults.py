"""Fault injection (ENOSPC, EIO) at every step of a write: fail closed, recover, never corrupt."""

from __future__ import annotations

import errno
import json
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from checkrein.audit import audit_stats, open_audit_trail
from checkrein.audit.trail import AuditTrailImpl
from checkrein.audit.verify import verify_log
from checkrein.errors import AuditUnavailable
from checkrein.testing.faulty_file import FaultPlan

from .helpers import make_record, read_lines, settings


async def _until(cond: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    with anyio.fail_after(timeout):
        while not cond():
            await anyio.sleep(0.005)


def _traces(d: Path) -> list[str]:
    return [e["trace_id"] for e in map(json.loads, read_lines(d)) if e["type"] == "call"]


def _arm(plan: FaultPlan, step: str, code: int) -> None:
    if step == "truncate":
        # A truncate happens only to undo a failed write: fail one write half-way, then truncates.
        plan.fail("write", code, times=1, partial=True)
        plan.fail("truncate", code)
    elif step == "write":
        plan.fail("write", code, partial=True)
    else:
        plan.fail(step, code)


@pytest.mark.anyio
@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO], ids=["ENOSPC", "EIO"])
@pytest.mark.parametrize("step", ["write", "sync", "truncate", "open"])
async def test_write_failure_denies_calls_until_the_disk_recovers(tmp_path: Path, step: str, code: int) -> None:
    d = tmp_path / "audit"
    plan = FaultPlan()
    # For `open`, a tiny segment size makes the next batch rotate into a new file.
    extra = {"segment_max_bytes": 4096} if step == "open" else {}
    trail: AuditTrailImpl = open_audit_trail(
        settings(d, retry_interval_s=0.01, **extra), tmp_path, opener=plan.opener
    )
    accepted: list[str] = []
    for i in range(8 if step == "open" else 3):
        await trail.record_call(make_record(i, arguments={"pad": "p" * 600}))
        accepted.append(f"trace-{i}")
    await _until(lambda: trail.counters["events_written"] >= len(accepted), "first events written")

    _arm(plan, step, code)
    await trail.record_call(make_record(100))  # queued while writable; its write fails
    accepted.append("trace-100")
    await _until(lambda: not trail.writable(), "fail closed")
    with pytest.raises(AuditUnavailable):
        await trail.record_call(make_record(101))
    assert trail.counters["rejected_unwritable"] == 1
    # stays closed across several retries while the fault lasts
    await _until(lambda: trail.counters["write_errors"] >= 3, "retries")
    assert not trail.writable()
    assert trail.counters["write_errors"] >= 1

    plan.clear()
    await _until(trail.writable, "writable again")
    await trail.record_call(make_record(102))
    accepted.append("trace-102")
    await trail.aclose()

    traces = _traces(d)
    assert sorted(traces) == sorted(accepted)  # none lost, none duplicated, the rejected one absent
    resumed = [e for e in map(json.loads, read_lines(d)) if e.get("event") == "audit.resumed"]
    # one outage, however many retries it took: exactly one resumed event
    assert len(resumed) == 1 and resumed[0]["fields"]["rejected_unwritable"] == 1
    report = verify_log(d)
    assert report.exit_code == 0, report.problem
    stats = audit_stats(d)
    assert stats["trail"]["outages"] == 1 and stats["trail"]["rejected_unwritable"] == 1


@pytest.mark.anyio
async def test_durable_call_raises_when_its_event_cannot_be_synced(tmp_path: Path) -> None:
    d = tmp_path / "audit"
    plan = FaultPlan()
    trail = open_audit_trail(settings(d, durability="durable", retry_interval_s=0.01), tmp_path, opener=plan.opener)
    plan.fail("sync", errno.EIO)
    with anyio.fail_after(10), pytest.raises(AuditUnavailable):
        await trail.record_call(make_record(1))
    plan.clear()
    await _until(trail.writable, "writable again")
    with anyio.fail_after(10):
        await trail.record_call(make_record(2))
        await trail.aclose()
    # The failed event is written once the disk works: on record, but never twice.
    assert sorted(_traces(d)) == ["trace-1", "trace-2"]
    assert verify_log(d).exit_code == 0


@pytest.mark.anyio
async def test_on_failure_allow_lets_calls_through_and_audits_each_use(tmp_path: Path) -> None:
    d = tmp_path / "audit"
    plan = FaultPlan()
    trail = open_audit_trail(settings(d, on_failure="allow", retry_interval_s=0.01), tmp_path, opener=plan.opener)
    plan.fail("write", errno.ENOSPC, partial=True)
    await trail.record_call(make_record(1))
    await _until(lambda: not trail.writable(), "failing")
    for i in range(2, 5):
        await trail.record_call(make_record(i))  # no exception: the operator chose to fail open
    assert trail.counters["failed_open"] == 3
    plan.clear()
    await _until(trail.writable, "writable again")
    await trail.aclose()
    events = list(map(json.loads, read_lines(d)))
    opened = [e for e in events if e["type"] == "call" and "audit.failed_open" in e["degraded"]]
    assert len(opened) == 3
    resumed = next(e for e in events if e.get("event") == "audit.resumed")
    assert resumed["fields"]["failed_open"] == 3
    assert verify_log(d).exit_code == 0


def test_unwritable_directory_refuses_to_open(tmp_path: Path) -> None:
    plan = FaultPlan()
    plan.fail("open", errno.EACCES)
    with pytest.raises(AuditUnavailable, match="cannot write the audit log"):
        open_audit_trail(settings(tmp_path / "audit"), tmp_path, opener=plan.opener)


@pytest.mark.anyio
async def test_full_queue_denies_instead_of_dropping(tmp_path: Path) -> None:
    d = tmp_path / "audit"
    plan = FaultPlan()
    trail = open_audit_trail(settings(d, max_queue=2, retry_interval_s=0.01), tmp_path, opener=plan.opener)
    plan.fail("sync", errno.EIO)
    await trail.record_call(make_record(1))
    await _until(lambda: not trail.writable(), "failing")
    with pytest.raises(AuditUnavailable):
        await trail.record_call(make_record(2))
    assert trail.counters["dropped"] == 0
    plan.clear()
    await _until(trail.writable, "writable again")
    await trail.aclose()
    assert verify_log(d).exit_code == 0
