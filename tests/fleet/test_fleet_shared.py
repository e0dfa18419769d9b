"""Budgets and approval grants across two replicas behind nginx (one MCP session that round robin
moves between them): a budget of N allows N in total; a grant given through one replica is
honoured by the other; Redis killed mid-run refuses calls (state.unavailable) and recovers when
it returns."""

from __future__ import annotations

import anyio
import httpx2
import pytest

from checkrein.testing.fleet import Fleet

from .conftest import Webhook, client, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_a_budget_of_n_across_two_replicas_allows_n(shared_fleet: Fleet) -> None:
    with anyio.fail_after(120):
        async with client(shared_fleet) as c:
            results = [await c.call_tool("echo__header", {"name": "x"}) for _ in range(9)]
    allowed = [r for r in results if not r.is_error]
    refused = [r for r in results if r.is_error]
    assert len(allowed) == 5
    assert all("budget" in text_of(r) for r in refused)


async def test_a_grant_given_through_one_replica_is_honoured_by_the_other(shared_fleet: Fleet, webhook: Webhook) -> None:
    with anyio.fail_after(120):
        async with client(shared_fleet) as c:
            first = await c.call_tool("echo__add", {"a": 2, "b": 3})
            again = [await c.call_tool("echo__add", {"a": 2, "b": 3}) for _ in range(3)]
            other = await c.call_tool("echo__add", {"a": 2, "b": 4})
    assert not first.is_error and all(not r.is_error for r in again) and not other.is_error
    assert webhook.asked == 2  # once for (2, 3) on whichever replica, once for (2, 4); never again


async def test_redis_killed_mid_run_refuses_calls_and_recovers(shared_fleet: Fleet) -> None:
    """Budgets and session flow state live in Redis: without it every tool call is refused
    (state.unavailable) before it reaches the upstream, and calls pass again once it is back."""
    assert shared_fleet.redis is not None
    with anyio.fail_after(180):
        async with client(shared_fleet) as c:
            assert text_of(await c.call_tool("echo__echo", {"text": "before"})) == "before"
            await anyio.to_thread.run_sync(shared_fleet.redis.kill)
            refused = await c.call_tool("echo__slow", {"seconds": 0})
            assert refused.is_error and "state:unavailable" in text_of(refused)
            unbudgeted = await c.call_tool("echo__echo", {"text": "unbudgeted"})
            assert unbudgeted.is_error and "state:unavailable" in text_of(unbudgeted)
            await anyio.to_thread.run_sync(shared_fleet.redis.restart)
            while (r := await c.call_tool("echo__slow", {"seconds": 0})).is_error:
                await anyio.sleep(0.2)
            assert text_of(r) == "slept"
            assert text_of(await c.call_tool("echo__echo", {"text": "after"})) == "after"


async def test_a_session_moving_between_replicas_is_judged_on_its_whole_flow(shared_fleet: Fleet) -> None:
    """Untrusted private data read through one replica, then sink calls that round robin spreads
    over both: every one is refused by the Rule of Two, also on the replica that never saw the read.
    (Last in this module: the caller's flow state now holds untrusted data.)"""
    before = [await flow_denials(shared_fleet, i) for i in range(2)]
    with anyio.fail_after(120):
        async with client(shared_fleet) as c:
            assert not (await c.call_tool("echo__meta", {"key": "traceparent"})).is_error
            sinks = [await c.call_tool("echo__echo", {"text": f"out {i}"}) for i in range(4)]
    assert all(r.is_error and "(rule flow:rule_of_two)" in text_of(r) for r in sinks), [text_of(r) for r in sinks]
    after = [await flow_denials(shared_fleet, i) for i in range(2)]
    assert all(a > b for a, b in zip(after, before, strict=True)), (before, after)


async def flow_denials(fleet: Fleet, i: int) -> int:
    async with httpx2.AsyncClient(timeout=30, trust_env=False) as http:
        r = await http.get(fleet.replica_urls[i] + "/stats", headers={"Authorization": f"Bearer {fleet.token}"})
    assert r.status_code == 200
    return int(r.json()["counters"]["flow_denials"])
