"""checkrein.frontend: the merged catalog as one MCP server, over stdio and Streamable HTTP."""

from .auth import Authenticator, origin_allowed
from .context import CallFactory, parse_traceparent
from .http import HttpGuard, bind_socket, build_http_app, serve_http
from .server import REFUSED_ERROR_CODE, GatewayServer
from .stdio import serve_stdio

__all__ = [
    "REFUSED_ERROR_CODE",
    "Authenticator",
    "CallFactory",
    "GatewayServer",
    "HttpGuard",
    "bind_socket",
    "build_http_app",
    "origin_allowed",
    "parse_traceparent",
    "serve_http",
    "serve_stdio",
]
