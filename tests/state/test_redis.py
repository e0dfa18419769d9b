"""Redis-specific: two replicas share one budget; a killed server fails closed and recovers;
the fallback switch serves locally and reports every use."""

from __future__ import annotations

import uuid
from pathlib import Path

import anyio
import pytest

from checkrein.errors import StateUnavailable
from checkrein.state import FallbackState, LimitCheck, MemoryState
from checkrein.state.redis import RedisState
from checkrein.testing.services import RedisServer

pytestmark = pytest.mark.anyio


async def test_two_replicas_share_one_budget_under_concurrency(redis_url: str) -> None:
    prefix = f"test:{uuid.uuid4().hex}:"
    a, b = RedisState(redis_url, prefix=prefix, timeout_s=2), RedisState(redis_url, prefix=prefix, timeout_s=2)
    check = LimitCheck(bucket_key="rate:shared", rate_per_s=0.001, capacity=7)
    admitted: list[bool] = []

    async def one(replica: RedisState) -> None:
        admitted.append((await replica.admit([check])).admitted)

    async with anyio.create_task_group() as tg:
        for i in range(30):
            tg.start_soon(one, a if i % 2 else b)
    await a.aclose()
    await b.aclose()
    assert admitted.count(True) == 7


async def test_a_killed_redis_fails_closed_and_recovers(tmp_path: Path) -> None:
    with RedisServer.start(tmp_path / "r") as server:
        s = RedisState(server.url, timeout_s=0.5)
        check = LimitCheck(session_key="cap:x", max_calls=100)
        assert (await s.admit([check])).admitted
        await anyio.to_thread.run_sync(server.kill)
        with anyio.fail_after(10), pytest.raises(StateUnavailable) as exc:
            await s.admit([check])
        assert exc.value.code == "state.unavailable" and s.errors["admit"] >= 1
        await anyio.to_thread.run_sync(server.restart)
        with anyio.fail_after(20):
            while True:
                try:
                    assert (await s.admit([check])).admitted
                    break
                except StateUnavailable:
                    await anyio.sleep(0.1)
        await s.aclose()


async def test_fallback_deny_refuses_and_local_serves_and_reports(tmp_path: Path) -> None:
    with RedisServer.start(tmp_path / "r") as server:
        deny = FallbackState(RedisState(server.url, timeout_s=0.5), MemoryState(), mode="deny")
        used: list[tuple[str, str]] = []

        async def hook(op: str, why: str) -> None:
            used.append((op, why))

        local = FallbackState(RedisState(server.url, timeout_s=0.5), MemoryState(), mode="local", on_fallback=hook)
        await anyio.to_thread.run_sync(server.kill)
        with anyio.fail_after(10), pytest.raises(StateUnavailable):
            await deny.admit([LimitCheck(session_key="k", max_calls=1)])
        assert deny.unavailable == 1 and deny.fallbacks == 0
        with anyio.fail_after(10):
            assert (await local.admit([LimitCheck(session_key="k", max_calls=1)])).admitted
            assert not (await local.admit([LimitCheck(session_key="k", max_calls=1)])).admitted
        assert local.fallbacks == 2 and [op for op, _ in used] == ["admit", "admit"]
        await deny.aclose()
        await local.aclose()


async def test_two_clients_updating_one_key_at_once_lose_nothing(redis_url: str) -> None:
    """Two clients (two replicas' connections) race on one key: every change lands once, because a
    write that raced another is refused by the compare and set and done again on the new value."""
    prefix = f"test:{uuid.uuid4().hex}:"
    a, b = RedisState(redis_url, prefix=prefix, timeout_s=5), RedisState(redis_url, prefix=prefix, timeout_s=5)
    seen: list[int] = []

    def inc(v: object) -> dict[str, int]:
        n = (v or {"n": 0})["n"] + 1  # type: ignore[index]
        seen.append(n)
        return {"n": n}

    try:
        async with anyio.create_task_group() as tg:
            for _ in range(30):
                tg.start_soon(a.update, "race", inc, 60.0)
                tg.start_soon(b.update, "race", inc, 60.0)
        assert await a.get("race") == {"n": 60}
        assert sorted(set(seen))[-1] == 60 and len(set(seen)) == 60  # every value 1..60 was written once
    finally:
        await a.aclose()
        await b.aclose()
