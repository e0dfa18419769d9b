"""`--help` of every command: nothing lost to markup, exit codes said once, no `<bool>` placeholders."""

from __future__ import annotations

import re
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from checkrein.cli.main import app


def _commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    out = [(path, group)]
    if hasattr(group, "commands"):  # a group (typer carries its own copy of click's classes)
        for name, sub in sorted(group.commands.items()):
            out += _commands(sub, (*path, name))
    return out


COMMANDS = _commands(typer.main.get_command(app))


@pytest.mark.parametrize("path, command", COMMANDS, ids=[" ".join(p) or "checkrein" for p, _ in COMMANDS])
def test_help_keeps_every_word_of_the_docstring(path: tuple[str, ...], command: Any) -> None:
    """Regression: rich markup ate `[policy]`, `[audit]` and `dir` ("Edits to  apply while
    running", "set ` signing_key`"), exit codes were printed twice and flags showed `<bool>`."""
    result = CliRunner().invoke(app, [*path, "--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    shown = " ".join(result.output.split())
    documented = " ".join(f"{command.help or ''} {command.epilog or ''}".split())
    for bracketed in re.findall(r"\[[A-Za-z_.\[\]]+\][^\s,.;:)]*", documented):
        assert bracketed in shown, f"{bracketed!r} lost from `{' '.join(path)} --help`"
    assert "<bool>" not in shown
    assert shown.count("Exit codes") <= 1
