"""Signed by default: the first serve creates the key beside the config (0600, outside the audit
dir, printed and audited); `signing_key = false` opts out; `audit vkey` tells a witness operator."""

from __future__ import annotations

import ast
import json
import stat
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from checkrein.audit.checkpoints import CheckpointStore
from checkrein.cli.main import app
from checkrein.config import load_config
from checkrein.errors import AuditError
from checkrein.gate.factory import default_audit

from .helpers import read_lines

runner = CliRunner()


def _config(tmp_path: Path, extra: str = "") -> Path:
    cfg = tmp_path / "gw.toml"
    cfg.write_text(f'[audit]\ndir = "audit"\n{extra}')
    return cfg


def _serve_once(cfg: Path) -> None:
    async def run() -> None:
        trail = default_audit(load_config(cfg))
        await trail.aclose()

    anyio.run(run)


def test_first_serve_creates_a_private_key_beside_the_config_and_audits_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = _config(tmp_path)
    _serve_once(cfg)
    key = tmp_path / "gw.audit-key"
    assert key.is_file() and stat.S_IMODE(key.stat().st_mode) == 0o600
    assert str(key) in capsys.readouterr().err
    audit = tmp_path / "audit"
    assert not list(audit.rglob("*key*"))  # never inside the audit dir
    events = [json.loads(x) for x in read_lines(audit)]
    created = [e for e in events if e.get("event") == "audit.signing_key"]
    assert len(created) == 1 and created[0]["fields"]["path"] == str(key) and created[0]["fields"]["created"]
    assert CheckpointStore(audit).newest() is not None
    before = key.read_bytes()
    _serve_once(cfg)  # the second serve reuses it, and does not record a creation again
    assert key.read_bytes() == before
    assert sum(json.loads(x).get("event") == "audit.signing_key" for x in read_lines(audit)) == 1
    res = runner.invoke(app, ["audit", "vkey", "--config", str(cfg), "--json"])
    out = json.loads(res.output)
    assert res.exit_code == 0 and out["vkey"] == created[0]["fields"]["vkey"]
    assert out["origin"].startswith("checkrein/") and out["vkey"].startswith(out["origin"] + "+")
    verify = runner.invoke(app, ["audit", "verify", str(audit), "--policy", str(_policy(tmp_path, out["vkey"]))])
    assert verify.exit_code == 0 and verify.output.startswith("VALID:"), verify.output


def _policy(tmp_path: Path, vkey: str) -> Path:
    p = tmp_path / "policy.txt"
    p.write_text(f"log {vkey}\nquorum none\n")
    return p


def test_signing_key_false_opts_out(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "signing_key = false\n")
    _serve_once(cfg)
    assert not (tmp_path / "gw.audit-key").exists() and not (tmp_path / "audit" / "checkpoints").exists()
    res = runner.invoke(app, ["audit", "vkey", "--config", str(cfg)])
    assert res.exit_code == 2 and "not signed" in res.output


def test_a_configured_key_that_does_not_exist_is_an_error_not_a_new_identity(tmp_path: Path) -> None:
    cfg = _config(tmp_path, 'signing_key = "nope.key"\n')
    with pytest.raises(AuditError, match="does not exist"):
        _serve_once(cfg)


def test_changing_the_origin_of_a_signed_log_is_refused(tmp_path: Path) -> None:
    _serve_once(_config(tmp_path, 'origin = "example.test/a"\n'))
    with pytest.raises(AuditError, match="keeps its origin"):
        _serve_once(_config(tmp_path, 'origin = "example.test/b"\n'))


def test_only_the_witness_client_module_imports_the_network() -> None:
    """DESIGN: audit/ never touches the network; the one HTTP module is injected at the edge."""
    network = {"httpx", "httpx2", "socket", "urllib", "http", "requests", "aiohttp", "ssl"}
    audit = Path(__file__).parents[2] / "src" / "checkrein" / "audit"
    offenders = []
    for path in sorted(audit.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            if any(n.split(".")[0] in network for n in names):
                offenders.append(path.name)
    assert sorted(set(offenders)) == ["witness_http.py"]


def test_verify_without_a_key_says_the_log_is_signed_and_where_its_key_is(tmp_path: Path) -> None:
    """A newcomer who runs `audit verify DIR` on a signed log is told which key to pass, and it works."""
    cfg = _config(tmp_path)
    _serve_once(cfg)
    audit, key = tmp_path / "audit", tmp_path / "gw.audit-key"
    bare = runner.invoke(app, ["audit", "verify", str(audit)])
    assert bare.exit_code == 3 and bare.output.startswith("VALID (UNANCHORED):"), bare.output
    assert "this log is signed" in bare.output and str(key) in bare.output
    report = json.loads(runner.invoke(app, ["audit", "verify", str(audit), "--json"]).output)
    assert report["key_path"] == str(key) and report["signed_key_id"] and not report["anchored"]
    keyed = runner.invoke(app, ["audit", "verify", str(audit), "--key", str(key)])
    assert keyed.exit_code == 0 and keyed.output.startswith("VALID:"), keyed.output


def test_verify_of_an_unsigned_log_says_how_to_sign_it(tmp_path: Path) -> None:
    """With `signing_key = false` there is no key to name: the advice is to sign the log."""
    cfg = _config(tmp_path, "signing_key = false\n")
    _serve_once(cfg)
    res = runner.invoke(app, ["audit", "verify", str(tmp_path / "audit")])
    assert res.exit_code == 3 and "sign the log" in res.output and "this log is signed" not in res.output
