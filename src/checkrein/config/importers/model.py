"""What an importer hands back: servers in checkrein's vocabulary, plus what it had to change."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["ClientFormat", "ImportNote", "ImportResult", "ImportedServer", "MovedSecret"]

ClientFormat = Literal["claude", "codex", "harbor"]
"""The client config formats checkrein reads and writes."""


@dataclass(frozen=True, slots=True)
class MovedSecret:
    """An inline secret found in the source config and replaced by a ``${VAR}`` reference.

    ``variable`` is the name the operator must now set; the secret's value is never kept.
    """

    server: str
    where: str
    """Where the value sat, e.g. ``env.GITHUB_TOKEN`` or ``headers.Authorization`` or ``args[2]``."""
    variable: str


@dataclass(frozen=True, slots=True)
class ImportNote:
    """Something the importer could not carry over as-is (dropped key, renamed server...)."""

    server: str | None
    message: str


@dataclass(frozen=True, slots=True)
class ImportedServer:
    """One MCP server as checkrein's `[[servers]]` entry will describe it."""

    name: str
    transport: Literal["stdio", "sse", "streamable-http"]
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    timeout_s: float | None = None
    enabled: bool = True
    source_name: str | None = None
    """The name in the source file when it had to be changed to fit checkrein's naming rules."""

    def identity(self) -> tuple[object, ...]:
        """The fields that say which server this is, for round-trip comparisons."""
        return (
            self.name,
            self.transport,
            self.command,
            self.args,
            tuple(sorted(self.env.items())),
            self.url,
            tuple(sorted(self.headers.items())),
        )


@dataclass(frozen=True, slots=True)
class ImportResult:
    """The servers read from one client config and everything the operator must know about them."""

    source: str
    format: ClientFormat
    servers: tuple[ImportedServer, ...]
    secrets: tuple[MovedSecret, ...] = ()
    notes: tuple[ImportNote, ...] = ()
