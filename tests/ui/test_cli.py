"""`checkrein ui` and `checkrein serve --ui` from the command line: refusals in-process, serving
as a real subprocess on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from checkrein.cli.main import app

from .helpers import call, child_env, denied, http_status, start_until, stop, write_audit

runner = CliRunner()
REPO_SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(scope="module")
def audit_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ui-cli") / "audit"
    write_audit(d, [call(0), denied(1)])
    return d


def test_ui_needs_a_directory(tmp_path: Path) -> None:
    """No --audit and no --config, or a directory that is not there: exit 2 saying what to give."""
    res = runner.invoke(app, ["ui"])
    assert res.exit_code == 2 and "--audit DIR" in res.output
    res = runner.invoke(app, ["ui", "--audit", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "no such audit directory" in res.output


def test_ui_refuses_a_public_address_without_a_configured_token(audit_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Like `serve`: off loopback, a token must be configured (a made-up one is not enough)."""
    monkeypatch.delenv("CHECKREIN_TOKEN", raising=False)
    res = runner.invoke(app, ["ui", "--audit", str(audit_dir), "--host", "0.0.0.0"])
    assert res.exit_code == 2 and "refusing to serve the audit on 0.0.0.0 without a token" in res.output


def test_ui_refuses_an_empty_token_variable(audit_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty CHECKREIN_TOKEN is an error, never authentication turned off."""
    monkeypatch.setenv("CHECKREIN_TOKEN", "")
    res = runner.invoke(app, ["ui", "--audit", str(audit_dir)])
    assert res.exit_code == 2 and "CHECKREIN_TOKEN is set but empty" in res.output


def test_serve_ui_needs_the_http_transport(tmp_path: Path) -> None:
    """--ui with stdio is a usage error that names the alternative."""
    cfg = tmp_path / "checkrein.toml"
    cfg.write_text("[policy]\ndefault = \"deny\"\n", encoding="utf-8")
    res = runner.invoke(app, ["serve", "--config", str(cfg), "--ui"])
    assert res.exit_code == 2 and "--ui needs --transport http" in res.output


_ADDRESS = r"on (http://127\.0\.0\.1:\d+/\S*)"


def test_ui_makes_a_one_time_token_when_none_is_configured(audit_dir: Path) -> None:
    """The printed address holds a fresh token; without it the view answers 401."""
    proc, m = start_until(["ui", "--audit", str(audit_dir), "--port", "0"], _ADDRESS, env=child_env())
    try:
        base, _, token = m.group(1).partition("/?token=")
        assert len(token) >= 30
        assert http_status(base + "/") == 401 and http_status(base + "/", "wrong") == 401
        assert http_status(base + "/", token) == 200 and http_status(base + "/charts", token) == 200
    finally:
        assert stop(proc) == 0  # SIGTERM stops it cleanly


def test_ui_uses_the_configs_tokens(audit_dir: Path, tmp_path: Path) -> None:
    """With --config the gateway's own tokens open the view, and its audit dir is the default."""
    cfg = tmp_path / "checkrein.toml"
    cfg.write_text(f'[gateway]\ntoken = "${{UI_T}}"\n\n[audit]\ndir = "{audit_dir}"\n', encoding="utf-8")
    proc, m = start_until(["ui", "--config", str(cfg), "--port", "0"], _ADDRESS, env=child_env(UI_T="config-token"))
    try:
        assert "?token=" not in m.group(1)
        assert http_status(m.group(1), "config-token") == 200 and http_status(m.group(1)) == 401
    finally:
        stop(proc)


def test_ui_no_token_serves_loopback_anonymously(audit_dir: Path) -> None:
    """--no-token is the explicit choice to let any local user read the audit."""
    proc, m = start_until(["ui", "--audit", str(audit_dir), "--no-token", "--port", "0"], _ADDRESS, env=child_env())
    try:
        assert http_status(m.group(1)) == 200
    finally:
        stop(proc)
