"""Write an `ImportResult` as a commented checkrein config with a default-deny policy.

The written file is validated by `checkrein.config.parse_config` before anyone sees it, so an
import either yields a config that loads or fails with the reason; it is never half-written
(see `write_atomic`).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from checkrein.config.model import parse_config

from .model import ImportedServer, ImportResult
from .toml_text import toml_str, toml_value

__all__ = ["render_checkrein_config", "write_atomic"]


def _server_block(server: ImportedServer) -> list[str]:
    lines = ["[[servers]]", f"name = {toml_str(server.name)}"]
    if server.source_name:
        lines[0] += f"  # {toml_str(server.source_name)} in the source config"
    lines.append(f"transport = {toml_str(server.transport)}")
    if server.transport == "stdio":
        lines.append(f"command = {toml_str(server.command or '')}")
        if server.args:
            lines.append(f"args = {toml_value(list(server.args))}")
        if server.cwd:
            lines.append(f"cwd = {toml_str(server.cwd)}")
        if server.env:
            lines.append(f"env = {toml_value(server.env)}")
    else:
        lines.append(f"url = {toml_str(server.url or '')}")
        if server.headers:
            lines.append(f"headers = {toml_value(server.headers)}")
    if server.timeout_s is not None:
        lines.append(f"timeout_s = {toml_value(server.timeout_s)}")
    if not server.enabled:
        lines.append("enabled = false")
    return lines


def render_checkrein_config(result: ImportResult, *, audit_dir: str = "audit") -> str:
    """checkrein TOML for ``result``: every server, a default-deny policy whose allow list names
    each server's tools commented out, the variables to set for moved secrets, and the notes.

    Raises ``ConfigError`` if the text would not load (a bug, or a source that cannot fit)."""
    out: list[str] = [
        f"# checkrein config imported from {result.source} ({result.format} format).",
        "# Nothing is allowed yet: the policy denies every tool until you open it up below.",
        "# Check it with `checkrein lint <this file>`; run it with `checkrein serve --config <this file>`.",
    ]
    if result.secrets:
        out += ["#", "# Secrets found inline in the source were NOT copied. Set these environment variables:"]
        out += [f"#   {s.variable:<32} (was {s.server}: {s.where})" for s in result.secrets]
    if result.notes:
        out += ["#", "# Import notes:"]
        out += [f"#   {(n.server + ': ') if n.server else ''}{n.message}" for n in result.notes]
    out += ["", "[gateway]", 'name = "checkrein"', "", "[audit]", f"dir = {toml_str(audit_dir)}", ""]
    out += ["[policy]", 'default = "deny"', "# Open up tools one server at a time, e.g. read-only ones first:", "allow = ["]
    out += [f"  # {toml_str(s.name + '__*')}," for s in result.servers]
    out += ["]", ""]
    for server in result.servers:
        out += _server_block(server) + [""]
    text = "\n".join(out)
    # Validated as written: the variables it names are set where checkrein will run, not here.
    parse_config(text, source=f"<import of {result.source}>", environ={}, unset="keep")
    return text


def write_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same directory and an atomic
    rename, so readers see the old file or the whole new one, never a part. Returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target

