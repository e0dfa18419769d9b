"""In-process budgets: token buckets and per-session caps per tool, server and identity (fake clock)."""

from __future__ import annotations

from dataclasses import replace

from _policy_helpers import call
from hypothesis import given, settings
from hypothesis import strategies as st

from checkrein.config import parse_config
from checkrein.gate.budget import InProcessBudget
from checkrein.policy import Identity


def budget(toml: str) -> InProcessBudget:
    return InProcessBudget(parse_config(toml).budgets)


def admitted(b: InProcessBudget, n: int, exposed: str = "fs__read", now: float = 0.0, **kw: object) -> int:
    c = replace(call(exposed), **kw)  # type: ignore[arg-type]
    return sum(b.admit(c, now).admitted for _ in range(n))


def test_no_limits_admits_everything() -> None:
    assert admitted(budget(""), 100) == 100


def test_a_token_bucket_allows_the_burst_then_refills_at_the_rate() -> None:
    b = budget('[[budgets.limits]]\nscope = "tool"\nmatch = "fs__*"\nrate_per_s = 2\nburst = 5\n')
    assert admitted(b, 10, now=0.0) == 5
    assert admitted(b, 10, now=1.0) == 2  # one second refills two tokens
    assert admitted(b, 10, now=100.0) == 5  # never more than the burst


def test_the_refusal_names_the_limit_and_when_to_retry() -> None:
    b = budget('[[budgets.limits]]\nscope = "tool"\nrate_per_s = 1\n')
    assert b.admit(call("fs__read"), 0.0).admitted
    v = b.admit(call("fs__read"), 0.5)
    assert not v.admitted
    assert v.rule_id == "budget:tool:*"
    assert "retry in 0.50 s" in v.reason


def test_time_going_backwards_refills_nothing() -> None:
    b = budget('[[budgets.limits]]\nscope = "tool"\nrate_per_s = 1\n')
    assert admitted(b, 1, now=100.0) == 1
    assert admitted(b, 1, now=50.0) == 0


def test_each_tool_has_its_own_bucket_under_one_glob() -> None:
    b = budget('[[budgets.limits]]\nscope = "tool"\nmatch = "fs__*"\nrate_per_s = 1\n')
    assert admitted(b, 3, "fs__read") == 1
    assert admitted(b, 3, "fs__write") == 1
    assert admitted(b, 3, "db__query") == 3  # not matched: unlimited


def test_per_session_cap_counts_per_session() -> None:
    b = budget('[[budgets.limits]]\nscope = "server"\nmatch = "fs"\nmax_calls_per_session = 3\n')
    assert admitted(b, 5, session_id="a") == 3
    assert admitted(b, 5, session_id="b") == 3
    v = b.admit(replace(call("fs__read"), session_id="a"), 0.0)
    assert not v.admitted and "cap of 3" in v.reason
    b.forget_session("a")
    assert admitted(b, 1, session_id="a") == 1


def test_server_scope_covers_every_tool_of_the_server() -> None:
    b = budget('[[budgets.limits]]\nscope = "server"\nmatch = "fs"\nrate_per_s = 1\nburst = 2\n')
    assert admitted(b, 1, "fs__read") + admitted(b, 1, "fs__write") + admitted(b, 1, "fs__list") == 2


def test_identity_scope_limits_each_identity_separately() -> None:
    b = budget('[[budgets.limits]]\nscope = "identity"\nmatch = "*"\nrate_per_s = 1\n')
    assert admitted(b, 3, identity=Identity("alice")) == 1
    assert admitted(b, 3, identity=Identity("bob")) == 1


def test_a_refused_call_charges_no_other_limit() -> None:
    toml = (
        '[[budgets.limits]]\nscope = "identity"\nrate_per_s = 1\nburst = 10\n'
        '[[budgets.limits]]\nscope = "tool"\nmatch = "fs__write"\nmax_calls_per_session = 1\n'
    )
    b = budget(toml)
    assert admitted(b, 5, "fs__write") == 1  # the cap refuses 4 calls...
    assert admitted(b, 20, "fs__read") == 9  # ...which cost nothing from the identity bucket
    assert b.refused == 4 + 11


def test_rate_without_burst_defaults_to_the_ceiling_of_the_rate() -> None:
    b = budget('[[budgets.limits]]\nscope = "tool"\nrate_per_s = 2.5\n')
    assert admitted(b, 10) == 3


@settings(max_examples=200, deadline=None)
@given(
    rate=st.floats(0.5, 20),
    burst=st.integers(1, 10),
    gaps=st.lists(st.floats(0, 2), min_size=1, max_size=60),
)
def test_a_bucket_never_admits_more_than_burst_plus_refill(rate: float, burst: int, gaps: list[float]) -> None:
    b = budget(f'[[budgets.limits]]\nscope = "tool"\nrate_per_s = {rate}\nburst = {burst}\n')
    now, admitted_count = 0.0, 0
    for gap in gaps:
        now += gap
        admitted_count += b.admit(call("fs__read"), now).admitted
    assert admitted_count <= burst + rate * now + 1e-9


@settings(max_examples=100, deadline=None)
@given(rate=st.floats(0.5, 20), n=st.integers(1, 50))
def test_calls_spaced_at_the_rate_are_always_admitted(rate: float, n: int) -> None:
    b = budget(f'[[budgets.limits]]\nscope = "tool"\nrate_per_s = {rate}\nburst = 1\n')
    assert all(b.admit(call("fs__read"), i / rate).admitted for i in range(n))


def test_per_identity_cap_holds_across_sessions_and_reconnects() -> None:
    """A caller cannot reset a per-identity cap by opening new sessions; another caller has its own."""
    b = budget('[[budgets.limits]]\nscope = "tool"\nmatch = "fs__*"\nmax_calls_per_identity = 3\n')
    ci, ops = Identity("ci", source="token"), Identity("ops", source="token")
    assert admitted(b, 2, session_id="a", identity=ci) == 2
    assert admitted(b, 5, session_id="b", identity=ci) == 1, "a new session continues the count"
    b.forget_session("a")
    b.forget_session("b")
    v = b.admit(replace(call("fs__read"), session_id="c", identity=ci), 0.0)
    assert not v.admitted and "cap of 3 calls" in v.reason and "'ci'" in v.reason
    assert admitted(b, 5, session_id="c", identity=ops) == 3
    assert admitted(b, 5, session_id="c", identity=Identity("ci", source="stdio")) == 3, "another source, another caller"


def test_per_identity_cap_window_starts_again() -> None:
    """With identity_window_s the count starts again once the window has passed."""
    b = budget('[[budgets.limits]]\nscope = "server"\nmatch = "fs"\nmax_calls_per_identity = 2\nidentity_window_s = 60\n')
    assert admitted(b, 5, now=0.0) == 2
    v = b.admit(call("fs__read"), 30.0)
    assert not v.admitted and "per 60 s" in v.reason and "retry in 30 s" in v.reason
    assert admitted(b, 5, now=59.0) == 0
    assert admitted(b, 5, now=60.0) == 2


def test_a_window_without_an_identity_cap_is_a_config_error() -> None:
    """identity_window_s alone limits nothing: the config says so."""
    import pytest

    with pytest.raises(Exception, match="identity_window_s"):
        budget('[[budgets.limits]]\nscope = "tool"\nrate_per_s = 1\nidentity_window_s = 5\n')
