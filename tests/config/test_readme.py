"""The README's tour config and its `policy check` command work as written, read from README.md."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from checkrein.catalog import PinnedTool, ToolDefinition, write_lock
from checkrein.cli.main import app
from checkrein.config import load_config
from checkrein.config.lint import lint_file
from checkrein.errors import ConfigError

README = Path(__file__).resolve().parents[2] / "README.md"


def _tour() -> tuple[str, list[str]]:
    """The first TOML block of the README, and the arguments of its `checkrein policy check` line."""
    text = README.read_text(encoding="utf-8")
    toml = re.search(r"```toml\n(.*?)```", text, re.S)
    check = re.search(r"checkrein (policy check [^\n]*\\\n[^\n]*)", text)
    assert toml is not None and check is not None, "the README lost its config or its policy check"
    command = check.group(1).replace("\\\n", " ").split("#", 1)[0]
    return toml.group(1), shlex.split(command)


def _project(tmp_path: Path) -> Path:
    """The README's config as `checkrein.toml`, with a lock holding what `pin` would record for the
    filesystem server's read tool and a write tool, and the tickets server's search and delete."""
    config = tmp_path / "checkrein.toml"
    config.write_text(_tour()[0], encoding="utf-8")
    path_schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    tools = [
        ToolDefinition("files", "read_text_file", "Read a text file.", path_schema),
        ToolDefinition("files", "write_file", "Write a file.", path_schema),
        ToolDefinition("tickets", "search", "Search tickets.", {"type": "object", "properties": {"q": {"type": "string"}}}),
        ToolDefinition("tickets", "delete_ticket", "Delete a ticket.", {"type": "object", "properties": {"id": {"type": "string"}}}),
    ]
    write_lock(tmp_path / "checkrein.lock", {f"{t.server}__{t.name}": PinnedTool(t.digest, t.pinned_fields(), t.server) for t in tools})
    return config


def _check(config: Path, home: Path, tool: str, args: dict[str, object]) -> tuple[int, dict[str, object]]:
    argv = _tour()[1]
    argv[argv.index("--config") + 1] = str(config)
    argv[argv.index("--tool") + 1] = tool
    argv[argv.index("--args") + 1] = json.dumps(args)
    result = CliRunner().invoke(app, argv, env={"HOME": str(home)})
    return result.exit_code, json.loads(result.stdout)


def test_the_readme_policy_check_denies_the_traversal_it_shows(tmp_path: Path) -> None:
    """`policy check ... --args '{"path": "../../etc/passwd"}'` exits 3 (deny), as the README says."""
    config = _project(tmp_path)
    argv = _tour()[1]
    argv[argv.index("--config") + 1] = str(config)
    result = CliRunner().invoke(app, argv, env={"HOME": str(tmp_path)})
    assert result.exit_code == 3, result.output
    assert json.loads(result.stdout)["effect"] == "deny"


def test_the_readme_policy_allows_reads_under_home_work_and_nothing_else(tmp_path: Path) -> None:
    """Regression: `roots = ["${HOME}/work"]` was never expanded, so the README's policy denied
    every read. Reads inside ~/work are allowed, outside it denied; a write asks, a delete is denied."""
    config = _project(tmp_path)
    assert _check(config, tmp_path, "files__read_text_file", {"path": f"{tmp_path}/work/notes.txt"})[0] == 0
    code, out = _check(config, tmp_path, "files__read_text_file", {"path": "/etc/passwd"})
    assert code == 3 and f"{tmp_path}/work" in " ".join(map(str, out["reasons"]))  # type: ignore[call-overload]
    # Not on the allow list: the production template asks a person for a high-risk tool.
    assert _check(config, tmp_path, "files__write_file", {"path": f"{tmp_path}/work/x"})[:1] == (4,)
    assert _check(config, tmp_path, "tickets__delete_ticket", {"id": "1"})[0] == 3


def test_the_readme_config_lints_clean_and_names_the_token_it_needs(tmp_path: Path) -> None:
    """lint finds no error in the README's config; `serve` without TICKETS_TOKEN says which
    variable, file, line and key; with it the config loads."""
    config = _project(tmp_path)
    result = lint_file(config, env={"HOME": str(tmp_path), "TICKETS_TOKEN": "t"})
    assert result.errors == 0, [f.message for f in result.findings]
    with pytest.raises(ConfigError) as ei:
        load_config(config, environ={"HOME": str(tmp_path)})
    assert "TICKETS_TOKEN is not set" in str(ei.value) and ei.value.key == "servers[1].headers.Authorization"
    assert ei.value.line is not None and "TICKETS_TOKEN" in config.read_text().splitlines()[ei.value.line - 1]
    loaded = load_config(config, environ={"HOME": str(tmp_path), "TICKETS_TOKEN": "t"})
    assert loaded.audit_dir == tmp_path / "audit"
