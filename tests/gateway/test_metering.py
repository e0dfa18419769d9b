"""What the gate feeds the registry: decisions by effect and rule, latency per tool and per step,
its own counters read at scrape time, and the snapshot in the closing audit event."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gateway_support import CapturingTrail, make_config
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from checkrein.gate.metering import stats_view
from checkrein.gate.pipeline import Gate
from checkrein.policy import Identity, ToolCall
from checkrein.testing.memory_upstream import MemoryUpstream

pytestmark = pytest.mark.anyio

ME = Identity("alice", source="stdio")


def call(name: str, args: dict[str, Any] | None = None) -> ToolCall:
    return ToolCall(ME, "s1", "0" * 31 + "1", "0" * 15 + "1", name, args or {})


async def started(tmp_path: Path, policy: dict[str, Any]) -> tuple[Gate, CapturingTrail]:
    up = MemoryUpstream("a")
    up.add_tool("echo", lambda a: str(a.get("text", "")), annotations={"readOnlyHint": True})
    up.add_tool("write", lambda a: "written")
    trail = CapturingTrail()
    gate = Gate(make_config(tmp_path, policy), [up], trail)
    await gate.start()
    return gate, trail


def samples(gate: Gate) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(gate.telemetry.metrics.render().decode())
        for s in f.samples
    }


async def test_decisions_are_counted_by_effect_and_rule(tmp_path: Path) -> None:
    gate, trail = await started(tmp_path, {"allow": ["a__echo"]})
    await gate.call_tool(call("a__echo", {"text": "x"}))
    await gate.call_tool(call("a__echo", {"text": "y"}))
    await gate.call_tool(call("a__write"))
    await gate.call_tool(call("a__nope"))
    got = samples(gate)
    allow_rule = trail.calls[0].decision["rule_id"]
    deny_rule = trail.calls[2].decision["rule_id"]
    assert got[("checkrein_decisions_total", (("effect", "allow"), ("rule", allow_rule)))] == 2
    assert got[("checkrein_decisions_total", (("effect", "deny"), ("rule", deny_rule)))] == 1
    assert got[("checkrein_decisions_total", (("effect", "deny"), ("rule", "catalog:not_found")))] == 1
    assert got[("checkrein_gate_calls_total", ())] == 4
    assert got[("checkrein_gate_not_found_total", ())] == 1


async def test_latency_per_tool_bounds_unknown_names_and_covers_every_step(tmp_path: Path) -> None:
    gate, _ = await started(tmp_path, {"allow": ["a__*"]})
    await gate.call_tool(call("a__echo", {"text": "x"}))
    for i in range(5):
        await gate.call_tool(call(f"a__made_up_{i}"))
    got = samples(gate)
    assert got[("checkrein_call_duration_seconds_count", (("kind", "tool"), ("outcome", "ok"), ("tool", "a__echo")))] == 1
    unknown = [k for k in got if k[0] == "checkrein_call_duration_seconds_count" and ("outcome", "not_found") in k[1]]
    assert len(unknown) == 1 and ("tool", "(unknown)") in unknown[0][1]
    assert got[unknown[0]] == 5
    steps = {dict(k[1])["step"]: v for k, v in got.items() if k[0] == "checkrein_step_duration_seconds_count"}
    assert set(steps) >= {"audit", "catalog", "writable", "policy", "approval", "budget", "inspect", "forward"}
    assert steps["catalog"] == 6 and steps["forward"] == 1 and steps["policy"] == 1


async def test_upstream_and_audit_sources_and_stats_view_read_the_registry(tmp_path: Path) -> None:
    gate, _ = await started(tmp_path, {"allow": ["a__*"]})
    await gate.call_tool(call("a__echo", {"text": "x"}))
    got = samples(gate)
    assert got[("checkrein_upstream_up", (("server", "a"), ("transport", "memory")))] == 1
    view = stats_view(gate)
    assert view["counters"] == gate.counters.as_dict()
    assert view["metrics"]["checkrein_gate_calls_total"] == 1
    gate.counters.upstream_errors += 7  # counted by its owner, seen at the next read
    assert stats_view(gate)["counters"]["upstream_errors"] == 7


async def test_the_closing_audit_event_carries_the_snapshot(tmp_path: Path) -> None:
    gate, trail = await started(tmp_path, {"allow": ["a__*"]})
    await gate.call_tool(call("a__echo", {"text": "x"}))
    await gate.aclose()
    (stop,) = [r for r in trail.lifecycle if r.event == "gateway.stop"]
    assert stop.fields["metrics"]["checkrein_gate_calls_total"] == 1
    assert stop.fields["counters"]["calls"] == 1


class _Clock:
    """A perf_counter that moves only when a step says so (integer seconds: sums are exact)."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


