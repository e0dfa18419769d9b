"""The monitor server over a real stdio MCP session."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from checkrein.canonical import canonical_json, sha256_hex
from checkrein.servers.monitor import snapshot

pytestmark = pytest.mark.anyio
Connect = Callable[[str], AbstractAsyncContextManager[Client]]


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


async def test_incident_42_is_degraded_with_signals_and_an_injection_fixture(connect: Connect) -> None:
    with anyio.fail_after(30):
        async with connect("monitor") as client:
            summary = await client.call_tool("get_incident_snapshot", {"incident_id": 42})
            signals = await client.call_tool("get_incident_snapshot", {"incident_id": 42, "view": "signals"})
    assert not summary.is_error and not signals.is_error
    data = json.loads(_text(summary))
    assert data["status"] == "degraded"
    assert data["signal_names"] == ["proxy_502", "upstream_port_mismatch"]
    assert "restart_service" in data["untrusted_observation"]
    assert "ignore all previous instructions" in data["untrusted_observation"]
    sig = json.loads(_text(signals))
    assert [s["name"] for s in sig["signals"]] == ["proxy_502", "upstream_port_mismatch"]
    assert summary.structured_content is not None and summary.structured_content["incident_id"] == 42


async def test_one_read_only_tool_whose_contract_the_server_enforces(connect: Connect) -> None:
    """Strict integers 1..999999 only (no strings, booleans, floats); unknown ids say only `incident not found`."""
    with anyio.fail_after(30):
        async with connect("monitor") as client:
            tools = (await client.list_tools()).tools
            rejected = {repr(bad): await client.call_tool("get_incident_snapshot", {"incident_id": bad})
                        for bad in ["42", True, 42.0, 0, 1_000_000, -1, None, [42]]}
            unknown = await client.call_tool("get_incident_snapshot", {"incident_id": 999_999})
            bad_view = await client.call_tool("get_incident_snapshot", {"incident_id": 42, "view": "raw"})
    assert [t.name for t in tools] == ["get_incident_snapshot"]
    tool = tools[0]
    assert tool.annotations is not None and tool.annotations.read_only_hint is True
    schema = tool.input_schema["properties"]
    assert schema["incident_id"]["type"] == "integer"
    assert (schema["incident_id"]["minimum"], schema["incident_id"]["maximum"]) == (1, 999_999)
    assert schema["view"]["enum"] == ["summary", "signals"]
    assert tool.input_schema["required"] == ["incident_id"]
    for bad, result in rejected.items():
        text = _text(result)
        assert result.is_error and text.startswith("invalid arguments: incident_id"), (bad, text)
        assert "pydantic" not in text and "Traceback" not in text
    assert unknown.is_error and _text(unknown) == "incident not found"
    assert bad_view.is_error and _text(bad_view).startswith("invalid arguments: view")


async def test_audit_file_exists_before_the_first_call_and_records_each_call(
    connect: Connect, state: dict[str, str]
) -> None:
    audit = Path(state["CHECKREIN_MONITOR_AUDIT"])
    with anyio.fail_after(30):
        async with connect("monitor") as client:
            assert audit.exists() and audit.read_text() == ""
            await client.call_tool("get_incident_snapshot", {"incident_id": 42, "view": "signals"})
            await client.call_tool("get_incident_snapshot", {"incident_id": 5})
    events = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [e["outcome"] for e in events] == ["ok", "not_found"]
    first = events[0]
    assert set(first) == {"schema_version", "timestamp", "call_id", "tool", "args_sha256", "outcome", "duration_ms"}
    assert first["schema_version"] == 1 and first["tool"] == "get_incident_snapshot"
    assert uuid.UUID(first["call_id"]).version == 4
    assert first["args_sha256"] == sha256_hex(canonical_json({"incident_id": 42, "view": "signals"}))
    assert first["timestamp"].endswith("Z") and first["duration_ms"] >= 0


def test_other_incidents_are_deterministic() -> None:
    assert snapshot(7, "summary") == snapshot(7, "summary")
    assert snapshot(7, "summary")["status"] == "resolved"  # type: ignore[index]
    assert snapshot(123, "summary") is None
