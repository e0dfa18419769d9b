"""`checkrein` command line. Thin: each command module parses, calls one function, prints.

Exit codes (all commands): 0 success, 1 failure/invalid (e.g. `audit verify` found tampering),
2 usage error or unreadable input, 3 denied (`policy check`), 4 ask (`policy check`).
"""

from __future__ import annotations

import typer

from checkrein import __version__

from . import agent, audit, configs, demo, gateway, policy, ui

app = typer.Typer(
    name="checkrein",
    help="Security gateway and audit trail for AI agents' MCP tool calls.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
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


for module in (gateway, policy, audit, agent, demo, configs, ui):
    module.register(app)


def main() -> None:
    app()
