"""What the gate feeds the registry: decisions by effect and rule, latency per tool and per step,
its own counters read at scrape time, and the snapshot in the closing audit event."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gateway_support import CapturingTrail, make_config
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
