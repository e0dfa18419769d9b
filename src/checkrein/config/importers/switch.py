"""`checkrein emit --write`: switch a client's own config file over to checkrein.

The client's entries for the servers checkrein now fronts are removed (left in place, the agent
could still reach them around the gateway), the one `checkrein` entry is added (or replaces an
older one), everything else in the file is kept, and the file as it was is kept beside it as a
backup. An entry is fronted when its name is a `[[servers]]` name or when it starts or reaches
the same server (command and arguments, or URL) as one of them, compared as written.

Claude's `.mcp.json` is rewritten as JSON (comments, if any, are not kept: strict JSON readers
reject them anyway). Codex's `config.toml` is edited as text, table by table, and the result is
re-read and compared with what was meant before anything is written, so a layout this editor
does not understand (an inline `mcp_servers = {...}`, dotted keys) is refused, never mangled.
"""

from __future__ import annotations

import json
import os
import shutil
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checkrein.config._locate import HEADER, normalized_key
from checkrein.errors import ConfigError

from .checkrein_toml import write_atomic
from .claude import server_entry
from .codex import render_codex
from .jsonc import read_jsonc
from .model import ClientFormat, ImportedServer

__all__ = ["SwitchResult", "default_client_file", "switch_client_file"]

ENTRY_NAME = "checkrein"


@dataclass(frozen=True, slots=True)
class SwitchResult:
    path: Path
    removed: tuple[str, ...]
    """The client's entries for servers checkrein now fronts."""
    kept: tuple[str, ...]
    """Entries left as they were (servers checkrein does not front)."""
    backup: Path | None
    """The file as it was (``None`` when there was no file)."""
    notes: tuple[str, ...] = ()


