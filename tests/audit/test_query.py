"""The read side over a real log: filters, cursors, counts, breakdowns and filter values, each
checked over the SQLite index and over the JSONL scan (the index deleted), which must agree."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from checkrein.audit import LifecycleRecord
from checkrein.audit.query import (
    EventFilter,
    call_breakdown,
    call_values,
    count_events,
    event_at,
    query_events,
)
from checkrein.audit.sqlite_index import SERVER_EXPR, USER_EXPR

from .helpers import make_record, write_log

USERS = ("alice", "bob", "carol")
SERVERS = ("fs", "web")


def _record(i: int) -> object:
    server = SERVERS[i % 2]
    denied = i % 5 == 0
    return make_record(
        i,
        server=server,
        tool="get" if server == "web" else "read_file",
        exposed_name="web__get" if server == "web" else "fs__read_file",
        identity={"user": USERS[i % 3], "roles": [], "source": "token", "client": None},
        outcome="denied" if denied else "ok",
        decision={"effect": "deny" if denied else "allow", "rule_id": "no-web" if denied else "allow-all",
                  "reasons": ["web is off"] if denied else [], "risk": "low", "approval": None},
        duration_ms=float(i),
    )


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("query") / "audit"
    write_log(d, [LifecycleRecord("gateway.start", {}), *(_record(i) for i in range(60))])  # type: ignore[misc]
    return d


@pytest.fixture(scope="module")
def scanned(indexed: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("query-scan") / "audit"
    shutil.copytree(indexed, d)
    for f in d.glob("index.sqlite*"):
        f.unlink()
    return d


@pytest.fixture(params=["index", "scan"])
def log_dir(request: pytest.FixtureRequest, indexed: Path, scanned: Path) -> Path:
    return indexed if request.param == "index" else scanned


def _calls(d: Path, flt: EventFilter, **kw: object) -> list[dict[str, object]]:
    return query_events(d, flt, **kw)  # type: ignore[arg-type]


def test_server_and_user_filters_select_exactly_those_calls(log_dir: Path) -> None:
    """server and identity.user filters match exactly, alone and together."""
    web_bob = _calls(log_dir, EventFilter(server="web", user="bob"))
    expected = [i for i in range(60) if SERVERS[i % 2] == "web" and USERS[i % 3] == "bob"]
    assert [e["args_preview"]["n"] for e in web_bob] == expected  # type: ignore[index]
    assert count_events(log_dir, EventFilter(user="carol")) == 20


def test_seq_cursors_page_backwards_and_forwards(log_dir: Path) -> None:
    """before_seq gives the page older than a cursor, after_seq with first the page newer."""
    every = _calls(log_dir, EventFilter(calls_only=True))
    seqs = [e["seq"] for e in every]
    newest = _calls(log_dir, EventFilter(calls_only=True), limit=10)
    assert [e["seq"] for e in newest] == seqs[-10:]
    older = _calls(log_dir, EventFilter(calls_only=True, before_seq=newest[0]["seq"]), limit=10)  # type: ignore[arg-type]
    assert [e["seq"] for e in older] == seqs[-20:-10]
    newer = _calls(log_dir, EventFilter(calls_only=True, after_seq=older[-1]["seq"]), limit=5, first=True)  # type: ignore[arg-type]
    assert [e["seq"] for e in newer] == seqs[-10:-5]


def test_until_bounds_time_inclusively(log_dir: Path) -> None:
    """until keeps events stamped at or before it."""
    every = _calls(log_dir, EventFilter(calls_only=True))
    cut = str(every[29]["time"])
    upto = _calls(log_dir, EventFilter(calls_only=True, until=cut))
    assert upto and all(str(e["time"]) <= cut for e in upto) and every[29] in upto


def test_count_stops_at_the_cap(log_dir: Path) -> None:
    """count_events with a cap never counts past it."""
    assert count_events(log_dir, EventFilter(calls_only=True)) == 60
    assert count_events(log_dir, EventFilter(calls_only=True), cap=7) == 7
    assert count_events(log_dir, EventFilter(outcome="denied")) == 12


def test_event_at_finds_one_seq_or_none(log_dir: Path) -> None:
    """event_at returns the event with that seq, and None past the end."""
    assert event_at(log_dir, 3)["seq"] == 3  # type: ignore[index]
    assert event_at(log_dir, 10_000) is None


def test_breakdown_counts_rules_and_tool_percentiles(log_dir: Path) -> None:
    """call_breakdown counts decisions per rule and outcome and nearest-rank percentiles per tool."""
    b = call_breakdown(log_dir)
    assert b.calls == 60
    assert b.by_rule == {"no-web": {"denied": 12}, "allow-all": {"ok": 48}}
    web = b.latency["web__get"]  # durations 1, 3, 5, ..., 59
    assert (web.calls, web.p50_ms, web.p99_ms, web.max_ms) == (30, 29.0, 59.0, 59.0)


def test_breakdown_since_starts_at_the_first_event_stamped_then(log_dir: Path) -> None:
    """since bounds the breakdown to the calls from the first event stamped at or after it."""
    every = _calls(log_dir, EventFilter(calls_only=True))
    b = call_breakdown(log_dir, since=str(every[40]["time"]))
    assert b.from_seq is not None and b.from_seq <= every[40]["seq"]  # type: ignore[operator]
    assert 20 <= b.calls <= 60 - 1
    empty = call_breakdown(log_dir, since="9999-01-01T00:00:00.000000Z")
    assert empty.calls == 0 and empty.by_rule == {} and empty.from_seq is not None


def test_call_values_are_distinct_and_incremental(log_dir: Path) -> None:
    """call_values names every tool, server and user once, and only new ones after last_seq."""
    v = call_values(log_dir)
    assert v.servers == set(SERVERS) and v.users == set(USERS) and v.tools == {"web__get", "fs__read_file"}
    again = call_values(log_dir, after_seq=v.last_seq)
    assert again.tools == set() and again.last_seq == v.last_seq


def test_index_and_scan_agree(indexed: Path, scanned: Path) -> None:
    """Every query gives the same answer over the index and over the JSONL scan."""
    flt = EventFilter(server="fs", outcome="ok", before_seq=50)
    assert query_events(indexed, flt, limit=4) == query_events(scanned, flt, limit=4)
    assert count_events(indexed, flt) == count_events(scanned, flt)
    for bounded in (EventFilter(calls_only=True, before_seq=40), EventFilter(before_seq=40), EventFilter(tool="fs__*", before_seq=40),
                    EventFilter(calls_only=True, after_seq=20), EventFilter(user="carol", after_seq=10, before_seq=50)):
        assert count_events(indexed, bounded) == count_events(scanned, bounded), bounded  # `+seq` or a rowid range
    assert call_breakdown(indexed) == call_breakdown(scanned)
    assert call_values(indexed) == call_values(scanned)


def test_server_and_user_filters_use_their_indexes(indexed: Path) -> None:
    """The filters spell the indexed expressions, so SQLite searches those indexes."""
    db = sqlite3.connect(indexed / "index.sqlite")
    try:
        for expr, name in ((SERVER_EXPR, "events_call_server"), (USER_EXPR, "events_call_user")):
            plan = db.execute(f"EXPLAIN QUERY PLAN SELECT seq FROM events WHERE type = 'call' AND {expr} = ?", ("x",))
            assert any(name in str(row[3]) for row in plan)
    finally:
        db.close()


def test_rule_filter_selects_calls_decided_by_that_rule(log_dir: Path) -> None:
    """rule matches the decision's rule_id exactly, over every outcome."""
    denied = _calls(log_dir, EventFilter(rule="no-web"))
    assert len(denied) == 12 and all(e["decision"]["rule_id"] == "no-web" for e in denied)  # type: ignore[index]
    assert count_events(log_dir, EventFilter(rule="allow-all", server="fs")) == 24
    assert _calls(log_dir, EventFilter(rule="no-web"), limit=3) == denied[-3:]


def test_a_count_over_its_time_budget_is_none(tmp_path: Path, indexed: Path, scanned: Path) -> None:
    """count_events gives up (None) rather than scan past its budget, over the index or the JSONL."""
    d = tmp_path / "big"
    write_log(d, [_record(i) for i in range(3000)])  # type: ignore[misc]
    glob = EventFilter(tool="*get*")  # no index serves a glob that OR-s two columns
    assert count_events(d, glob, budget_s=-1) is None
    assert count_events(d, glob, budget_s=60) == 1500
    assert count_events(scanned, glob, budget_s=-1) is None
    assert count_events(indexed, glob) == 30
