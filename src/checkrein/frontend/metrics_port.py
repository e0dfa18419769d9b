"""``checkrein serve --metrics-port``: ``GET /metrics`` and ``GET /stats`` beside a stdio gateway.

The same guard as the HTTP frontend (`HttpGuard`): an ``Origin`` not allowed -> 403, a configured
token missing -> 401. Bound to loopback unless told otherwise.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Awaitable, Callable

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from checkrein.gate.metering import stats_view
from checkrein.gate.pipeline import Gate
from checkrein.telemetry import PROMETHEUS_CONTENT_TYPE

from .auth import Authenticator
from .http import HttpGuard, QuietServer, bind_socket

__all__ = ["build_metrics_app", "serve_metrics"]

log = logging.getLogger("checkrein.frontend")


def build_metrics_app(gate: Gate, *, auth: Authenticator | None = None) -> ASGIApp:
    """``/metrics`` (Prometheus text) and ``/stats`` (JSON) of ``gate``, behind `HttpGuard`."""
    authenticator = auth if auth is not None else Authenticator.from_config(gate.config)

    async def metrics(request: Request) -> Response:
        del request
        return Response(gate.telemetry.metrics.render(), media_type=PROMETHEUS_CONTENT_TYPE)

    async def stats(request: Request) -> Response:
        del request
        return JSONResponse(stats_view(gate))

    app = Starlette(routes=[Route("/metrics", metrics, methods=["GET"]), Route("/stats", stats, methods=["GET"])])
    return HttpGuard(app, authenticator, tuple(gate.config.gateway.allowed_origins))


async def serve_metrics(
    gate: Gate,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    sock: socket.socket | None = None,
    on_ready: Callable[[int], Awaitable[None]] | None = None,
) -> None:
    """Serve the metrics app until cancelled (no signal handling: the stdio gateway owns signals)."""
    app = build_metrics_app(gate)
    sock = sock or bind_socket(host, port)
    bound = sock.getsockname()[1]
    server = QuietServer(uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False))
    log.info("checkrein metrics on http://%s:%d/metrics", host, bound)
    if on_ready is not None:
        await on_ready(bound)
    await server.serve(sockets=[sock])
