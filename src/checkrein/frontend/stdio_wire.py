"""The stdio frontend's wire: newline-delimited JSON-RPC on this process's stdin/stdout, on the
event loop (asyncio pipes), without the SDK's worker threads.

While serving, fd 0 points at the null device and fd 1 at stderr (as the SDK's ``stdio_server``
does): a stray ``print`` or a child that inherits them can neither read the client's messages
nor write into the protocol stream. The wire itself uses private duplicates of both. Both are
restored on exit, and the pipes are put back into blocking mode (a terminal shared with a shell
must not be left non-blocking).

Reading is bounded: a line longer than ``max_line_bytes`` is dropped (up to its newline) and
reported as `LineTooLong` in its place, so one huge message cannot make the gateway buffer
without end. A stdin or stdout that is a regular file (``checkrein serve < requests.jsonl``)
or ``/dev/null`` cannot be watched by the event loop; it is read in a worker thread and written
directly.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import fcntl
import logging
import os
import selectors
import stat
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import cast

import anyio
import anyio.to_thread

__all__ = ["LineTooLong", "StdioWire", "open_stdio_wire"]

log = logging.getLogger("checkrein.frontend")

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The largest message the stdio frontend accepts (one line of JSON)."""

_READ_CHUNK = 256 * 1024
_HIGH_WATER_LINES = 64
"""Complete lines buffered before the pipe stops being read (the client then blocks writing)."""


@dataclass(frozen=True, slots=True)
class LineTooLong:
    """Stands in for an inbound line that was longer than the limit (and was dropped)."""

    size: int


class _Lines(asyncio.Protocol):
    """Splits what arrives on a read pipe into lines, pausing the pipe while the consumer is behind."""

    def __init__(self, max_line_bytes: int) -> None:
        self._max = max_line_bytes
        self._partial: list[bytes] = []
        self._partial_size = 0
        self._skipping = 0  # bytes of an over-long line dropped so far (0: not skipping)
        self.lines: collections.deque[bytes | LineTooLong] = collections.deque()
        self.eof = False
        self._waiter: asyncio.Future[None] | None = None
        self._transport: asyncio.ReadTransport | None = None
        self._paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a read pipe's transport (uvloop's is no subclass of asyncio.ReadTransport, only alike)
        self._transport = cast(asyncio.ReadTransport, transport)

    def data_received(self, data: bytes) -> None:
        self.feed(data)
        if len(self.lines) >= _HIGH_WATER_LINES and not self._paused and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()

    def feed(self, data: bytes) -> None:
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                self._hold(data[start:] if start else data)
                break
            self._line_end(data[start:end])
            start = end + 1
        self._wake()

    def _hold(self, piece: bytes) -> None:
        if not piece:
            return
        if self._skipping:
            self._skipping += len(piece)
            return
        self._partial.append(piece)
        self._partial_size += len(piece)
        if self._partial_size > self._max:
            self._skipping = self._partial_size
            self._partial, self._partial_size = [], 0

    def _line_end(self, tail: bytes) -> None:
        if self._skipping:
            self.lines.append(LineTooLong(self._skipping + len(tail)))
            self._skipping = 0
            return
        if self._partial:
            line = b"".join([*self._partial, tail])
            self._partial, self._partial_size = [], 0
        else:
            line = tail
        if len(line) > self._max:
            self.lines.append(LineTooLong(len(line)))
        elif line.strip():
            self.lines.append(line)

    def eof_received(self) -> bool | None:
        self.finish()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.finish()

    def finish(self) -> None:
        if not self.eof:
            self.eof = True
            if self._partial and not self._skipping:
                self._line_end(b"")  # a last line without its newline still counts
            elif self._skipping:
                self.lines.append(LineTooLong(self._skipping))
                self._skipping = 0
        self._wake()

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def next(self) -> bytes | LineTooLong | None:
        while not self.lines:
            if self.eof:
                return None
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        line = self.lines.popleft()
        if self._paused and len(self.lines) < _HIGH_WATER_LINES // 2 and self._transport is not None:
            self._paused = False
            self._transport.resume_reading()
        return line


class _Drain(asyncio.Protocol):
    """Flow control for a write pipe: `drain` waits while the pipe's buffer is over its limit."""

    def __init__(self) -> None:
        self._paused = False
        self._waiters: list[asyncio.Future[None]] = []
        self.closed = asyncio.Event()

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._release()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()
        self._paused = False
        self._release()

    def _release(self) -> None:
        waiters, self._waiters = self._waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)

    async def drain(self) -> None:
        if self._paused and not self.closed.is_set():
            w = asyncio.get_running_loop().create_future()
            self._waiters.append(w)
            await w


