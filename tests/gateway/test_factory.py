"""build_gate wiring: defaults, `python` resolution, lifecycle through `async with`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from gateway_support import CapturingTrail, make_config

from checkrein.config import ServerConfig
from checkrein.gate.factory import NullAuditTrail, build_gate, resolve_python
from checkrein.testing.memory_upstream import MemoryUpstream

pytestmark = pytest.mark.anyio


def test_bare_python_means_this_interpreter() -> None:
    assert resolve_python(ServerConfig(name="a", command="python")).command == sys.executable
    assert resolve_python(ServerConfig(name="a", command="python3")).command == sys.executable
    assert resolve_python(ServerConfig(name="a", command="/usr/bin/python3.12")).command == "/usr/bin/python3.12"


async def test_only_enabled_false_turns_the_audit_off_and_async_with_closes_everything(tmp_path: Path) -> None:
    up = MemoryUpstream("a")
    gate = build_gate(make_config(tmp_path, audit={"enabled": False}), upstreams=[up])
    assert isinstance(gate.audit, NullAuditTrail)
    async with gate:
        assert up.info.state == "ready"
    assert up.info.state == "closed"


async def test_without_an_audit_dir_the_gateway_audits_beside_the_config(tmp_path: Path) -> None:
    """Regression: with no `[audit] dir` there was no audit at all, silently."""
    from checkrein.audit import verify_log
    from checkrein.config import load_config

    path = tmp_path / "checkrein.toml"
    path.write_text('[policy]\ndefault = "deny"\n', encoding="utf-8")
    config = load_config(path)
    assert config.audit_dir == tmp_path / "checkrein-audit"
    async with build_gate(config, upstreams=[MemoryUpstream("a")]) as gate:
        assert not isinstance(gate.audit, NullAuditTrail)
    assert verify_log(tmp_path / "checkrein-audit").exit_code == 0


async def test_lifecycle_events_reach_the_audit_trail(tmp_path: Path) -> None:
    trail = CapturingTrail()
    async with build_gate(make_config(tmp_path), upstreams=[MemoryUpstream("a")], audit=trail):
        pass
    events = [r.event for r in trail.lifecycle]
    assert events[0] == "gateway.start" and events[-1] == "gateway.stop" and trail.closed
    assert trail.lifecycle[0].fields["lock_written"] is True


async def test_default_wiring_writes_one_verifiable_audit_event_per_call(tmp_path: Path) -> None:
    from checkrein.audit import EventFilter, query_events, verify_log
    from checkrein.policy import Identity, ToolCall

    up = MemoryUpstream("a")
    up.add_tool("echo", lambda a: str(a.get("text", "")))
    config = make_config(tmp_path, {"allow": ["a__echo"]}, audit={"dir": str(tmp_path / "audit"), "durability": "durable"})
    async with build_gate(config, upstreams=[up]) as gate:
        assert not isinstance(gate.audit, NullAuditTrail)
        for name, text in (("a__echo", "token=ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"), ("a__other", "x"), ("zz", "y")):
            await gate.call_tool(ToolCall(Identity("alice"), "s1", "1" * 32, "2" * 16, name, {"text": text}))
    events = query_events(tmp_path / "audit", EventFilter(calls_only=True))
    assert [e["outcome"] for e in events] == ["ok", "not_found", "not_found"]
    assert events[0]["exposed_name"] == "a__echo" and events[0]["identity"]["user"] == "alice"
    assert "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB" not in json.dumps(events), "secrets never reach the log"
    assert verify_log(tmp_path / "audit").exit_code == 0
