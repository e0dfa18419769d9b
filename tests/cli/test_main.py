"""The root command: lazy command modules, the command table, `--version` without heavy imports."""

from __future__ import annotations

import subprocess
import sys

import typer
from typer.testing import CliRunner

from checkrein import __version__
from checkrein.cli.main import COMMANDS, app, commands_of

HEAVY = ("sqlglot", "uvicorn", "mcp", "checkrein.policy", "checkrein.policy.analyzers", "checkrein.gate", "starlette")


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys; print('\\n'.join(sys.modules))"],
        capture_output=True, text=True, timeout=60, check=True,
    )
    return set(out.stdout.split())


def test_importing_the_cli_imports_no_heavy_module() -> None:
    """`import checkrein.cli.main` loads neither sqlglot, uvicorn, the MCP SDK nor the policy engine."""
    loaded = _modules_after("import checkrein.cli.main")
    assert "checkrein.cli.main" in loaded
    assert not loaded & set(HEAVY)


def test_version_runs_no_command_module() -> None:
    """`checkrein --version` prints the version and imports no command module."""
    code = (
        "import sys, contextlib, io\n"
        "from checkrein.cli.main import main\n"
        "sys.argv = ['checkrein', '--version']\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit): main()\n"
        "assert buf.getvalue().strip() == 'checkrein " + __version__ + "', buf.getvalue()\n"
    )
    loaded = _modules_after(code)
    assert not loaded & set(HEAVY)
    assert not {f"checkrein.cli.{m}" for m in COMMANDS.values()} & loaded


def test_command_table_lists_exactly_what_the_modules_register() -> None:
    """COMMANDS names every command each module registers, in the modules' order, and nothing else."""
    registered: list[str] = []
    for module in dict.fromkeys(COMMANDS.values()):
        names = list(commands_of(module))
        assert all(COMMANDS[n] == module for n in names), (module, names)
        registered.extend(names)
    assert sorted(registered) == sorted(COMMANDS)


def test_help_lists_every_command_and_a_command_runs() -> None:
    """`--help` shows every command; a subcommand's own help loads only its module's commands."""
    runner = CliRunner()
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for name in COMMANDS:
        assert name in result.output
    sub = runner.invoke(app, ["audit", "verify", "--help"])
    assert sub.exit_code == 0 and "verify" in sub.output.lower()


def test_unknown_command_is_a_usage_error_with_a_suggestion() -> None:
    """A misspelt command exits 2 and names the close match."""
    result = CliRunner().invoke(app, ["servx"])
    assert result.exit_code == 2
    assert "serve" in result.output


def test_commands_of_returns_click_commands() -> None:
    """A module's commands come back as click commands under their CLI names."""
    commands = commands_of("gateway")
    assert set(commands) == {"serve", "tools", "pin"}
    assert all(isinstance(c, typer.core.TyperCommand) for c in commands.values())
