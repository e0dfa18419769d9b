"""How every bundled server starts: the shared command-line flags, `GET /health`, the state dir.

    python -m checkrein.servers.NAME                      stdio (the default)
    python -m checkrein.servers.NAME --http --port 8782   Streamable HTTP on 127.0.0.1:8782/mcp

Only this module knows about transports, so each server module is just its tools.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, NoReturn

from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

__all__ = [
    "DEFAULT_PORTS",
    "LOG_LEVEL",
    "ServeOptions",
    "cannot_start",
    "health_route",
    "parse_server_args",
    "serve",
    "state_dir",
]

LOG_LEVEL: Final[Literal["WARNING"]] = "WARNING"
"""Bundled servers log warnings and worse only: stderr of a stdio server is the client's console."""


@dataclass(frozen=True)
class ServeOptions:
    """The parsed command line of a bundled server."""

    http: bool
    host: str
    port: int


DEFAULT_PORTS = {"monitor": 8781, "sandbox": 8782, "knowledge": 8783}
"""Distinct defaults so the three servers (and the gateway on 8765) can run side by side."""


def state_dir() -> Path:
    """Directory for the servers' files: ``$CHECKREIN_STATE_DIR``, else ``./.checkrein/state``."""
    raw = os.environ.get("CHECKREIN_STATE_DIR")
    return Path(raw) if raw else Path.cwd() / ".checkrein" / "state"


def health_route(name: str, extra: Callable[[], dict[str, Any]] | None = None) -> Route:
    """``GET /health`` answering ``{"status": "ok", "server": name, **extra()}``."""

    async def health(request: Request) -> Response:
        body: dict[str, Any] = {"status": "ok", "server": name}
        if extra is not None:
            body.update(extra())
        return JSONResponse(body)

    return Route("/health", health, methods=["GET"])


def parse_server_args(name: str, argv: Sequence[str] | None = None) -> ServeOptions:
    """Parse ``--http``, ``--host`` and ``--port`` for the bundled server ``name``; exits with
    status 2 on a usage error. Call it before touching any file, so ``--help`` and usage errors
    leave nothing behind."""
    default_port = DEFAULT_PORTS.get(name, 8780)
    prog = f"python -m checkrein.servers.{name}"
    parser = argparse.ArgumentParser(prog=prog, description=f"checkrein bundled MCP server: {name}")
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP (endpoint /mcp) instead of stdio")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind with --http (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=default_port,
                        help=f"port to bind with --http (default {default_port}; 0 picks a free one)")
    ns = parser.parse_args(argv)
    if not 0 <= ns.port <= 65535:
        parser.error("--port must be 0..65535")
    return ServeOptions(http=bool(ns.http), host=str(ns.host), port=int(ns.port))


def cannot_start(name: str, what: str, exc: BaseException) -> NoReturn:
    """Say on one stderr line why server ``name`` cannot start (the client shows it as the
    server's last words, so a traceback would bury it) and exit with status 1."""
    reason = (exc.strerror if isinstance(exc, OSError) else None) or str(exc) or type(exc).__name__
    print(f"{name}: cannot start: {what}: {reason}", file=sys.stderr, flush=True)
    raise SystemExit(1)


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def serve(
    server: MCPServer[Any],
    options: ServeOptions,
    *,
    health: Callable[[], dict[str, Any]] | None = None,
) -> None:
    """Run ``server`` as ``options`` say (stdio unless ``http``); blocks until it stops.

    ``health`` adds fields to the ``GET /health`` answer of the HTTP transport.
    """
    if not options.http:
        server.run("stdio")
        return
    import uvicorn

    app = server.streamable_http_app(host=options.host)
    app.router.routes.append(health_route(server.name, health))
    sock = socket.socket(socket.AF_INET6 if ":" in options.host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((options.host, options.port))  # bound here so --port 0 can say which port it got
    except OSError as exc:
        sock.close()
        cannot_start(server.name, f"cannot listen on {options.host}:{options.port}", exc)
    sock.listen(128)  # connections queue from now on, before uvicorn accepts them
    port = sock.getsockname()[1]
    if not _is_loopback(options.host):
        print(f"{server.name}: warning: serving {options.host} without authentication; anyone who can reach "
              "this port can call its tools", file=sys.stderr, flush=True)
    print(f"{server.name}: serving http://{options.host}:{port}/mcp (health: /health)", file=sys.stderr, flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
