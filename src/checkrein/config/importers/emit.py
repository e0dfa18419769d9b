"""The snippet that switches a client over to checkrein: one `checkrein` server entry."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from checkrein.config.model import load_config
from checkrein.errors import ConfigError

from .claude import render_claude
from .codex import render_codex
from .harbor import is_loopback, render_harbor
from .model import ClientFormat, ImportedServer

__all__ = ["EmitTransport", "checkrein_entry", "emit_client_config", "self_command"]

EmitTransport = Literal["stdio", "http"]


def self_command() -> tuple[str, tuple[str, ...]]:
    """How a client starts this very checkrein without its virtualenv on PATH: the absolute path
    of the running ``checkrein`` script, else ``<this python> -m checkrein`` (run as a module)."""
    argv0 = sys.argv[0] if sys.argv else ""
    found = argv0 if os.sep in argv0 else shutil.which(argv0) if argv0 else None
    if found:
        script = Path(os.path.abspath(found))  # not resolved: a venv's bin/ entries are symlinks
        if script.name == "checkrein" and script.is_file() and os.access(script, os.X_OK):
            return str(script), ()
    return sys.executable, ("-m", "checkrein")


def checkrein_entry(
    *,
    config_path: str,
    transport: EmitTransport = "stdio",
    url: str | None = None,
    command: str | None = None,
    token_env: str | None = "CHECKREIN_TOKEN",
) -> ImportedServer:
    """The one server a client needs: ``checkrein serve --config <abs path>`` over stdio, or the
    gateway's Streamable HTTP ``url`` with a bearer token read from ``token_env`` (never inline).

    ``command`` is how the client starts checkrein; by default the running one (`self_command`)."""
    if transport == "stdio":
        program, prefix = (command, ()) if command else self_command()
        return ImportedServer(
            name="checkrein", transport="stdio", command=program, args=(*prefix, "serve", "--config", config_path)
        )
    if not url or not re.match(r"^https?://", url):
        raise ConfigError("--transport http needs --url http(s)://host:port/mcp")
    headers = {"Authorization": "Bearer ${" + token_env + "}"} if token_env else {}
    return ImportedServer(name="checkrein", transport="streamable-http", url=url, headers=headers)


def emit_client_config(
    client: ClientFormat,
    *,
    config: str,
    transport: EmitTransport = "stdio",
    url: str | None = None,
    command: str | None = None,
    token_env: str | None = "CHECKREIN_TOKEN",
) -> str:
    """Text to paste into ``client``'s config so it uses checkrein instead of the raw servers.

    Loads ``config`` first (raises ``ConfigError`` if it does not load; unset variables are
    allowed), so the snippet never points at a config the gateway would refuse; the header comment lists the servers it replaces."""
    cfg = load_config(config, unset="keep")  # the variables need to be set where the client runs checkrein
    if client == "harbor" and command is None:
        command = "checkrein"  # runs inside the task's container, where this machine's paths mean nothing
    entry = checkrein_entry(
        config_path=str(Path(config).resolve()), transport=transport, url=url, command=command, token_env=token_env
    )
    names = ", ".join(s.name for s in cfg.servers) or "(none)"
    if client == "claude":
        # JSON has no comments: the caller prints the replaced servers to stderr instead.
        return render_claude([entry])
    head = f"# checkrein in front of: {names}. Remove those servers' own entries from this file.\n"
    if transport == "http" and token_env:
        head += f"# Set {token_env} to the gateway's bearer token (`[gateway] token`).\n"
    if client == "harbor" and transport == "http" and is_loopback(urlsplit(entry.url or "").hostname or ""):
        # Inside a Harbor task, loopback is the agent's own container (lint: harbor.loopback-url).
        head += "# In a Harbor task, run checkrein as a compose sidecar and use its service name, e.g. http://checkrein:8765/mcp.\n"
    return head + (render_codex([entry]) if client == "codex" else render_harbor([entry]))
