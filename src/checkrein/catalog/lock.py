"""The pin lock file `checkrein.lock`: one digest and definition per exposed tool name.

Format (JSON, sorted keys, two-space indent, trailing newline, meant to be committed)::

    {"version": 1, "tools": {"<exposed>": {"digest": "sha256:...", "definition": {...}, "server": "<name>",
                                            "accepted": "<finding>"}}}

``definition`` holds the wire fields of the MCP `Tool` the digest covers
(`ToolDefinition.pinned_fields()`), so `checkrein pin` can show a readable diff. ``server`` (not
covered by the digest; absent in older locks, where the exposed name's first part is the server)
says which `[[servers]]` entry the tool came from, whatever prefix it is exposed under.
``accepted`` (also outside the digest; only for tools the tool-definition review flagged) records
the finding an operator accepted with `checkrein pin --accept`: that exact definition is trusted.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checkrein.canonical import digest
from checkrein.catalog.model import ToolDefinition, split_exposed_name
from checkrein.config import Config
from checkrein.errors import LockFileError

__all__ = ["LOCK_VERSION", "PinnedTool", "load_pinned_tools", "read_lock", "render_lock", "write_lock"]

LOCK_VERSION = 1


@dataclass(frozen=True, slots=True)
class PinnedTool:
    """One reviewed tool: the digest of its canonical definition, and that definition."""

    digest: str
    definition: dict[str, Any]
    server: str | None = None
    """The server the tool came from; ``None`` in locks written before servers had prefixes."""
    accepted: str | None = None
    """The review finding an operator accepted for this definition, or ``None`` (not flagged)."""

    def server_of(self, exposed: str, separator: str = "__") -> str:
        """The pinned tool's server: recorded, or read from the exposed name as older locks did."""
        return self.server if self.server is not None else exposed.partition(separator)[0]


def read_lock(path: Path) -> dict[str, PinnedTool] | None:
    """Read the lock at ``path``: exposed name -> pin, or ``None`` when the file does not exist.

    Raises ``LockFileError`` when the file exists but is unreadable, not JSON, of another version,
    or holds an entry whose digest does not match its definition (a hand-edited lock).
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LockFileError(f"{path}: cannot read lock file: {exc.strerror}") from exc
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LockFileError(f"{path}: lock file is not valid JSON ({exc}); delete it and run `checkrein pin`") from exc
    if not isinstance(data, dict) or data.get("version") != LOCK_VERSION or not isinstance(data.get("tools"), dict):
        raise LockFileError(f"{path}: not a version {LOCK_VERSION} checkrein lock file")
    out: dict[str, PinnedTool] = {}
    for name, entry in data["tools"].items():
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("digest"), str)
            or not isinstance(entry.get("definition"), dict)
        ):
            raise LockFileError(f"{path}: entry {name!r} needs a string `digest` and an object `definition`")
        if digest(entry["definition"]) != entry["digest"]:
            raise LockFileError(
                f"{path}: entry {name!r} has a digest that does not match its definition "
                "(was the lock edited by hand?); run `checkrein pin` to re-record it"
            )
        server = entry.get("server")
        accepted = entry.get("accepted")
        out[name] = PinnedTool(
            entry["digest"], entry["definition"], server if isinstance(server, str) else None, accepted if isinstance(accepted, str) else None
        )
    return out


def render_lock(tools: Mapping[str, PinnedTool]) -> bytes:
    """The exact bytes `write_lock` writes (stable across runs, so the file diffs cleanly)."""
    doc = {
        "version": LOCK_VERSION,
        "tools": {n: _entry(p) for n, p in sorted(tools.items())},
    }
    return (json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def _entry(pin: PinnedTool) -> dict[str, Any]:
    entry: dict[str, Any] = {"digest": pin.digest, "definition": pin.definition}
    if pin.server is not None:
        entry["server"] = pin.server
    if pin.accepted is not None:
        entry["accepted"] = pin.accepted
    return entry


def write_lock(path: Path, tools: Mapping[str, PinnedTool]) -> None:
    """Write the lock atomically (temporary file in the same directory, fsync, rename).

    Raises ``LockFileError`` when the directory is not writable.
    """
    data = render_lock(tools)
    try:
        fd, tmp = tempfile.mkstemp(prefix=".checkrein.lock.", dir=str(path.parent))
    except OSError as exc:
        raise LockFileError(f"{path}: cannot write lock file: {exc.strerror}") from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise LockFileError(f"{path}: cannot write lock file: {exc.strerror}") from exc


def _definition(exposed: str, raw: dict[str, Any], separator: str, recorded_server: str | None = None) -> ToolDefinition:
    """A `ToolDefinition` from one lock entry; optional fields of the wrong type are dropped.

    Raises `LockFileError` when the entry has no object ``inputSchema`` (MCP requires one).
    """
    try:
        server, tool = split_exposed_name(exposed, separator)
    except ValueError:
        server, tool = "", exposed
    if recorded_server is not None:
        server = recorded_server
    name = raw.get("name")
    schema = raw.get("inputSchema")
    if not isinstance(schema, dict):
        raise LockFileError(f"lock entry {exposed!r} has no object `inputSchema`; run `checkrein pin` to re-record it")

    def opt_str(key: str) -> str | None:
        v = raw.get(key)
        return v if isinstance(v, str) else None

    def opt_dict(key: str) -> dict[str, Any] | None:
        v = raw.get(key)
        return v if isinstance(v, dict) else None

    icons = raw.get("icons")
    return ToolDefinition(
        server=server,
        name=name if isinstance(name, str) else tool,
        description=opt_str("description"),
        input_schema=schema,
        output_schema=opt_dict("outputSchema"),
        annotations=opt_dict("annotations"),
        title=opt_str("title"),
        execution=opt_dict("execution"),
        icons=tuple(i for i in icons if isinstance(i, dict)) if isinstance(icons, list) else None,
        meta=opt_dict("_meta"),
    )


def load_pinned_tools(config: Config) -> dict[str, ToolDefinition]:
    """Exposed name -> definition from the config's lock file.

    Raises `LockFileError` (``catalog.lock_invalid``) when the lock is missing or malformed.
    """
    pins = read_lock(config.lock_path)
    if pins is None:
        raise LockFileError(f"no lock file at {config.lock_path}; run `checkrein pin --config ...` first")
    return {name: _definition(name, pin.definition, config.gateway.separator, pin.server) for name, pin in pins.items()}
