"""Session flow state on a real Redis (`SharedFlowStore`): two gates as two replicas share one
session's flow, updates from both are compare-and-set, a new session inherits within the resume
window, and a Redis that is gone or a record that does not decode denies."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from gateway_support import CapturingTrail, make_config
from test_flow_step import Recorder, mail

from checkrein.config.policy import FlowSettings
from checkrein.errors import StateUnavailable
from checkrein.gate.flow_shared import SharedFlowStore, decode_flow_state, encode_flow_state
from checkrein.gate.pipeline import Gate
from checkrein.policy import Identity, ToolCall
from checkrein.policy.flow import FlowState, observe_task
from checkrein.state.redis import RedisState
from checkrein.testing.memory_upstream import MemoryUpstream
from checkrein.testing.services import RedisServer

pytestmark = pytest.mark.anyio

ALICE = Identity("alice", source="http")
TRACE = "1" * 32


def call(name: str, args: dict[str, Any] | None = None, *, session: str = "s1") -> ToolCall:
    return ToolCall(ALICE, session, TRACE, "2" * 16, name, args or {}, session_given=True)


async def replica(tmp_path: Path, up: MemoryUpstream, state: RedisState, approver: Recorder | None = None) -> Gate:
    tmp_path.mkdir(parents=True, exist_ok=True)
    config = make_config(tmp_path, {"allow": ["m__*"], "tools": {"m__*": {"risk": "medium"}}})
    gate = Gate(config, [up], CapturingTrail(), approver=approver, flows=SharedFlowStore(state, config.policy.flow))
    await gate.start()
    return gate


def text(result: Any) -> str:
    return "".join(getattr(b, "text", "") for b in result.content)


def test_a_state_survives_its_record() -> None:
    """Every field, the text logs with their sizes and drops included, comes back equal."""
    state = observe_task(FlowState(), "Send the report to accounts@corp.example", 4096)
    state = state.with_untrusted("m__read_inbox (call 1)").with_private("m__read_inbox (call 1)")
    state = state.distrust("m__read_inbox (call 1)", ["write to mark.black-2134@gmail.com " * 200], 4096)
    state = replace(state.distrust("m__web (call 2)", ["IBAN GB29 NWBK 6016 1331 9268 19"], 4096), calls=2)
    assert state.untrusted.dropped == 1
    assert decode_flow_state(encode_flow_state(state)) == state


@pytest.mark.parametrize(
    "record",
    [None, [], {"v": 2}, {"v": 1}, {**encode_flow_state(FlowState()), "calls": -1},
     {**encode_flow_state(FlowState()), "untrusted": {"e": [[1, "x"]], "n": 1, "d": 0}}],  # fmt: skip
)
def test_a_record_that_is_not_a_state_is_refused(record: Any) -> None:
    with pytest.raises(ValueError, match="flow state"):
        decode_flow_state(record)


async def test_a_session_moving_between_replicas_keeps_its_flow(tmp_path: Path, redis: RedisState) -> None:
    """The inbox is read through A; the send through B meets the Rule of Two (B never saw the read)."""
    up, approver = mail(), Recorder()
    a = await replica(tmp_path / "a", up, redis)
    b = await replica(tmp_path / "b", up, redis, approver)
    try:
        assert not (await a.call_tool(call("m__read_inbox"))).is_error
        result = await b.call_tool(call("m__send_email", {"to": "alice@corp.example"}))
        assert result.is_error and up.calls == [("read_inbox", {})]
        (req,) = approver.requests
        assert req.decision.rule_id == "flow:rule_of_two" and "m__read_inbox (call 1)" in req.decision.reason
        other = await b.call_tool(call("m__send_email", {"to": "alice@corp.example"}, session="s2-fresh"))
        # A fresh session of the same caller within the resume window inherits the read, too.
        assert other.is_error and len(approver.requests) == 2
    finally:
        await a.aclose()
        await b.aclose()


async def test_updates_from_two_replicas_at_once_lose_nothing(redis: RedisState) -> None:
    """Compare and set: 2 x 25 concurrent changes to one key all land."""
    one, two = SharedFlowStore(redis), SharedFlowStore(redis)
    key = ("alice", "session:busy")

    def bump(s: FlowState) -> FlowState:
        return replace(s, calls=s.calls + 1)

    async with anyio.create_task_group() as tg:
        for _ in range(25):
            tg.start_soon(one.update, key, 0.0, bump)
            tg.start_soon(two.update, key, 0.0, bump)
    assert (await one.get(key, 0.0)).calls == 50


async def test_a_new_session_inherits_only_within_the_window_and_only_its_callers(redis: RedisState) -> None:
    store = SharedFlowStore(redis, FlowSettings(resume_window_s=60))
    await store.update(("alice", "session:old"), 1000.0, lambda s: s.with_untrusted("web (call 1)"))
    assert (await store.get(("alice", "session:new"), 1030.0)).has_untrusted
    assert store.resumed == 1
    assert not (await store.get(("alice", "session:late"), 1061.0)).has_untrusted, "past the window"
    assert not (await store.get(("bob", "session:new"), 1030.0)).has_untrusted, "another caller"
    # An update of a new key starts from what it inherits, not from nothing.
    state = await store.update(("alice", "session:new"), 1031.0, lambda s: s.with_private("db (call 2)"))
    assert state.has_untrusted and state.has_private


async def test_a_record_that_does_not_decode_denies(tmp_path: Path, redis: RedisState) -> None:
    up = mail()
    gate = await replica(tmp_path, up, redis)
    store = gate.flows
    assert isinstance(store, SharedFlowStore)
    try:
        await redis.put(store._key(("alice", "session:s1")), {"v": 1, "calls": "many"}, 60)
        result = await gate.call_tool(call("m__read_inbox"))
        assert result.is_error and "(rule flow:error)" in text(result) and up.calls == []
    finally:
        await gate.aclose()


async def test_redis_gone_denies_with_state_unavailable_and_recovers(tmp_path: Path) -> None:
    """A killed redis-server: the call is refused before it reaches the upstream, then works again."""
    with RedisServer.start(tmp_path / "redis") as server:
        state = RedisState(server.url, timeout_s=0.5)
        up = mail()
        gate = await replica(tmp_path, up, state)
        try:
            assert not (await gate.call_tool(call("m__read_inbox"))).is_error
            await anyio.to_thread.run_sync(server.kill)
            with pytest.raises(StateUnavailable):
                await state.get("anything")
            refused = await gate.call_tool(call("m__read_inbox"))
            assert refused.is_error and "(rule state:unavailable)" in text(refused) and len(up.calls) == 1
            await anyio.to_thread.run_sync(server.restart)
            with anyio.fail_after(30):
                while (again := await gate.call_tool(call("m__read_inbox", session="s-after"))).is_error:
                    await anyio.sleep(0.1)
            assert "mark.black" in text(again)
        finally:
            await gate.aclose()
            await state.aclose()