def default_client_file(client: ClientFormat, *, cwd: Path | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """Claude: `.mcp.json` in ``cwd`` (the project scope). Codex: `$CODEX_HOME/config.toml`,
    else `~/.codex/config.toml`."""
    env = os.environ if environ is None else environ
    if client == "claude":
        return (cwd or Path.cwd()) / ".mcp.json"
    if client == "codex":
        home = env.get("CODEX_HOME")
        return Path(home) / "config.toml" if home else Path.home() / ".codex" / "config.toml"
    raise ConfigError(f"--write edits Claude's and Codex's files; for {client}, paste the printed snippet")


def _launch(entry: Mapping[str, Any]) -> tuple[str, ...] | None:
    """What an entry starts or reaches, to recognise the same server under another name."""
    if isinstance(entry.get("url"), str):
        return ("url", str(entry["url"]).rstrip("/"))
    if isinstance(entry.get("command"), str):
        args = entry.get("args", [])
        return ("command", str(entry["command"]), *[str(a) for a in args if isinstance(a, str)])
    return None


def _fronted(name: str, entry: Any, servers: Sequence[Mapping[str, Any]]) -> bool:
    if any(s.get("name") == name for s in servers):
        return True
    launch = _launch(entry) if isinstance(entry, Mapping) else None
    return launch is not None and any(_launch(s) == launch for s in servers)


def _backup_path(path: Path) -> Path:
    candidate = path.with_name(path.name + ".checkrein-backup")
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.checkrein-backup.{n}")
        n += 1
    return candidate


def _write(path: Path, text: str) -> Path | None:
    """Write ``text`` over ``path`` (atomically) after copying the old file aside; the new file
    keeps the old one's permissions."""
    backup = None
    if path.exists():
        backup = _backup_path(path)
        shutil.copy2(path, backup)
    write_atomic(path, text)
    if backup is not None:
        shutil.copymode(backup, path)
    return backup


def _switch_claude(path: Path, entry: ImportedServer, servers: Sequence[Mapping[str, Any]]) -> SwitchResult:
    notes: list[str] = []
    doc: dict[str, Any] = {}
    if path.exists():
        parsed = read_jsonc(path.read_text(encoding="utf-8"))
        if not isinstance(parsed.value, dict):
            bad = next((i for i in parsed.issues if i.kind == "syntax"), None)
            raise ConfigError(bad.message if bad else "not a JSON object", file=str(path), line=bad.line if bad else None)
        doc = parsed.value
        if any(i.kind == "comment" for i in parsed.issues):
            notes.append("comments in the file were dropped (strict JSON readers reject them); the backup has them")
    flat = bool(doc) and "mcpServers" not in doc and all(isinstance(v, dict) for v in doc.values())
    table = doc if flat else doc.setdefault("mcpServers", {})
    if not isinstance(table, dict):
        raise ConfigError("`mcpServers` is not an object", file=str(path), key="mcpServers")
    removed = [n for n, e in table.items() if n != ENTRY_NAME and _fronted(n, e, servers)]
    for name in [*removed, ENTRY_NAME]:
        table.pop(name, None)
    table[ENTRY_NAME] = server_entry(entry)
    backup = _write(path, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    kept = tuple(n for n in table if n != ENTRY_NAME)
    return SwitchResult(path, tuple(removed), kept, backup, tuple(notes))


def _server_blocks(lines: Sequence[str]) -> dict[str, list[tuple[int, int]]]:
    """Server name -> (first, last+1) line ranges of its `[mcp_servers.NAME...]` tables."""
    headers = [(i, normalized_key(m.group(2))) for i, line in enumerate(lines) if (m := HEADER.match(line))]
    out: dict[str, list[tuple[int, int]]] = {}
    for n, (i, key) in enumerate(headers):
        parts = key.split(".")
        if len(parts) < 2 or parts[0] != "mcp_servers":
            continue
        end = headers[n + 1][0] if n + 1 < len(headers) else len(lines)
        # Comment lines right above the next table describe it: they stay.
        while end - 1 > i and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
            end -= 1
        out.setdefault(parts[1], []).append((i, end))
    return out


def _switch_codex(path: Path, entry: ImportedServer, servers: Sequence[Mapping[str, Any]]) -> SwitchResult:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}", file=str(path)) from exc
    table = before.get("mcp_servers", {})
    if not isinstance(table, dict):
        raise ConfigError("`mcp_servers` is not a table", file=str(path), key="mcp_servers")
    removed = [n for n, e in table.items() if n != ENTRY_NAME and _fronted(n, e, servers)]
    lines = text.splitlines()
    blocks = _server_blocks(lines)
    drop = sorted((r for name in [*removed, ENTRY_NAME] for r in blocks.get(name, [])), reverse=True)
    for start, end in drop:
        del lines[start:end]
    body = "\n".join(lines).rstrip()
    new_text = (body + "\n\n" if body else "") + render_codex([entry])
    expected = dict(before)
    expected["mcp_servers"] = {n: e for n, e in table.items() if n not in (*removed, ENTRY_NAME)}
    expected["mcp_servers"][ENTRY_NAME] = tomllib.loads(render_codex([entry]))["mcp_servers"][ENTRY_NAME]
    try:
        same = tomllib.loads(new_text) == expected
    except tomllib.TOMLDecodeError:
        same = False
    if not same:
        raise ConfigError(
            "cannot edit this file safely (servers defined inline or with dotted keys?); nothing was written: "
            "paste the snippet `checkrein emit` prints instead",
            file=str(path),
        )
    backup = _write(path, new_text)
    kept = tuple(n for n in expected["mcp_servers"] if n != ENTRY_NAME)
    return SwitchResult(path, tuple(removed), kept, backup)


def switch_client_file(
    client: ClientFormat, path: Path, entry: ImportedServer, servers: Iterable[Mapping[str, Any]]
) -> SwitchResult:
    """Make the client config at ``path`` use ``entry`` (the `checkrein` server) instead of the
    ``servers`` it fronts (`[[servers]]` as written: `Config.as_written`). Raises ``ConfigError``
    when the file cannot be read or edited safely (then nothing is written)."""
    fronted = list(servers)
    if client == "claude":
        return _switch_claude(path, entry, fronted)
    if client == "codex":
        return _switch_codex(path, entry, fronted)
    raise ConfigError(f"--write edits Claude's and Codex's files; for {client}, paste the printed snippet")
