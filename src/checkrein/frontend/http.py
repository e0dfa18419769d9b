"""`checkrein serve --transport http`: Streamable HTTP on ``/mcp`` behind an Origin and token guard.

Routes: ``/mcp`` (MCP, both protocol eras), ``GET /health`` (liveness and counts only),
``GET /stats`` (the gate's degradation counters, upstream states, quarantined tools, and every
metric as JSON), ``GET /metrics`` (the same registry in Prometheus text format).

Order of checks for every request (any path): ``Origin`` present and not allowed -> 403; a token
is configured and the request carries no valid ``Authorization: Bearer`` -> 401 (``/health``
excepted, it reveals nothing but liveness). The caller's `Identity` goes into the ASGI scope for
the MCP handlers (`context.IDENTITY_SCOPE_KEY`). A ``mcp-session-id`` opened by another identity
-> 404, as for a session the server does not know (`owners.SessionOwners`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from functools import partial
from pathlib import Path

import anyio
import uvicorn
from mcp.server.streamable_http_manager import (
    StreamableHTTPSessionManager,
    _error_response,  # the SDK's own 404 body, for a session it does not know
)
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from checkrein._switches import switch
from checkrein.gate.grants import identity_key
from checkrein.gate.metering import stats_view
from checkrein.gate.pipeline import Gate
from checkrein.state import SharedState
from checkrein.telemetry import PROMETHEUS_CONTENT_TYPE, CounterSource

from .auth import LOOPBACK_HOSTS, Authenticator, origin_allowed
from .context import IDENTITY_SCOPE_KEY, CallFactory
from .http_json import answer_json_when_possible
from .owners import SESSION_HEADER, SessionOwners
from .server import GatewayServer

__all__ = ["HttpGuard", "QuietServer", "bind_socket", "build_http_app", "serve_http"]

log = logging.getLogger("checkrein.frontend")


class HttpGuard:
    """ASGI middleware: Origin check, bearer token, identity into the scope; with ``owners``, an
    MCP session id works only for the identity that opened it (`SessionOwners`)."""

    def __init__(
        self, app: ASGIApp, auth: Authenticator, allowed_origins: tuple[str, ...], owners: SessionOwners | None = None
    ) -> None:
        self.app = app
        self.auth = auth
        self.allowed_origins = allowed_origins
        self.owners = owners

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        origin = headers.get("origin")
        if origin is not None and not origin_allowed(origin, self.allowed_origins):
            await _error(send, 403, "forbidden", f"Origin {origin!r} is not allowed")
            return
        if scope.get("path") == "/health":
            await self.app(scope, receive, send)
            return
        identity = self.auth.identify(headers.get("authorization"))
        if identity is None:
            await _error(send, 401, "unauthorized", "missing or invalid bearer token", bearer=True)
            return
        scope[IDENTITY_SCOPE_KEY] = identity
        if self.owners is None or not str(scope.get("path", "")).startswith("/mcp"):
            await self.app(scope, receive, send)
            return
        await self._bound(scope, receive, send, headers.get(SESSION_HEADER), identity_key(identity))

    async def _bound(self, scope: Scope, receive: Receive, send: Send, sid: str | None, owner: str) -> None:
        owners = self.owners
        assert owners is not None
        if sid is not None and not owners.admits(sid, owner):
            log.warning("refused a request for session %s: another identity opened it", sid[:64])
            await _error_response("Session not found", 404)(scope, receive, send)
            return
        deleting = sid is not None and scope.get("method") == "DELETE"

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                status = int(message.get("status", 500))
                if sid is None and status < 300:
                    for key, value in message.get("headers", []):
                        if key.decode("latin-1").lower() == SESSION_HEADER:
                            owners.record(value.decode("latin-1"), owner)
                elif deleting and sid is not None and status < 300:
                    owners.forget(sid)
            await send(message)

        await self.app(scope, receive, watch)


async def _error(send: Send, status: int, error: str, message: str, *, bearer: bool = False) -> None:
    body = json.dumps({"error": error, "message": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if bearer:
        headers.append((b"www-authenticate", b'Bearer realm="checkrein"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def build_http_app(
    gate: Gate,
    *,
    host: str = "127.0.0.1",
    auth: Authenticator | None = None,
    ui_dir: Path | None = None,
    state: SharedState | None = None,
) -> ASGIApp:
    """The ASGI app: ``/mcp`` (Streamable HTTP, both protocol eras) and ``GET /health``; with
    ``ui_dir``, the web view of that audit directory under ``/ui/``. With a shared ``state``
    (Redis), sessions opened on one replica continue on any other.

    Raises ``ConfigError`` when a configured token refers to an unset environment variable.
    """
    config = gate.config
    authenticator = auth if auth is not None else Authenticator.from_config(config)
    front = GatewayServer(gate, CallFactory.for_http())

    async def health(request: Request) -> Response:
        del request
        infos = gate.upstream_infos()
        ready = sum(1 for i in infos if i.state == "ready")
        return JSONResponse({"status": "ok", "servers": len(infos), "ready": ready, "tools": len(gate.catalog.ok_tools)})

    async def stats(request: Request) -> Response:
        del request
        return JSONResponse(stats_view(gate))

    async def metrics(request: Request) -> Response:
        del request
        return Response(gate.telemetry.metrics.render(), media_type=PROMETHEUS_CONTENT_TYPE)

    # HttpGuard decides on Origin; the SDK's own check below must not be stricter than it is.
    loopback_origins = [
        f"{scheme}://{h}{port}"
        for scheme in ("http", "https")
        for h in ("127.0.0.1", "localhost", "[::1]")
        for port in ("", ":*")
    ]
    configured = [o.rstrip("/") for o in config.gateway.allowed_origins]
    origins = [*loopback_origins, *configured, *config.gateway.allowed_origins]
    loopback = host in LOOPBACK_HOSTS
    security = TransportSecuritySettings(
        # Host-header (DNS rebinding) checks only make sense when we know every name we answer to.
        enable_dns_rebinding_protection=loopback,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"] if loopback else [],
        allowed_origins=origins,
    )
    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/stats", stats, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
    ]
    inner: ASGIApp
    owners: SessionOwners | None = SessionOwners()
    if state is None:
        inner = front.server.streamable_http_app(host=host, transport_security=security, custom_starlette_routes=routes)
        manager: StreamableHTTPSessionManager = front.server.session_manager
    else:  # a fleet: sessions live in the shared state, any replica continues them
        from .sessions import fleet_http_app

        inner, fleet = fleet_http_app(front.server, security, routes, state, replica=gate.telemetry.instance_id)
        gate.telemetry.metrics.add_source(
            CounterSource("http", lambda: fleet.counters, gate.telemetry.metrics.scrape_errors, help_text="HTTP sessions")
        )
        owners = None  # the fleet's session manager checks every request's owner against the shared record
        manager = fleet
    if switch("CHECKREIN_FAST_PATH") == "on":
        from .http_lean import HttpLane

        answer_json_when_possible(manager, partial(HttpLane, front, front.calls))
    if ui_dir is None:
        return HttpGuard(inner, authenticator, tuple(config.gateway.allowed_origins), owners)
    from checkrein.ui import LOOPBACK_HOSTS as UI_HOSTS
    from checkrein.ui import BrowserLogin, UiMount, build_ui_app

    ui = build_ui_app(ui_dir, allowed_hosts=UI_HOSTS if loopback else None)
    guarded = HttpGuard(UiMount(inner, ui, prefix="/ui"), authenticator, tuple(config.gateway.allowed_origins), owners)
    return BrowserLogin(guarded, prefix="/ui", login_hint="The token is the gateway's ([gateway] token, an "
                        "[[identities]] token, or env CHECKREIN_TOKEN).")


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0 picks a free one), whose accepted
    connections have ``TCP_NODELAY``.

    asyncio sets ``TCP_NODELAY`` on accepted sockets only when the listener's ``proto`` is
    ``IPPROTO_TCP``; a socket made with ``proto=0`` got none, and every SSE event then waited for
    Nagle and the client's delayed ACK (about 40 ms per tools/call). Both are set: the protocol
    number for asyncio, the option on the listener for kernels that pass it on to accepted sockets.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


async def serve_http(
    gate: Gate,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    sock: socket.socket | None = None,
    on_ready: Callable[[int], Awaitable[None]] | None = None,
    ui_dir: Path | None = None,
    state: SharedState | None = None,
) -> None:
    """Serve ``gate`` (already started) over HTTP until cancelled (with the audit view of
    ``ui_dir`` under ``/ui/`` when given)."""
    app = build_http_app(gate, host=host, ui_dir=ui_dir, state=state)
    sock = sock or bind_socket(host, port)
    bound = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False, http=http_parser())
    server = QuietServer(config)
    log.info("checkrein serving Streamable HTTP on http://%s:%d/mcp", host, bound)
    if on_ready is not None:
        await on_ready(bound)
    async with anyio.create_task_group() as tg:
        if threading.current_thread() is threading.main_thread():
            tg.start_soon(_exit_on_signal, server)
        await server.serve(sockets=[sock])
        tg.cancel_scope.cancel()


def http_parser() -> str:
    """uvicorn's HTTP/1.1 parser: ``auto`` (httptools where installed, the default dependency on
    Linux and macOS, else h11), or ``CHECKREIN_HTTP_PARSER=h11`` / ``httptools``."""
    return switch("CHECKREIN_HTTP_PARSER")


class QuietServer(uvicorn.Server):
    """uvicorn without its own signal handling: it would re-raise SIGTERM after its shutdown and
    kill the process before the gate closes its upstreams and the audit trail."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def _exit_on_signal(server: uvicorn.Server) -> None:
    """SIGTERM/SIGINT: let uvicorn finish in-flight requests and return; the caller then closes."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.warning("received signal %s; shutting down", signum)
            server.should_exit = True
            return

