"""The header's verify status: a real `checkrein audit verify` child on real logs, when it reruns,
and what a broken verifier run looks like."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from checkrein.ui.verify_status import VerifyMonitor, VerifyState, parse_report

from .helpers import call, write_audit

REPO_SRC = Path(__file__).resolve().parents[2] / "src"


def _settled(m: VerifyMonitor, timeout: float = 120) -> VerifyState:
    """Start a run if due and wait (bounded) until none is running."""
    deadline = time.monotonic() + timeout
    state, running = m.current()
    while running and time.monotonic() < deadline:
        time.sleep(0.05)
        state, running = m.current()
    assert not running, "verify did not finish in time"
    return state


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("verify-status") / "audit"
    write_audit(d, [call(i) for i in range(30)])
    return d


@pytest.fixture(autouse=True)
def _importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO_SRC))  # the child runs `python -m checkrein`


def test_a_valid_log_is_reported_valid_with_its_counts(log_dir: Path) -> None:
    """The first request starts a run; its result names the events and checkpoints checked."""
    m = VerifyMonitor(log_dir)
    assert m.current()[0].state == "pending"
    s = _settled(m)
    assert s.state == "valid" and s.events >= 31 and s.checkpoints >= 1 and s.bad_seq is None
    assert s.log_size == m.log_size()


def test_a_tampered_log_names_the_first_bad_seq(log_dir: Path, tmp_path: Path) -> None:
    """An edited line makes the status invalid, with the seq verify blames."""
    import shutil

    d = tmp_path / "audit"
    shutil.copytree(log_dir, d)
    seg = d / "segment-000001.jsonl"
    seg.write_bytes(seg.read_bytes().replace(b'"/srv/file-7.txt"', b'"/srv/file-X.txt"', 1))
    s = _settled(VerifyMonitor(d))
    assert s.state == "invalid" and s.bad_seq == 8 and s.problem and "seq 8" in s.problem


def test_reruns_wait_for_growth_and_the_interval(log_dir: Path, tmp_path: Path) -> None:
    """No rerun while the log is unchanged; after growth only once the interval has passed."""
    import shutil

    d = tmp_path / "audit"
    shutil.copytree(log_dir, d)
    now = [1000.0]
    m = VerifyMonitor(d, min_interval_s=60, clock=lambda: now[0])
    first = _settled(m)
    write_audit(d, [call(100)])
    now[0] += 1
    assert m.current() == (first, False)  # grown, but within the interval
    now[0] += 100_000
    assert m.current()[1] is True  # grown and due: a run started
    grown = _settled(m)
    assert grown.events > first.events
    now[0] += 100_000
    assert m.current() == (grown, False)  # unchanged: not due however long ago


def test_refresh_runs_now_and_close_stops_a_run(log_dir: Path) -> None:
    """refresh starts a run at once; close kills a running child and starts no more."""
    m = VerifyMonitor(log_dir, command=lambda d: [sys.executable, "-c", "import time; time.sleep(60)"])
    assert m.current(refresh=True)[1] is True
    m.close()
    s = _settled(m, timeout=30)
    assert s.state == "failed"
    assert m.current(refresh=True)[1] is False


def test_garbage_from_the_verifier_is_a_failure_not_a_pass() -> None:
    """Output that is not a report never reads as valid."""
    assert parse_report("not json", 0, 0.0, 10, 1.0).state == "failed"
    assert parse_report("[1]", 0, 0.0, 10, 1.0).state == "failed"
    assert parse_report('{"events": 3}', 2, 0.0, 10, 1.0).state == "unreadable"
