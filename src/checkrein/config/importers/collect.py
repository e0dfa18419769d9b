"""Turn raw per-format server fields into `ImportedServer`s: names that fit checkrein's rules,
secrets moved to `${VAR}` references, notes for whatever could not be carried over."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from checkrein.config.problems import did_you_mean
from checkrein.errors import ConfigError

from .model import ClientFormat, ImportedServer, ImportNote, ImportResult, MovedSecret
from .secrets import SecretMover

__all__ = ["ImportCollector", "checkrein_server_name", "require_string_map", "require_strings", "unknown_keys"]

_NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_REF = re.compile(r"\$\{[^}]*\}")
_URL_WITH_DEFAULT = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*:-(https?://[^}]*)\}$")


def checkrein_server_name(name: str, separator: str = "__") -> str:
    """``name`` changed as little as possible to be a valid checkrein server name."""
    out = re.sub(r"[^A-Za-z0-9_.-]+", "-", name.strip())
    while separator in out:
        out = out.replace(separator, separator[0] if len(set(separator)) == 1 else "-")
    out = out.lstrip("_.-")[:64] or "server"
    return out if _NAME_OK.fullmatch(out) else "server"


def unknown_keys(spec: Mapping[str, Any], known: Iterable[str]) -> list[tuple[str, str]]:
    """(key, `` (did you mean `x`?)`` or ``""``) for each key of ``spec`` not in ``known``, sorted."""
    pool = sorted(known)
    return [(k, did_you_mean(k, pool)) for k in sorted(set(spec) - set(pool))]


def require_strings(value: Any, what: str) -> list[str]:
    """``value`` as a list of strings; raises ``ConfigError`` naming ``what`` otherwise."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{what} must be a list of strings")
    return list(value)


def require_string_map(value: Any, what: str) -> dict[str, str]:
    """``value`` as a mapping of strings to strings; raises ``ConfigError`` naming ``what`` otherwise."""
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(f"{what} must map names to strings")
    return dict(value)


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
            url=self._mover.url(name, self._literal_url(name, url)) if url else None,
            headers=headers_out,
            timeout_s=timeout_s,
            enabled=enabled,
            source_name=source_name if name != source_name else None,
        )
        self._servers.append(server)
        self._note_unexpanded(server, moved={s.variable for s in self._secrets[moved_before:]})
        return server

    def _literal_url(self, server: str, url: str) -> str:
        """``url`` as checkrein can use it: an http(s) URL or a ``${VAR}`` reference (the gateway
        expands references in command, args, cwd, url, env and headers, as Claude does); raises
        ``ConfigError`` for anything else."""
        if url.startswith("${") or re.match(r"^https?://", url):
            return url
        raise ConfigError(f"url {url!r} is not an http(s) URL or a ${{VAR}} reference")

    def _note_unexpanded(self, server: ImportedServer, *, moved: set[str]) -> None:
        # References are expanded at spawn; a secret on a command line is still readable by other
        # local users (ps, /proc), so a moved secret that lands there is pointed out.
        fields = [("command", server.command), ("cwd", server.cwd), ("url", server.url)]
        fields += [(f"args[{i}]", a) for i, a in enumerate(server.args)]
        for where, value in fields:
            refs = [r for r in _REF.findall(value or "") if r.strip("${}").split(":-")[0] in moved]
            if refs:
                self.note(
                    server.name,
                    f"{where} holds {', '.join(refs)}, a secret on the command line or in the URL: "
                    "have the server read the secret from env instead if it can",
                )

    def result(self) -> ImportResult:
        return ImportResult(
            source=self.source,
            format=self.format,
            servers=tuple(self._servers),
            secrets=tuple(self._secrets),
            notes=tuple(self._notes),
        )
