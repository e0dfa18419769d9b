"""Budgets on a real Redis (`SharedBudget`), two instances standing for two replicas: a per-caller
cap of N allows N over every session and both replicas, and its refusal says what and when."""

from __future__ import annotations

import pytest

from checkrein.config import parse_config
from checkrein.gate.shared import SharedBudget
from checkrein.policy import Identity, ToolCall
from checkrein.state.redis import RedisState

pytestmark = pytest.mark.anyio

CI = Identity("ci", source="token")


def call(session: str, who: Identity = CI, name: str = "fs__read") -> ToolCall:
    return ToolCall(who, session, "1" * 32, "2" * 16, name, {}, session_given=True)


def replicas(redis: RedisState, toml: str) -> tuple[SharedBudget, SharedBudget]:
    settings = parse_config(toml).budgets
    return SharedBudget(settings, redis), SharedBudget(settings, redis)


async def test_a_caller_cap_holds_across_replicas_and_sessions(redis: RedisState) -> None:
    a, b = replicas(redis, '[[budgets.limits]]\nscope = "tool"\nmatch = "fs__*"\nmax_calls_per_identity = 3\n')
    verdicts = [await (a if i % 2 else b).admit(call(f"s{i}"), 0.0) for i in range(6)]
    assert [v.admitted for v in verdicts] == [True, True, True, False, False, False]
    refused = verdicts[3]
    assert refused.rule_id == "budget:tool:fs__*"
    assert refused.reason is not None and "cap of 3 calls for caller 'ci'" in refused.reason
    assert (await a.admit(call("s9", Identity("ops", source="token")), 0.0)).admitted, "another caller"
    assert (await b.admit(call("s9", Identity("ci", source="stdio")), 0.0)).admitted, "another source, another caller"


async def test_a_windowed_caller_cap_says_when_it_starts_again(redis: RedisState) -> None:
    a, b = replicas(
        redis, '[[budgets.limits]]\nscope = "server"\nmatch = "fs"\nmax_calls_per_identity = 2\nidentity_window_s = 3600\n'
    )
    assert (await a.admit(call("s1"), 0.0)).admitted and (await b.admit(call("s2"), 0.0)).admitted
    refused = await a.admit(call("s3"), 0.0)
    assert not refused.admitted and refused.reason is not None
    assert "per 3600 s" in refused.reason and ("retry in 3600 s" in refused.reason or "retry in 3599 s" in refused.reason)


async def test_session_and_caller_caps_together_refuse_at_the_first_reached(redis: RedisState) -> None:
    a, b = replicas(
        redis, '[[budgets.limits]]\nscope = "tool"\nmax_calls_per_session = 2\nmax_calls_per_identity = 3\n'
    )
    assert [(await a.admit(call("one"), 0.0)).admitted for _ in range(3)] == [True, True, False]
    assert [(await b.admit(call("two"), 0.0)).admitted for _ in range(2)] == [True, False]
    v = await b.admit(call("three"), 0.0)
    assert not v.admitted and v.reason is not None and "for caller 'ci'" in v.reason
