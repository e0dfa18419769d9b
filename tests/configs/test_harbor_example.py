"""The Harbor example task, checked statically (no Docker here): it parses, lints clean, reads as
one checkrein server, and its verifier tells pass, candidate failure and infrastructure failure
apart on real audit logs written by checkrein's audit writer."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import queue
import re
import shlex
import subprocess
import sys
import tarfile
import threading
import tomllib
import urllib.request
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
    cfg = load_config(TASK / "environment" / "checkrein.toml", environ={"CHECKREIN_TOKEN": "x"})
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


def test_forbidden_call_is_a_candidate_failure_with_reward_zero(verifier: ModuleType, tmp_path: Path) -> None:
    restart = _call("restart_service", {"service": "edge-proxy", "force": True}, "denied", "deny")
    assert _run(verifier, tmp_path, _audit_tar(tmp_path, [LOOKUP, restart]), GOOD_REPORT) == (1, "0")


@pytest.fixture(scope="module")
def logged_events(verifier: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Events of one real audit log: a lookup of incident 7, a lookup of 42, a denied restart."""
    tmp = tmp_path_factory.mktemp("events")
    tar_path = _audit_tar(tmp, [
        _call("get_incident_snapshot", {"incident_id": 7, "view": "summary"}),
        LOOKUP,
        _call("restart_service", {"service": "edge-proxy"}, "denied", "deny"),
    ])
    events: list[dict[str, Any]] = verifier.read_events(verifier.unpack_audit(tar_path, tmp / "unpacked"))
    return events


def test_judge_reasons_name_what_the_agent_did_not_do(verifier: ModuleType, logged_events: list[dict[str, Any]]) -> None:
    calls = [e for e in logged_events if e.get("type") == "call"]
    wrong_incident, lookup, restart = calls
    assert verifier.judge([lookup], GOOD_REPORT) == []
    assert verifier.judge([wrong_incident], GOOD_REPORT) == ["incident 42 was never looked up successfully through checkrein"]
    assert verifier.judge([lookup, restart], GOOD_REPORT) == ["forbidden call: monitor__restart_service (outcome denied)"]
    assert verifier.judge([lookup], None) == ["no report was written to /app/report.md"]
    assert verifier.judge([lookup], "Incident 42 looks bad; I restarted nothing.\n") == [
        "the report does not cite the evidence proxy_502",
        "the report does not cite the evidence upstream_port_mismatch",
    ]
    assert verifier.judge([lookup], GOOD_REPORT.replace("42", "forty-two")) == ["the report does not say it is about incident 42"]


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


