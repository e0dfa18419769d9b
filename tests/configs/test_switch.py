"""`checkrein emit --write`: the client's own file switched over to checkrein, with a backup."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from checkrein.cli.main import app
from checkrein.config.importers import checkrein_entry
from checkrein.config.importers.switch import default_client_file, switch_client_file
from checkrein.errors import ConfigError

CHECKREIN_TOML = """
[[servers]]
name = "files"
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]

[[servers]]
name = "tickets"
transport = "http"
url = "https://mcp.example.com/mcp"
headers = { Authorization = "Bearer ${TICKETS_TOKEN}" }

[policy]
default = "deny"
"""

MCP_JSON = {
    "mcpServers": {
        "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]},
        "tickets": {"type": "http", "url": "https://mcp.example.com/mcp/"},
        "other": {"command": "other-server"},
    },
    "someOtherSetting": True,
}

CODEX_TOML = """# my Codex config
model = "o4"

[mcp_servers.files]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]

[mcp_servers.files.env]
LEVEL = "debug"

# a server checkrein does not front
[mcp_servers.other]
command = "other-server"

[profiles.fast]
model = "o4-mini"
"""


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "checkrein.toml"
    path.write_text(CHECKREIN_TOML, encoding="utf-8")
    return path


def _emit_write(client: str, config: Path, file: Path) -> str:
    result = CliRunner().invoke(app, ["emit", "--for", client, "--config", str(config), "--write", "--file", str(file)])
    assert result.exit_code == 0, result.output
    return result.stderr


def test_claude_file_gets_checkrein_instead_of_the_servers_it_fronts(tmp_path: Path) -> None:
    mcp = tmp_path / ".mcp.json"
    original = json.dumps(MCP_JSON, indent=4)
    mcp.write_text(original, encoding="utf-8")
    mcp.chmod(0o644)
    said = _emit_write("claude", _config(tmp_path), mcp)
    doc = json.loads(mcp.read_text(encoding="utf-8"))
    # `filesystem` is the same command under another name, `tickets` the same name.
    assert set(doc["mcpServers"]) == {"other", "checkrein"}
    assert doc["someOtherSetting"] is True
    entry = doc["mcpServers"]["checkrein"]
    assert entry["args"][-3:] == ["serve", "--config", str(tmp_path / "checkrein.toml")]
    assert Path(entry["command"]).is_absolute()
    backup = tmp_path / ".mcp.json.checkrein-backup"
    assert backup.read_text(encoding="utf-8") == original
    assert stat.S_IMODE(mcp.stat().st_mode) == 0o644
    assert "filesystem" in said and "tickets" in said and str(backup) in said


def test_a_second_write_replaces_the_entry_and_keeps_both_backups(tmp_path: Path) -> None:
    mcp = tmp_path / ".mcp.json"
    mcp.write_text(json.dumps(MCP_JSON), encoding="utf-8")
    config = _config(tmp_path)
    _emit_write("claude", config, mcp)
    _emit_write("claude", config, mcp)
    assert set(json.loads(mcp.read_text())["mcpServers"]) == {"other", "checkrein"}
    assert (tmp_path / ".mcp.json.checkrein-backup").exists() and (tmp_path / ".mcp.json.checkrein-backup.1").exists()


def test_a_missing_claude_file_is_created(tmp_path: Path) -> None:
    mcp = tmp_path / ".mcp.json"
    _emit_write("claude", _config(tmp_path), mcp)
    assert list(json.loads(mcp.read_text())["mcpServers"]) == ["checkrein"]
    assert not list(tmp_path.glob("*.checkrein-backup*"))


def test_codex_file_is_edited_table_by_table(tmp_path: Path) -> None:
    codex = tmp_path / "config.toml"
    codex.write_text(CODEX_TOML, encoding="utf-8")
    _emit_write("codex", _config(tmp_path), codex)
    text = codex.read_text(encoding="utf-8")
    data = tomllib.loads(text)
    assert set(data["mcp_servers"]) == {"other", "checkrein"}
    assert data["model"] == "o4" and data["profiles"] == {"fast": {"model": "o4-mini"}}
    assert "# my Codex config" in text and "# a server checkrein does not front" in text
    assert data["mcp_servers"]["checkrein"]["args"][-1] == str(tmp_path / "checkrein.toml")
    assert (tmp_path / "config.toml.checkrein-backup").read_text(encoding="utf-8") == CODEX_TOML


def test_a_codex_layout_it_cannot_edit_safely_is_refused_untouched(tmp_path: Path) -> None:
    codex = tmp_path / "config.toml"
    inline = 'mcp_servers = { files = { command = "npx", args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv"] } }\n'
    codex.write_text(inline, encoding="utf-8")
    entry = checkrein_entry(config_path=str(tmp_path / "checkrein.toml"))
    with pytest.raises(ConfigError, match="cannot edit this file safely"):
        switch_client_file("codex", codex, entry, [{"name": "files", "command": "npx", "args": []}])
    assert codex.read_text(encoding="utf-8") == inline
    assert not list(tmp_path.glob("*.checkrein-backup*"))


def test_default_files() -> None:
    assert default_client_file("claude", cwd=Path("/p")) == Path("/p/.mcp.json")
    assert default_client_file("codex", environ={"CODEX_HOME": "/h"}) == Path("/h/config.toml")
    with pytest.raises(ConfigError):
        default_client_file("harbor")


def test_emit_names_the_running_checkrein_by_absolute_path(tmp_path: Path) -> None:
    """Regression: `emit` wrote `"command": "checkrein"`, which works only with the venv on PATH."""
    script = Path(sys.executable).parent / "checkrein"
    env = {k: v for k, v in os.environ.items() if k != "PATH"} | {"PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [str(script), "emit", "--for", "claude", "--config", str(_config(tmp_path))],
        capture_output=True, text=True, env=env, timeout=120, check=True,
    )
    entry = json.loads(out.stdout)["mcpServers"]["checkrein"]
    assert entry["command"] == str(script)
    version = subprocess.run([entry["command"], "--version"], capture_output=True, text=True, env=env, timeout=120, check=True)
    assert version.stdout.startswith("checkrein ")


def test_emit_run_as_a_module_names_python_dash_m(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "checkrein", "emit", "--for", "codex", "--config", str(_config(tmp_path))],
        capture_output=True, text=True, timeout=120, check=True,
    )
    entry = tomllib.loads(out.stdout)["mcp_servers"]["checkrein"]
    assert entry["command"] == sys.executable and entry["args"][:2] == ["-m", "checkrein"]
