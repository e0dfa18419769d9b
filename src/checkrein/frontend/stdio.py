"""`checkrein serve` over stdio: protocol messages only on stdout, logs on stderr.

The SDK's stdio transport turns an unparsable line into an exception on the read stream, and the
server then drops it silently. A client that sent garbage deserves an answer, so the read stream
is wrapped: each such exception is answered with a JSON-RPC error (``-32700`` parse error, or
``-32600`` invalid request with the request's id when it can be read) and never reaches the server.
"""

from __future__ import annotations

import logging
from types import TracebackType
from typing import Any, Self

import anyio
import mcp.types as types
from mcp.server.stdio import stdio_server
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from checkrein.gate.pipeline import Gate

from .context import CallFactory
from .server import GatewayServer

__all__ = ["AnswerMalformed", "error_for", "serve_stdio"]

log = logging.getLogger("checkrein.frontend")


def error_for(exc: Exception) -> types.JSONRPCError:
    """The JSON-RPC error answering an inbound line that did not parse as a JSON-RPC message."""
    if isinstance(exc, ValidationError):
        errors = exc.errors()
        if errors and errors[0].get("type") == "json_invalid":
            return types.JSONRPCError(
                jsonrpc="2.0", id=None, error=types.ErrorData(code=types.PARSE_ERROR, message="Parse error: not JSON")
            )
        # Errors carry only the failing part; a "missing field" one carries the whole object.
        rid = next((e["input"].get("id") for e in errors if isinstance(e.get("input"), dict)), None)
        ok_id = rid if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None
        return types.JSONRPCError(
            jsonrpc="2.0",
            id=ok_id,
            error=types.ErrorData(code=types.INVALID_REQUEST, message="Invalid Request: not a JSON-RPC 2.0 message"),
        )
    return types.JSONRPCError(
        jsonrpc="2.0", id=None, error=types.ErrorData(code=types.PARSE_ERROR, message=f"Parse error: {type(exc).__name__}")
    )


class AnswerMalformed:
    """A `ReadStream` over ``inner`` that answers malformed inbound lines on ``write`` itself."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception], write: WriteStream[SessionMessage]) -> None:
        self._inner = inner
        self._write = write
        self.malformed = 0

    @property
    def last_context(self) -> Any:
        # The SDK reads the sender's contextvars from the stream it was given; pass them through.
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            self.malformed += 1
            log.warning("malformed message from the client: %s", str(item).splitlines()[0] if str(item) else item)
            await self._write.send(SessionMessage(error_for(item)))

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        return None


async def serve_stdio(gate: Gate) -> None:
    """Serve ``gate`` (already started) on this process's stdin/stdout until the client closes it."""
    front = GatewayServer(gate, CallFactory.for_stdio())
    try:
        async with stdio_server() as (read, write):
            await front.server.run(AnswerMalformed(read, write), write, front.initialization_options())
    finally:
        front.close()
