"""`checkrein audit ...` through the real typer app."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from checkrein.audit import LifecycleRecord
from checkrein.cli.main import app

from .helpers import make_record, write_log

runner = CliRunner()


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("cli") / "audit"
    records = [LifecycleRecord("gateway.start", {"config_digest": "sha256:1"})]
    records += [make_record(i) for i in range(20)]
    records += [make_record(i, outcome="denied", error_code="policy.denied", result=None,
                            decision={"effect": "deny", "rule_id": "no-shell", "reasons": [], "risk": "high", "approval": None})
                for i in range(20, 23)]
    records += [make_record(30, outcome="error", error_code="upstream.timeout")]
    write_log(d, records)
    return d


def test_verify_of_an_unsigned_log_exits_3_and_says_what_it_cannot_detect(log_dir: Path) -> None:
    """Nothing outside the log vouched for it: consistent, but a rewrite or a cut would pass too."""
    res = runner.invoke(app, ["audit", "verify", str(log_dir)])
    assert res.exit_code == 3 and res.output.startswith("VALID (UNANCHORED):"), res.output
    for attack in ("rewrite of the whole chain", "cut back to an earlier clean shutdown", "fork"):
        assert attack in res.output
    data = json.loads(runner.invoke(app, ["audit", "verify", str(log_dir), "--json"]).output)
    assert data["exit_code"] == 3 and not data["anchored"] and len(data["undetected"]) == 3


def test_verify_json_reports_counts(log_dir: Path) -> None:
    res = runner.invoke(app, ["audit", "verify", str(log_dir), "--json"])
    data = json.loads(res.output)
    assert data["valid"] and data["events"] >= 25 and data["sqlite_checked"]


def test_verify_tampered_log_exits_1_naming_the_seq(log_dir: Path, tmp_path: Path) -> None:
    import shutil

    work = tmp_path / "t"
    shutil.copytree(log_dir, work)
    seg = work / "segment-000001.jsonl"
    seg.write_bytes(seg.read_bytes().replace(b'"trace_id":"trace-5"', b'"trace_id":"trace-6"', 1))
    res = runner.invoke(app, ["audit", "verify", str(work)])
    assert res.exit_code == 1 and "INVALID: seq 7" in res.output


def test_verify_anchor_option_checks_a_recorded_head(log_dir: Path) -> None:
    last = json.loads((log_dir / "segment-000001.jsonl").read_bytes().splitlines()[-1])
    ok = runner.invoke(app, ["audit", "verify", str(log_dir), "--anchor", f"{last['seq']}:{last['hash']}"])
    assert ok.exit_code == 0
    past = runner.invoke(app, ["audit", "verify", str(log_dir), "--anchor", f"{last['seq'] + 5}:{last['hash']}"])
    assert past.exit_code == 1 and "past the end" in past.output
    assert runner.invoke(app, ["audit", "verify", str(log_dir), "--anchor", "x:y"]).exit_code == 2


def test_verify_missing_dir_exits_2(tmp_path: Path) -> None:
    res = runner.invoke(app, ["audit", "verify", str(tmp_path / "missing")])
    assert res.exit_code == 2


def test_query_filters_by_outcome_tool_and_trace(log_dir: Path) -> None:
    res = runner.invoke(app, ["audit", "query", str(log_dir), "--outcome", "denied", "--json"])
    events = [json.loads(x) for x in res.output.splitlines()]
    assert res.exit_code == 0 and len(events) == 3 and {e["decision"]["rule_id"] for e in events} == {"no-shell"}
    res = runner.invoke(app, ["audit", "query", str(log_dir), "--tool", "fs__read*", "--json"])
    assert all(json.loads(x)["exposed_name"] == "fs__read_file" for x in res.output.splitlines())
    res = runner.invoke(app, ["audit", "query", str(log_dir), "--trace", "trace-4", "--json"])
    assert [json.loads(x)["trace_id"] for x in res.output.splitlines()] == ["trace-4"]
    res = runner.invoke(app, ["audit", "query", str(log_dir), "--since", "2h", "--session", "session-1", "--json"])
    assert res.exit_code == 0 and res.output and all(json.loads(x)["session_id"] == "session-1" for x in res.output.splitlines())


def test_query_scans_jsonl_when_the_index_is_gone(log_dir: Path, tmp_path: Path) -> None:
    import shutil

    work = tmp_path / "noindex"
    shutil.copytree(log_dir, work)
    (work / "index.sqlite").unlink()
    res = runner.invoke(app, ["audit", "query", str(work), "--outcome", "error", "--json"])
    assert [json.loads(x)["error_code"] for x in res.output.splitlines()] == ["upstream.timeout"]


def test_query_bad_since_is_a_usage_error(log_dir: Path) -> None:
    res = runner.invoke(app, ["audit", "query", str(log_dir), "--since", "yesterday-ish"])
    assert res.exit_code == 2


def test_stats_counts_calls_denials_errors_and_durations(log_dir: Path) -> None:
    res = runner.invoke(app, ["audit", "stats", str(log_dir), "--json"])
    s = json.loads(res.output)
    assert s["calls"] == 24 and s["denials_by_rule"] == {"no-shell": 3}
    assert s["errors_by_code"] == {"upstream.timeout": 1}
    assert s["duration_by_tool"]["fs__read_file"]["p99_ms"] >= s["duration_by_tool"]["fs__read_file"]["p50_ms"]
    text = runner.invoke(app, ["audit", "stats", str(log_dir)])
    assert "denials by rule" in text.output and "p99" in text.output


def test_tail_no_follow_prints_the_last_events(log_dir: Path) -> None:
    res = runner.invoke(app, ["audit", "tail", str(log_dir), "--no-follow", "-n", "3", "--json"])
    events = [json.loads(x) for x in res.output.splitlines()]
    assert len(events) == 3 and events[-1]["type"] == "checkpoint"


def test_tail_follow_sees_events_written_after_it_started(tmp_path: Path) -> None:
    import threading

    from checkrein.audit.query import follow_events

    d = tmp_path / "audit"
    write_log(d, [make_record(1)])
    following = threading.Event()

    def late_writer() -> None:
        if following.wait(20):
            write_log(d, [make_record(2, trace_id="late-event")])

    t = threading.Thread(target=late_writer)
    t.start()
    seen: list[str] = []

    def stop() -> bool:
        following.set()  # called once the follower has its starting offset
        return "late-event" in seen

    for e in follow_events(d, last=0, timeout_s=20, poll_s=0.02, stop=stop):
        seen.append(str(e.get("trace_id")))
    t.join(timeout=20)
    assert "late-event" in seen


def test_keygen_writes_a_0600_private_key_and_refuses_to_overwrite(tmp_path: Path) -> None:
    res = runner.invoke(app, ["audit", "keygen", "--out", str(tmp_path / "k")])
    assert res.exit_code == 0
    key = tmp_path / "k" / "audit-signing.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert "PRIVATE" not in res.output and key.read_text().splitlines()[1] not in res.output
    again = runner.invoke(app, ["audit", "keygen", "--out", str(tmp_path / "k")])
    assert again.exit_code == 2


def test_reindex_rebuilds_an_index_that_verifies(log_dir: Path, tmp_path: Path) -> None:
    import shutil

    work = tmp_path / "re"
    shutil.copytree(log_dir, work)
    (work / "index.sqlite").write_bytes(b"garbage")
    assert runner.invoke(app, ["audit", "verify", str(work)]).exit_code == 1
    res = runner.invoke(app, ["audit", "reindex", str(work)])
    assert res.exit_code == 0, res.output
    assert runner.invoke(app, ["audit", "verify", str(work)]).exit_code == 3  # consistent; unsigned


def test_resource_reads_and_prompt_gets_are_call_events_with_their_kind(tmp_path: Path) -> None:
    d = tmp_path / "audit"
    write_log(d, [make_record(1, kind="resource", exposed_name="fs__file:///a.txt", tool="file:///a.txt"),
                  make_record(2, kind="prompt", exposed_name="docs__summarize", tool="summarize")])
    res = runner.invoke(app, ["audit", "query", str(d), "--tool", "docs__*", "--json"])
    assert [json.loads(x)["kind"] for x in res.output.splitlines()] == ["prompt"]
    s = json.loads(runner.invoke(app, ["audit", "stats", str(d), "--json"]).output)
    assert s["calls_by_kind"] == {"resource": 1, "prompt": 1}


def test_query_limit_returns_the_last_matches_in_order(log_dir: Path) -> None:
    res = runner.invoke(app, ["audit", "query", str(log_dir), "--outcome", "ok", "--limit", "3", "--json"])
    traces = [json.loads(x)["trace_id"] for x in res.output.splitlines()]
    assert traces == ["trace-17", "trace-18", "trace-19"]
