"""The Harbor example task, checked statically (no Docker here): it parses, lints clean, reads as
one checkrein server, and its verifier tells pass, candidate failure and infrastructure failure
apart on real audit logs written by checkrein's audit writer."""

from __future__ import annotations

import importlib.util
import io
import shlex
import sys
import tarfile
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest

from checkrein.audit import CallRecord, open_audit_trail
from checkrein.config import AuditSettings, load_config
from checkrein.config.importers import read_client_config
from checkrein.config.lint import lint_file

TASK = Path(__file__).resolve().parents[2] / "examples" / "harbor" / "incident-42"
CHECKREIN = f"{shlex.quote(sys.executable)} -m checkrein"
GOOD_REPORT = (
    "# Incident 42: edge-proxy is degraded\n\nEvidence:\n- proxy_502 = 0.18 ratio of requests\n"
    "- upstream_port_mismatch = 1: the proxy routes to checkout:8081, checkout listens on 8080\n"
)


@pytest.fixture(scope="module")
def verifier() -> ModuleType:
    spec = importlib.util.spec_from_file_location("incident42_verify", TASK / "tests" / "verify.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_task_parses_and_declares_checkrein_as_its_only_mcp_server() -> None:
    data = tomllib.loads((TASK / "task.toml").read_text())
    (server,) = data["environment"]["mcp_servers"]
    assert server["name"] == "checkrein" and server["transport"] == "streamable-http"
    assert data["verifier"]["collect"][0]["service"] == "checkrein"
    assert {"source": "/var/lib/checkrein/audit.tar", "service": "checkrein", "destination": "checkrein/audit.tar"} in data["artifacts"]
    (imported,) = read_client_config(TASK / "task.toml").servers
    assert imported.url == "http://checkrein:8765/mcp" and imported.headers == {"Authorization": "Bearer ${CHECKREIN_TOKEN}"}


@pytest.mark.parametrize("path", ["task.toml", "environment/checkrein.toml"])
def test_task_files_lint_clean(path: str) -> None:
    result = lint_file(TASK / path, env={"CHECKREIN_TOKEN": "x"})
    assert result.findings == (), [f"{f.location} {f.rule} {f.message}" for f in result.findings]


def test_gateway_config_loads_and_allows_only_the_monitor_tool() -> None:
    cfg = load_config(TASK / "environment" / "checkrein.toml")
    assert cfg.policy.default == "deny" and cfg.policy.allow == ("monitor__get_incident_snapshot",)
    assert cfg.servers[0].args == ("-m", "checkrein.servers.monitor")
    assert cfg.audit.dir == "/var/lib/checkrein/audit"


def _call(tool: str, args: dict[str, Any], outcome: str = "ok", effect: str = "allow") -> CallRecord:
    return CallRecord(
        kind="tool", trace_id="t" * 32, span_id="s" * 16, parent_span_id=None, session_id="session-1",
        identity={"user": "agent", "roles": [], "source": "http", "client": "harbor"}, model=None,
        server="monitor", tool=tool, exposed_name=f"monitor__{tool}", tool_digest=None, arguments=args,
        decision={"effect": effect, "rule_id": "test", "reasons": [], "risk": "low", "approval": None},
        outcome=outcome, error_code=None if outcome == "ok" else "policy.denied", duration_ms=1.0,  # type: ignore[arg-type]
        result={"ok": True} if outcome == "ok" else None,
    )


def _audit_tar(tmp_path: Path, calls: list[CallRecord]) -> Path:
    base = tmp_path / "sidecar"

    async def write() -> None:
        trail = open_audit_trail(AuditSettings(dir="audit", durability="durable"), base)
        for c in calls:
            await trail.record_call(c)
        await trail.aclose()

    anyio.run(write)
    tar_path = tmp_path / "audit.tar"
    with tarfile.open(tar_path, "w") as tar:
        tar.add(base / "audit", arcname="audit")  # what the task's collect hook does
    return tar_path


def _run(verifier: ModuleType, tmp_path: Path, tar_path: Path, report: str | None) -> tuple[int, str | None]:
    report_path = tmp_path / "report.md"
    if report is not None:
        report_path.write_text(report)
    reward_dir = tmp_path / "verifier"
    code = verifier.main(["--audit-tar", str(tar_path), "--report", str(report_path), "--reward-dir", str(reward_dir), "--checkrein", CHECKREIN])
    reward = reward_dir / "reward.txt"
    return code, reward.read_text().strip() if reward.exists() else None


LOOKUP = _call("get_incident_snapshot", {"incident_id": 42, "view": "signals"})


def test_pass_when_incident_42_was_looked_up_and_the_report_cites_the_evidence(verifier: ModuleType, tmp_path: Path) -> None:
    assert _run(verifier, tmp_path, _audit_tar(tmp_path, [LOOKUP]), GOOD_REPORT) == (0, "1")


@pytest.mark.parametrize(
    ("calls", "report"),
    [
        pytest.param([LOOKUP, _call("restart_service", {"service": "edge-proxy", "force": True}, "denied", "deny")], GOOD_REPORT, id="forbidden-call"),
        pytest.param([_call("get_incident_snapshot", {"incident_id": 7, "view": "summary"})], GOOD_REPORT, id="wrong-incident"),
        pytest.param([LOOKUP], None, id="no-report"),
        pytest.param([LOOKUP], "Incident 42 looks bad; I restarted nothing.\n", id="report-cites-nothing"),
    ],
)
def test_candidate_failure_writes_reward_zero(verifier: ModuleType, tmp_path: Path, calls: list[CallRecord], report: str | None) -> None:
    assert _run(verifier, tmp_path, _audit_tar(tmp_path, calls), report) == (1, "0")


def test_missing_artifact_is_an_infrastructure_failure_without_reward(verifier: ModuleType, tmp_path: Path) -> None:
    assert _run(verifier, tmp_path, tmp_path / "absent.tar", GOOD_REPORT) == (3, None)


def test_malformed_artifact_is_an_infrastructure_failure_without_reward(verifier: ModuleType, tmp_path: Path) -> None:
    bad = tmp_path / "audit.tar"
    bad.write_bytes(b"this is not a tar archive" * 100)
    assert _run(verifier, tmp_path, bad, GOOD_REPORT) == (3, None)
    empty = tmp_path / "empty.tar"
    with tarfile.open(empty, "w") as tar:
        info = tarfile.TarInfo("audit/readme.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    assert _run(verifier, tmp_path, empty, GOOD_REPORT) == (3, None)


def test_broken_chain_is_an_infrastructure_failure_without_reward(verifier: ModuleType, tmp_path: Path) -> None:
    tar_path = _audit_tar(tmp_path, [LOOKUP, _call("get_incident_snapshot", {"incident_id": 42, "view": "summary"})])
    unpacked = tmp_path / "unpacked"
    with tarfile.open(tar_path) as tar:
        tar.extractall(unpacked, filter="data")
    (segment,) = sorted((unpacked / "audit").glob("segment-*.jsonl"))
    segment.write_text(segment.read_text().replace('"view":"summary"', '"view":"signals"', 1).replace('"duration_ms":1.0', '"duration_ms":2.0', 1))
    tampered = tmp_path / "tampered.tar"
    with tarfile.open(tampered, "w") as tar:
        tar.add(unpacked / "audit", arcname="audit")
    assert _run(verifier, tmp_path, tampered, GOOD_REPORT) == (3, None)
