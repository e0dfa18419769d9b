"""`checkrein serve` over stdio: protocol messages only on stdout, logs on stderr.

The SDK's stdio transport turns an unparsable line into an exception on the read stream, and the
server then drops it silently. A client that sent garbage deserves an answer, so the read stream
is wrapped: each such exception is answered with a JSON-RPC error (``-32700`` parse error, or
``-32600`` invalid request with the request's id when it can be read) and never reaches the server.

stdin is read by `CancellableStdin` rather than by the SDK's reader, whose blocking worker thread
kept a cancelled gateway (Ctrl-C in a terminal) waiting for Enter or Ctrl-D.
"""

from __future__ import annotations

import io
import logging
import os
import select
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Self

if sys.platform != "win32":
    import fcntl

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.server.stdio import stdio_server
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from checkrein.gate.pipeline import Gate

from .context import CallFactory
from .server import GatewayServer

__all__ = ["AnswerMalformed", "CancellableStdin", "error_for", "serve_stdio"]

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


class CancellableStdin(anyio.AsyncFile[str]):
    """The client's stdin as the SDK's stdio transport reads it, except that a cancelled read
    returns at once.

    The SDK reads stdin with a blocking ``readline`` in a worker thread that cannot be cancelled,
    so Ctrl-C on a gateway served in a terminal left it waiting for Enter or Ctrl-D
    (modelcontextprotocol/python-sdk#3551). Here the worker waits for data with ``select`` in
    slices of ``slice_s`` and checks a stop flag between them: a cancelled read ends within one
    slice, and no thread is left blocked on the descriptor.
    """

    def __init__(self, fd: int, *, slice_s: float = 0.1) -> None:
        super().__init__(io.StringIO())  # only `readline` (below) is used, by `async for`
        self._fd = fd
        self._slice_s = slice_s
        self._buffer = b""
        self._eof = False
        self._stop = threading.Event()

    def _chunk(self) -> bytes:
        while not self._stop.is_set():
            ready, _, _ = select.select([self._fd], [], [], self._slice_s)
            if ready:
                return os.read(self._fd, 65536)
        return b""

    async def readline(self) -> str:
        while b"\n" not in self._buffer and not self._eof:
            try:
                chunk = await anyio.to_thread.run_sync(self._chunk, abandon_on_cancel=True)
            except anyio.get_cancelled_exc_class():
                self._stop.set()
                raise
            self._eof = not chunk
            self._buffer += chunk
        line, sep, rest = self._buffer.partition(b"\n")
        self._buffer = rest
        return (line + sep).decode("utf-8", errors="replace")


@contextmanager
def _claim_stdin() -> Iterator[anyio.AsyncFile[str] | None]:
    """Serve the wire from a private copy of fd 0 read by `CancellableStdin`, with fd 0 itself
    pointing at the null device meanwhile (as the SDK does: nothing else may read the client's
    messages); ``None`` where that cannot be done (no fd-backed stdin, Windows): then the SDK's
    own reader is used."""
    try:
        if sys.platform == "win32" or sys.stdin is None or sys.stdin.fileno() != 0:
            yield None
            return
        private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except (OSError, ValueError, io.UnsupportedOperation):
        yield None
        return
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    try:
        yield CancellableStdin(private)
    finally:
        os.dup2(private, 0)
        # `private` stays open: a reader thread may still be in select() on it for one slice.


async def serve_stdio(gate: Gate) -> None:
    """Serve ``gate`` (already started) on this process's stdin/stdout until the client closes it
    or the task is cancelled (which returns at once, even while waiting for the client)."""
    front = GatewayServer(gate, CallFactory.for_stdio())
    try:
        with _claim_stdin() as stdin:
            async with stdio_server(stdin=stdin) as (read, write):
                await front.server.run(AnswerMalformed(read, write), write, front.initialization_options())
    finally:
        front.close()
