"""`checkrein run`, `checkrein trace show` and `checkrein kb seed` as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from checkrein.cli.main import app

runner = CliRunner()


def _checkrein(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "checkrein", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300, check=False)


def test_kb_seed_is_idempotent(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    first = runner.invoke(app, ["kb", "seed", "--db", str(db)])
    second = runner.invoke(app, ["kb", "seed", "--db", str(db)])
    assert first.exit_code == 0 and "added 8 document(s)" in first.output
    assert second.exit_code == 0 and "added 0 document(s)" in second.output


def test_run_with_a_script_against_a_server_then_show_its_trace(tmp_path: Path, server_env: dict[str, str]) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"tool": "search_documents", "args": {"query": "running Shanghai"}}],
                                  "answer": "Found: {result[0]}"}))
    result = _checkrein(["run", "--server", f"{sys.executable} -m checkrein.servers.knowledge", "--script",
                         str(script), "--query", "When to run in Shanghai?", "--trace-dir", str(tmp_path / "traces"),
                         "--json"], server_env, tmp_path)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["status"] == "answered" and "April" in out["answer"]
    shown = runner.invoke(app, ["trace", "show", out["trace"]])
    assert shown.exit_code == 0
    for label in ("model calls", "tokens", "tool success rate", "denials", "approvals", "time"):
        assert label in shown.output
    as_json = json.loads(runner.invoke(app, ["trace", "show", out["trace"], "--json"]).output)
    assert as_json["tool_success_rate"] == 1.0 and as_json["model_calls"] == 2


def test_run_with_a_config_goes_through_the_gateway_and_writes_the_trace_beside_the_audit(
    tmp_path: Path, server_env: dict[str, str]
) -> None:
    kb = server_env["CHECKREIN_KB_PATH"]
    config = tmp_path / "checkrein.toml"
    config.write_text(
        '[[servers]]\nname = "knowledge"\ncommand = "python"\nargs = ["-m", "checkrein.servers.knowledge"]\n'
        f'env = {{ CHECKREIN_KB_PATH = "{kb}" }}\n'
        '[policy]\ndefault = "deny"\nallow = ["knowledge__search_documents"]\n'
        '[audit]\ndir = "audit"\n'
    )
    script = tmp_path / "script.json"
    script.write_text(json.dumps({
        "steps": [{"tool": "knowledge__search_documents", "args": {"query": "running Shanghai"}},
                  {"tool": "knowledge__add_document", "args": {"source": "x", "text": "y"}}],
        "answer": "Found: {result[0]} / {result[1]}"}))
    result = _checkrein(["run", "--config", str(config), "--script", str(script), "--query", "When to run?", "--json"],
                        server_env, tmp_path)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert "April" in out["answer"]
    assert [c["status"] for c in out["tool_calls"]] == ["ok", "denied"]
    assert Path(out["trace"]).parent == tmp_path / "traces"
    shown = json.loads(runner.invoke(app, ["trace", "show", out["trace"], "--json"]).output)
    assert shown["denials"] == 1 and shown["tool_ok"] == 1


def test_usage_errors_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no ./.env with a real key may be picked up
    assert runner.invoke(app, ["run", "--query", "x"]).exit_code == 2
    missing = runner.invoke(app, ["run", "--query", "x", "--config", str(tmp_path / "none.toml"), "--script", "s"])
    assert missing.exit_code == 2
    no_key = runner.invoke(app, ["run", "--query", "x", "--server", "python -m checkrein.servers.monitor"],
                           env={"OPENAI_API_KEY": "", "DEEPSEEK_API_KEY": ""})
    assert no_key.exit_code == 2
    assert runner.invoke(app, ["trace", "show", str(tmp_path / "none.jsonl")]).exit_code == 2
