"""One contract, two backends (in process and a real Redis): budgets check every limit before
charging any, records expire, updates are atomic."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from checkrein.state import LimitCheck, MemoryState, SharedState
from checkrein.state.redis import RedisState

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["memory", "redis"])
async def state(request: pytest.FixtureRequest, redis_url: str) -> AsyncIterator[SharedState]:
    if request.param == "memory":
        yield MemoryState()
        return
    s = RedisState(redis_url, prefix=f"test:{uuid.uuid4().hex}:", timeout_s=2.0)
    try:
        yield s
    finally:
        await s.aclose()


async def test_a_cap_admits_exactly_n(state: SharedState) -> None:
    check = LimitCheck(session_key="cap:s1", max_calls=3)
    results = [await state.admit([check]) for _ in range(5)]
    assert [r.admitted for r in results] == [True, True, True, False, False]
    assert results[3].kind == "cap" and results[3].index == 0


async def test_a_bucket_holds_its_burst_and_says_when_to_retry(state: SharedState) -> None:
    check = LimitCheck(bucket_key="rate:t", rate_per_s=0.01, capacity=2)
    got = [await state.admit([check]) for _ in range(3)]
    assert [g.admitted for g in got] == [True, True, False]
    assert got[2].kind == "rate" and 50 < got[2].retry_in_s <= 100


async def test_a_refused_call_charges_nothing(state: SharedState) -> None:
    wide = LimitCheck(session_key="cap:wide", max_calls=10)
    narrow = LimitCheck(session_key="cap:narrow", max_calls=1)
    assert (await state.admit([wide, narrow])).admitted
    refused = await state.admit([wide, narrow])
    assert not refused.admitted and refused.index == 1
    for _ in range(9):  # the refusal above took nothing from `wide`: 9 left of 10
        assert (await state.admit([wide])).admitted
    assert not (await state.admit([wide])).admitted


async def test_records_round_trip_touch_and_delete(state: SharedState) -> None:
    await state.put("rec:a", {"x": [1, 2]}, ttl_s=60)
    assert await state.get("rec:a") == {"x": [1, 2]}
    assert await state.touch("rec:a", 60)
    await state.delete("rec:a")
    assert await state.get("rec:a") is None
    assert not await state.touch("rec:a", 60)


async def test_records_expire(state: SharedState) -> None:
    await state.put("rec:short", 1, ttl_s=0.05)
    with anyio.fail_after(10):
        while await state.get("rec:short") is not None:
            await anyio.sleep(0.02)


async def test_concurrent_updates_are_atomic(state: SharedState) -> None:
    def inc(v: Any) -> int:
        return (v or 0) + 1

    async with anyio.create_task_group() as tg:
        for _ in range(40):
            tg.start_soon(state.update, "flow:k", inc, 60.0)
    assert await state.get("flow:k") == 40


async def test_a_caller_cap_admits_n_whatever_the_sessions(state: SharedState) -> None:
    """The per-caller counter is one key for every session of that caller: n in all, then refused."""
    checks = [LimitCheck(session_key=f"cap:s{i}", max_calls=100, identity_key="cap:caller", identity_max=3) for i in range(5)]
    results = [await state.admit([c]) for c in checks]
    assert [r.admitted for r in results] == [True, True, True, False, False]
    assert results[3].kind == "identity" and results[3].index == 0
    assert (await state.admit([LimitCheck(identity_key="cap:other", identity_max=3)])).admitted


async def test_a_caller_cap_window_starts_again_and_says_when(state: SharedState) -> None:
    """A refusal inside the window says how long is left; once the window is over, calls pass again."""
    long = LimitCheck(identity_key="cap:hour", identity_max=2, identity_window_s=3600)
    assert [(await state.admit([long])).admitted for _ in range(3)] == [True, True, False]
    refused = await state.admit([long])
    assert refused.kind == "identity" and 3500 < refused.retry_in_s <= 3600
    short = LimitCheck(identity_key="cap:short", identity_max=1, identity_window_s=0.2)
    assert (await state.admit([short])).admitted
    with anyio.fail_after(10):
        while not (await state.admit([short])).admitted:
            await anyio.sleep(0.05)