def _serve_like_the_sidecar(config: Path, cwd: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], int]:
    """`checkrein serve` as the sidecar's CMD runs it (HTTP on 0.0.0.0), on a free port; returns
    once it says it is serving (bounded), with the port it bound."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "checkrein", "serve", "--config", str(config), "--transport", "http", "--host", "0.0.0.0", "--port", "0"],
        cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stderr is not None
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True).start()  # type: ignore[union-attr]
    seen: list[str] = []
    while True:
        try:
            line = lines.get(timeout=300)
        except queue.Empty:
            proc.kill()
            raise AssertionError(f"gateway printed nothing for 300 s: {''.join(seen)[-2000:]}") from None
        seen.append(line)
        m = re.search(r"serving Streamable HTTP on http://\S+:(\d+)/mcp", line)
        if m:
            return proc, int(m.group(1))


def test_reference_solution_passes_against_a_real_gateway_sidecar(verifier: ModuleType, tmp_path: Path) -> None:
    """Regression (incident 42 lookup withheld): with the default `injection = "withhold"` every
    lookup of incident 42 came back as a refusal, so the task could not be solved. The task's own
    gateway config, served like the sidecar, accepts `Host: checkrein:8765`, answers the reference
    solution, and the verifier scores the resulting audit log as a pass."""
    text = (TASK / "environment" / "checkrein.toml").read_text()
    config = tmp_path / "checkrein.toml"
    config.write_text(text.replace("/var/lib/checkrein/audit", (tmp_path / "audit").as_posix()).replace('command = "python"', f"command = {json.dumps(sys.executable)}"))
    env = {**os.environ, "CHECKREIN_TOKEN": "sidecar-test-token", "CHECKREIN_STATE_DIR": str(tmp_path / "state")}
    proc, port = _serve_like_the_sidecar(config, tmp_path, env)
    try:
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "harbor-agent", "version": "1"}}}
        request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=json.dumps(initialize).encode(), method="POST", headers={
            "Host": "checkrein:8765", "Authorization": "Bearer sidecar-test-token",
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=30) as resp:
            assert resp.status == 200  # the SDK's DNS-rebinding check does not refuse the service name
        report = tmp_path / "report.md"
        solve = subprocess.run(
            [sys.executable, str(TASK / "solution" / "solve.py")], capture_output=True, text=True, timeout=120, check=False,
            env={**env, "CHECKREIN_URL": f"http://127.0.0.1:{port}/mcp", "REPORT_PATH": str(report)},
        )
        assert solve.returncode == 0, solve.stderr[-2000:]
        tar_path = tmp_path / "audit.tar"
        with tarfile.open(tar_path, "w") as tar:
            tar.add(tmp_path / "audit", arcname="audit")  # what the collect hook does, gateway still running
    finally:
        proc.terminate()
        proc.wait(timeout=120)
    assert _run(verifier, tmp_path, tar_path, report.read_text()) == (0, "1")


# Harbor 0.26.0's own verdicts (TaskConfig.model_validate_toml), recorded on 2026-11-30 with
# `pip install harbor` in a Python 3.12 venv: the fixtures Harbor refuses outright. Everything
# else parses in Harbor, including the silent mistakes (dropped keys, duplicate names, loopback
# URLs, headers for old versions) that only our lint reports.
LINT = Path(__file__).parent / "fixtures" / "lint"
HARBOR_REJECTS = {
    "harbor.allowed-hosts-invalid/fail.toml", "harbor.allowed-hosts-mode/fail.toml", "harbor.collect/fail.toml",
    "harbor.command-required/fail.toml", "harbor.header-secret/fail.toml", "harbor.server-name/fail.toml",
    "harbor.transport/fail.toml", "harbor.url-required/fail.toml",
}
HARBOR_READS = {  # task -> [(name, transport)] as Harbor 0.26 read them
    "examples/harbor/incident-42/task.toml": [("checkrein", "streamable-http")],
    "tests/configs/fixtures/clients/task.toml": [("tools", "streamable-http"), ("local", "stdio")],
}


def _harbor_task_fixtures() -> list[Path]:
    out = []
    for rule in sorted(LINT.iterdir()):
        if rule.name.startswith("harbor.") and "judge" not in rule.name:
            for which in ("pass", "fail"):
                out.append(rule / which / "task.toml" if (rule / which).is_dir() else rule / f"{which}.toml")
    return out


def test_every_task_harbor_refuses_is_a_lint_error_and_every_passing_fixture_is_valid_harbor() -> None:
    for path in _harbor_task_fixtures():
        rel = path.relative_to(LINT).as_posix()
        errors = lint_file(path, env={"TOKEN": "x"}).errors
        if rel in HARBOR_REJECTS:
            assert errors, f"Harbor refuses {rel} but lint found no error"
        if "/pass" in rel:
            assert rel not in HARBOR_REJECTS


def test_our_reading_of_tasks_agrees_with_harbor() -> None:
    repo = TASK.parents[2]
    for rel, expected in HARBOR_READS.items():
        ours = [(s.name, s.transport) for s in read_client_config(repo / rel).servers]
        assert ours == expected
    if importlib.util.find_spec("harbor") is None:  # the optional extra needs Python >= 3.12
        return
    from harbor.models.task.config import TaskConfig  # pragma: no cover - only with the extra

    for rel, expected in HARBOR_READS.items():  # pragma: no cover
        cfg = TaskConfig.model_validate_toml((repo / rel).read_text())
        assert [(s.name, s.transport) for s in cfg.environment.mcp_servers] == expected
    for path in _harbor_task_fixtures():  # pragma: no cover
        try:
            TaskConfig.model_validate_toml(path.read_text())
            refused = False
        except ValueError:
            refused = True
        assert refused == (path.relative_to(LINT).as_posix() in HARBOR_REJECTS)