def _program_steps(clock: _Clock, program: list[tuple[int, int, int]]) -> list[Any]:
    """One step per ``(before, after, nexts)``: spends ``before``, calls on ``nexts`` times, spends ``after``."""
    from checkrein.gate.chain import fail

    steps: list[Any] = []
    for i, (before, after, nexts) in enumerate(program):

        async def run(self: Any, ctx: Any, call_next: Any, b: int = before, a: int = after, n: int = nexts) -> Any:
            clock.now += b
            out = fail(ctx, "x.y", "error", "no next")
            for _ in range(n):
                out = await call_next(ctx)
            clock.now += a
            return out

        steps.append(type(f"S{i}Step", (), {"__call__": run})())  # step_name: "s{i}"
    return steps


def _reference_self_times(clock: _Clock, program: list[tuple[int, int, int]], forward: int) -> dict[str, list[float]]:
    """The general mechanism (a wrapper of ``call_next`` per step and call), run on ``program``."""
    import anyio

    from checkrein.gate.chain import CallContext, CallOutcome

    seen: dict[str, list[float]] = {}

    def timed(name: str, step: Any) -> Any:
        async def run(ctx: Any, call_next: Any) -> Any:
            inner = 0.0

            async def timed_next(c: Any) -> Any:
                nonlocal inner
                t = clock.perf_counter()
                try:
                    return await call_next(c)
                finally:
                    inner += clock.perf_counter() - t

            t0 = clock.perf_counter()
            try:
                return await step(ctx, timed_next)
            finally:
                seen.setdefault(name, []).append(clock.perf_counter() - t0 - inner)

        return run

    async def terminal(ctx: Any) -> CallOutcome:
        t0 = clock.perf_counter()
        clock.now += forward
        seen.setdefault("forward", []).append(clock.perf_counter() - t0)
        return CallOutcome(ctx, "ok")

    nxt: Any = terminal
    for i, step in reversed(list(enumerate(_program_steps(clock, program)))):
        nxt = (lambda s, n: lambda ctx: s(ctx, n))(timed(f"s{i}", step), nxt)
    anyio.run(nxt, CallContext(call("a__echo"), 0.0, None))  # type: ignore[arg-type]
    return seen


step_programs = st.lists(
    st.tuples(st.integers(0, 50), st.integers(0, 50), st.sampled_from([0, 1, 1, 1, 2])), min_size=1, max_size=6
)


@settings(max_examples=60, deadline=None)
@given(program=step_programs, forward=st.integers(0, 50))
def test_step_self_times_agree_with_a_wrapper_per_step(program: list[tuple[int, int, int]], forward: int) -> None:
    """The timed links (one slot per depth, no wrapper per call) observe what a wrapper of each step's call_next observes."""
    import anyio

    from checkrein.gate import metering
    from checkrein.gate.chain import CallContext, CallOutcome, build_chain
    from checkrein.telemetry import Telemetry

    clock = _Clock()
    expected = _reference_self_times(clock, program, forward)

    clock.now = 0.0
    steps = _program_steps(clock, program)

    async def terminal(ctx: Any) -> CallOutcome:
        clock.now += forward
        return CallOutcome(ctx, "ok")

    telemetry = Telemetry()
    original = metering.time
    metering.time = clock  # type: ignore[assignment]
    try:
        timed, term = metering.instrument(steps, terminal, telemetry)
        run = build_chain(timed, term)
        anyio.run(run, CallContext(call("a__echo"), 0.0, None))  # type: ignore[arg-type]
    finally:
        metering.time = original
    hist = telemetry.metrics.step_duration
    for name in [*(f"s{i}" for i in range(len(program))), "forward"]:
        want = expected.get(name, [])
        child = hist._children.get((name,))
        assert (sum(child.counts) if child else 0) == len(want), name
        assert (child.total if child else 0.0) == sum(want), name
