"""Fault matrix end to end: with a real upstream subprocess (the bundled monitor, which keeps its
own audit of every call it receives), nothing the gate refuses or fails on reaches the server."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from checkrein.config.model import config_from_mapping
from checkrein.gate.factory import build_gate
from checkrein.gate.seams import ApprovalRequest, ApprovalResult
from checkrein.policy import Decision, Identity, ToolCall


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _config(tmp_path: Path) -> Any:
    return config_from_mapping(
        {
            "gateway": {"lock_file": str(tmp_path / "checkrein.lock")},
            "servers": [
                {
                    "name": "monitor",
                    "command": sys.executable,
                    "args": ["-m", "checkrein.servers.monitor"],
                    "env": {"CHECKREIN_MONITOR_AUDIT": str(tmp_path / "monitor.jsonl")},
                    "timeout_s": 20.0,
                }
            ],
            "policy": {"allow": ["monitor__*"], "tools": {"monitor__get_incident_snapshot": {"risk": "low"}}},
            "audit": {"dir": str(tmp_path / "audit")},
        }
    )


def _seen_by_server(tmp_path: Path) -> int:
    path = tmp_path / "monitor.jsonl"
    return sum(1 for line in path.read_text().splitlines() if line.strip()) if path.exists() else 0


def _call(args: dict[str, Any]) -> ToolCall:
    return ToolCall(Identity("tester"), "s", "1" * 32, "2" * 16, "monitor__get_incident_snapshot", args)


class _Approver:
    def __init__(self, mode: str) -> None:
        self.mode = mode

    async def approve(self, request: ApprovalRequest) -> ApprovalResult:
        if self.mode == "raise":
            raise RuntimeError("approver crashed")
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


@pytest.mark.anyio
@pytest.mark.parametrize("fault", ["schema", "decide_raises", "approver_raises", "approver_times_out", "inspector_raises"])
async def test_a_fault_anywhere_forwards_nothing_and_denies(tmp_path: Path, fault: str, monkeypatch: pytest.MonkeyPatch) -> None:
    config = _config(tmp_path)
    kwargs: dict[str, Any] = {}
    args: dict[str, Any] = {"incident_id": 42}
    if fault == "schema":
        args = {"incident_id": True}  # `true` is not an integer
    elif fault == "decide_raises":
        monkeypatch.setattr("checkrein.gate.steps.decide", lambda *a: (_ for _ in ()).throw(RuntimeError("boom")))
    elif fault.startswith("approver"):
        monkeypatch.setattr("checkrein.gate.steps.decide", lambda *a: Decision("ask", "ask:test", ("needs a human",), "high"))
        kwargs["approver"] = _Approver("raise" if fault == "approver_raises" else "hang")
        config = config.model_copy(update={"approval": config.approval.model_copy(update={"timeout_s": 0.5})})
    elif fault == "inspector_raises":
        class Broken:
            def inspect(self, call: Any, result: Any) -> Any:
                raise RuntimeError("scanner crashed")

        kwargs["inspector"] = Broken()
    with anyio.fail_after(60):
        async with build_gate(config, **kwargs) as gate:
            before = _seen_by_server(tmp_path)
            result = await gate.call_tool(_call(args))
    assert result.is_error
    shown = json.dumps(result.model_dump(mode="json"))
    assert result.content[0].text.startswith(("denied by checkrein", "error from checkrein"))  # type: ignore[union-attr]
    assert "proxy_502" not in shown and "restart_service" not in shown
    if fault == "inspector_raises":
        # Inspection runs on the result, so the server answered; the answer was not delivered.
        assert _seen_by_server(tmp_path) == before + 1
    else:
        assert _seen_by_server(tmp_path) == before, "a refused call reached the upstream"


@pytest.mark.anyio
async def test_the_monitor_records_the_calls_it_receives(tmp_path: Path) -> None:
    """The control for the matrix above: an allowed call does reach the server and its log."""
    with anyio.fail_after(60):
        async with build_gate(_config(tmp_path)) as gate:
            result = await gate.call_tool(_call({"incident_id": 42, "view": "signals"}))
    assert not result.is_error and "proxy_502" in json.dumps(result.model_dump(mode="json"))
    assert _seen_by_server(tmp_path) == 1
