"""Turn raw per-format server fields into `ImportedServer`s: names that fit checkrein's rules,
secrets moved to `${VAR}` references, notes for whatever could not be carried over."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from .model import ClientFormat, ImportedServer, ImportNote, ImportResult, MovedSecret
from .secrets import SecretMover

__all__ = ["ImportCollector", "checkrein_server_name"]

_NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def checkrein_server_name(name: str, separator: str = "__") -> str:
    """``name`` changed as little as possible to be a valid checkrein server name."""
    out = re.sub(r"[^A-Za-z0-9_.-]+", "-", name.strip())
    while separator in out:
        out = out.replace(separator, separator[0] if len(set(separator)) == 1 else "-")
    out = out.lstrip("_.-")[:64] or "server"
    return out if _NAME_OK.fullmatch(out) else "server"


class ImportCollector:
    """Accumulates one import. Call `add` per server, then `result`."""

    def __init__(self, source: str, fmt: ClientFormat) -> None:
        self.source = source
        self.format: ClientFormat = fmt
        self._servers: list[ImportedServer] = []
        self._notes: list[ImportNote] = []
        self._secrets: list[MovedSecret] = []
        self._mover = SecretMover(lambda s, w, v: self._secrets.append(MovedSecret(s, w, v)))

    def note(self, server: str | None, message: str) -> None:
        self._notes.append(ImportNote(server, message))

    def _unique(self, wanted: str) -> str:
        taken = {s.name for s in self._servers}
        if wanted not in taken:
            return wanted
        n = 2
        while f"{wanted}-{n}" in taken:
            n += 1
        return f"{wanted}-{n}"

    def add(
        self,
        source_name: str,
        *,
        transport: Literal["stdio", "sse", "streamable-http"],
        command: str | None = None,
        args: list[str] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        url: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        enabled: bool = True,
    ) -> ImportedServer:
        """Record one server; moves inline secrets and renames it if checkrein needs to."""
        name = self._unique(checkrein_server_name(source_name))
        moved_before = len(self._secrets)
        if name != source_name:
            self.note(name, f"server {source_name!r} is named {name!r} in checkrein")
        env_out = {k: self._mover.env(name, k, v) for k, v in (env or {}).items()}
        headers_out = {k: self._mover.header(name, k, v) for k, v in (headers or {}).items()}
        server = ImportedServer(
            name=name,
            transport=transport,
            command=command,
            args=tuple(self._mover.args(name, list(args or []))),
            env=env_out,
            cwd=cwd,
            url=self._mover.url(name, url) if url else None,
            headers=headers_out,
            timeout_s=timeout_s,
            enabled=enabled,
            source_name=source_name if name != source_name else None,
        )
        self._servers.append(server)
        for secret in self._secrets[moved_before:]:
            if secret.where.startswith(("args", "url")):
                # The gateway expands references in env and headers when it starts a server;
                # one in an argument or a URL must be expanded there too, so say where it is.
                self.note(name, f"{secret.where} now holds ${{{secret.variable}}}: prefer passing it via env or a header")
        return server

    def result(self) -> ImportResult:
        return ImportResult(
            source=self.source,
            format=self.format,
            servers=tuple(self._servers),
            secrets=tuple(self._secrets),
            notes=tuple(self._notes),
        )
