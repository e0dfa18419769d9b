"""`checkrein` command line. Thin: each command module parses, calls one function, prints.

Exit codes (all commands): 0 success, 1 failure/invalid (e.g. `audit verify` found tampering),
2 usage error or unreadable input, 3 denied (`policy check`), 4 ask (`policy check`).

The command modules are imported when their command runs (or for `--help`), not at start:
`checkrein --version` and `checkrein audit verify` do not pay for the MCP SDK, the policy engine,
sqlglot or uvicorn.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from typing import Any

import typer
from typer.core import TyperGroup

from checkrein import __version__

__all__ = ["COMMANDS", "app", "main"]

COMMANDS: dict[str, str] = {
    "serve": "gateway",
    "tools": "gateway",
    "pin": "gateway",
    "policy": "policy",
    "audit": "audit",
    "run": "agent",
    "trace": "agent",
    "kb": "agent",
    "demo": "demo",
    "import": "configs",
    "emit": "configs",
    "lint": "configs",
    "skills": "configs",
    "ledger": "configs",
    "ui": "ui",
}
"""Each top-level command (in `--help` order) and the `checkrein.cli` module whose `register` adds it."""

Command = Any  # typer's vendored click Command; typer does not export its type


def commands_of(module: str) -> dict[str, Command]:
    """The click commands that `checkrein.cli.<module>`'s ``register`` adds, by name."""
    sub = typer.Typer(rich_markup_mode=None)
    importlib.import_module(f"checkrein.cli.{module}").register(sub)
    return dict(typer.main.get_group(sub).commands)


class _Commands(MutableMapping[str, Command]):
    """The root group's commands, each module imported on first access to one of its names."""

    def __init__(self) -> None:
        self._loaded: dict[str, Command] = {}

    def __getitem__(self, name: str) -> Command:
        if name not in self._loaded and name in COMMANDS:
            self._loaded.update(commands_of(COMMANDS[name]))
        return self._loaded[name]

    def __setitem__(self, name: str, command: Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        yield from COMMANDS
        yield from (name for name in self._loaded if name not in COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS.keys() | self._loaded.keys())


class _LazyGroup(TyperGroup):
    """The root group over `_Commands` (listing names imports nothing; `--help` imports all)."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _Commands()


app = typer.Typer(
    name="checkrein",
    help="Security gateway and audit trail for AI agents' MCP tool calls.",
    cls=_LazyGroup,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help: docstrings say `[policy]` and `[audit] dir`, which rich markup would eat, and
    # rich's option table shows a `<bool>` placeholder after every flag (typer 0.29).
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"checkrein {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """checkrein: one MCP server in front of many; every tool call decided, checked and audited."""


def main() -> None:
    app()