class StdioWire:
    """One line in (`next_line`), one line out (`write_line`); writes never interleave."""

    def __init__(self, read_fd: int, write_fd: int, max_line_bytes: int) -> None:
        self._read_fd = read_fd
        self._write_fd = write_fd
        self._lines = _Lines(max_line_bytes)
        self._drain = _Drain()
        self._write_transport: asyncio.WriteTransport | None = None
        self._read_transport: asyncio.ReadTransport | None = None
        self._reader_thread = False
        self.written = 0
        """Lines written (for tests and counters)."""

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        if _pollable(self._read_fd):
            # the loop gets a duplicate it owns: uvloop closes the descriptor of a pipe transport it
            # closes (asyncio closes the file object), and ours must survive to be restored
            transport, _ = await loop.connect_read_pipe(lambda: self._lines, os.fdopen(os.dup(self._read_fd), "rb", 0))
            self._read_transport = transport
        else:
            self._reader_thread = True
        if _pollable(self._write_fd):
            wt, _ = await loop.connect_write_pipe(lambda: self._drain, os.fdopen(os.dup(self._write_fd), "wb", 0))
            self._write_transport = wt

    @property
    def closed(self) -> bool:
        """True once the client closed our stdout (nobody reads what we write)."""
        return self._drain.closed.is_set()

    async def next_line(self) -> bytes | LineTooLong | None:
        """The next non-empty line without its newline; ``None`` at end of input."""
        if self._reader_thread:
            while not self._lines.lines and not self._lines.eof:
                chunk = await anyio.to_thread.run_sync(os.read, self._read_fd, _READ_CHUNK)
                if chunk:
                    self._lines.feed(chunk)
                else:
                    self._lines.finish()
        return await self._lines.next()

    async def write_line(self, data: bytes) -> None:
        """Write ``data`` and a newline as one unit; waits while the client is not reading.

        A client that closed our stdout gets nothing (the caller learns it from `closed`).
        """
        if self._drain.closed.is_set():
            return
        self.written += 1
        if self._write_transport is None:
            _write_all(self._write_fd, data + b"\n")
            return
        self._write_transport.write(data + b"\n")
        await self._drain.drain()

    async def wait_closed(self) -> None:
        """Return once our stdout is closed by the client."""
        await self._drain.closed.wait()

    async def flush(self, timeout_s: float = 2.0) -> None:
        """Wait (bounded) until everything written has left for the client."""
        transport = self._write_transport
        with anyio.move_on_after(timeout_s):
            while transport is not None and transport.get_write_buffer_size() and not self.closed:
                await asyncio.sleep(0.005)

    def close(self) -> None:
        for transport in (self._read_transport, self._write_transport):
            if transport is not None:
                transport.close()


def _pollable(fd: int) -> bool:
    """Whether the event loop can watch ``fd``: pipes and sockets, and the character devices
    epoll accepts (a terminal, not ``/dev/null``, which epoll refuses with EPERM)."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return True
    if not stat.S_ISCHR(mode):
        return False
    probe = selectors.DefaultSelector()
    try:
        probe.register(fd, selectors.EVENT_READ)
    except (OSError, ValueError):
        return False
    finally:
        probe.close()
    return True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


@contextlib.contextmanager
def _claimed(fd: int, diversion: int) -> Iterator[int]:
    """A private duplicate of ``fd`` (close-on-exec, above 2) while ``fd`` points at ``diversion``."""
    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    blocking = os.get_blocking(private)
    try:
        os.dup2(diversion, fd)
        try:
            yield private
        finally:
            os.dup2(private, fd)
    finally:
        with contextlib.suppress(OSError):
            os.set_blocking(private, blocking)
        os.close(private)


@contextlib.asynccontextmanager
async def open_stdio_wire(
    read_fd: int | None = None, write_fd: int | None = None, *, max_line_bytes: int = MAX_LINE_BYTES
) -> AsyncIterator[StdioWire]:
    """The wire over this process's stdin/stdout (claimed as the module docstring says), or over
    the given descriptors (tests), which are used as they are and not closed."""
    with contextlib.ExitStack() as stack:
        if read_fd is None or write_fd is None:
            devnull = os.open(os.devnull, os.O_RDONLY)
            try:
                read_fd = stack.enter_context(_claimed(0, devnull))
            finally:
                os.close(devnull)
            write_fd = stack.enter_context(_claimed(1, 2))
        wire = StdioWire(read_fd, write_fd, max_line_bytes)
        await wire._open()
        try:
            yield wire
        finally:
            with anyio.CancelScope(shield=True):
                await wire.flush()
            wire.close()
            await asyncio.sleep(0)  # let the transports finish closing before the fds are restored
