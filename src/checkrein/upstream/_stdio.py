"""A stdio transport that keeps the server's stderr in a ring buffer and watches the process.

The SDK's ``stdio_client`` writes the server's stderr to a file object of ours, which would either
pollute our own stderr (and, in stdio frontend mode, sit next to the protocol) or grow a temp file
without bound. This transport reads stderr through a pipe into a bounded ``StderrTail`` so a
failed start can quote the last lines, and it records what the process did (exit code, the first
line that was not JSON-RPC) for the error message.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import mcp.types as types
import pydantic_core
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from checkrein.upstream.raw import RawRequests
from checkrein.upstream.spawn import spawn_stdio

__all__ = ["StderrTail", "StdioProcess", "open_stdio"]

logger = logging.getLogger("checkrein.upstream.stdio")
_stderr_log = logging.getLogger("checkrein.upstream.stderr")

_EXIT_GRACE_S = 2.0
"""How long a server may take to exit after its stdin closes before its process group is killed."""
_DIAGNOSIS_WAIT_S = 2.0
"""How long an exited server's exit code and last stderr lines are awaited for the error message."""
_MAX_LINE_BYTES = 64 * 1024 * 1024
"""One JSON-RPC message larger than this is treated as a broken server, not buffered forever."""


class StderrTail:
    """The last ``max_lines`` lines a server wrote to stderr (each cut to ``max_line_chars``).

    With ``log_as``, every line is also logged at DEBUG on ``checkrein.upstream.stderr`` under
    that server name, for operators who want the servers' own logs.
    """

    def __init__(self, max_lines: int = 200, max_line_chars: int = 2000, *, log_as: str | None = None) -> None:
        self._log_as = log_as
        self._lines: deque[str] = deque(maxlen=max_lines)
        self._partial = b""
        self._max_line_chars = max_line_chars
        self.total_bytes = 0

    def feed(self, chunk: bytes) -> None:
        self.total_bytes += len(chunk)
        data = self._partial + chunk
        *lines, self._partial = data.split(b"\n")
        for line in lines:
            text = line.decode("utf-8", "replace").rstrip("\r")[: self._max_line_chars]
            self._lines.append(text)
            if self._log_as is not None:
                _stderr_log.debug("[%s] %s", self._log_as, text)
        if len(self._partial) > self._max_line_chars * 4:
            # A server writing one endless line: keep a bounded prefix.
            self._lines.append(self._partial.decode("utf-8", "replace")[: self._max_line_chars])
            self._partial = b""

    def tail(self, n: int = 20) -> list[str]:
        """The last ``n`` lines, including an unterminated last line."""
        lines = list(self._lines)
        if self._partial:
            lines.append(self._partial.decode("utf-8", "replace")[: self._max_line_chars])
        return lines[-n:] if n > 0 else []


@dataclass
class StdioProcess:
    """What one server process did; filled in while it runs."""

    stderr: StderrTail = field(default_factory=StderrTail)
    pid: int | None = None
    returncode: int | None = None
    bad_output: str | None = None
    """The first stdout line that was not a JSON-RPC message (cut to 200 characters)."""
    exited: anyio.Event = field(default_factory=anyio.Event)
    """Set once stdout reached EOF (the process exited or closed it)."""

    def describe(self, tail_lines: int = 20) -> str:
        """A readable account of how the process ended, with the tail of its stderr."""
        parts: list[str] = []
        if self.returncode is not None:
            parts.append(f"process exited with code {self.returncode}")
        if self.bad_output is not None:
            parts.append(f"it wrote non-JSON-RPC output on stdout: {self.bad_output!r}")
        tail = self.stderr.tail(tail_lines)
        if tail:
            parts.append("last stderr lines:\n  " + "\n  ".join(tail))
        else:
            parts.append("no stderr output")
        return "; ".join(parts)


@asynccontextmanager
async def open_stdio(
    command: str,
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    process_info: StdioProcess,
    process: anyio.abc.Process | None = None,
    raw: RawRequests | None = None,
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    """Spawn ``command`` in its own process group and yield the session's stream pair.

    The child's environment is the SDK's safe default set (PATH, HOME, ...) plus ``env``, so the
    gateway's own secrets are not inherited. On exit, stdin is closed, the process gets
    ``_EXIT_GRACE_S`` to leave, and then its whole group is killed. Raises ``UpstreamUnavailable``
    when the command cannot be started (not found, not executable, bad cwd). ``process``, when
    given, is that command already started by `spawn_stdio` (an early start): it is adopted.

    ``raw`` (optional) is bound to the server's stdin and sees every line from its stdout first:
    answers to its own requests never reach the session (`checkrein.upstream.raw`).
    """
    if process is None:
        process = await spawn_stdio(command, args, env=env, cwd=cwd)
    process_info.pid = process.pid
    stderr_done = anyio.Event()
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](16)

    async def pump_stdout() -> None:
        assert process.stdout is not None
        # Chunks of a line still being received; joined once its newline arrives, so a large
        # message costs one copy rather than one per chunk.
        pending: list[bytes] = []
        pending_size = 0
        try:
            async with read_send:
                async for chunk in process.stdout:
                    if b"\n" not in chunk:
                        pending.append(chunk)
                        pending_size += len(chunk)
                        if pending_size > _MAX_LINE_BYTES:
                            process_info.bad_output = f"a line longer than {_MAX_LINE_BYTES} bytes"
                            return
                        continue
                    *lines, rest = b"".join([*pending, chunk]).split(b"\n")
                    pending, pending_size = ([rest], len(rest)) if rest else ([], 0)
                    for line in lines:
                        if line.strip():
                            message = _parse(line, process_info)
                            if raw is not None and not isinstance(message, Exception) and await raw.take(message):
                                continue
                            await read_send.send(_message(message, line, process_info))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            logger.debug("stdout pump of pid %s stopped", process.pid)
        finally:
            if raw is not None:
                raw.close()
            try:
                with suppress(OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    await process.stdout.aclose()
                # Give the exit code and the last stderr lines a moment to land, so the error
                # message can name them (bounded: a grandchild may hold stderr open).
                with anyio.move_on_after(_DIAGNOSIS_WAIT_S):
                    await stderr_done.wait()
                    while process.returncode is None:
                        await anyio.sleep(0.01)
            finally:
                process_info.returncode = process.returncode
                process_info.exited.set()

    async def pump_stderr() -> None:
        assert process.stderr is not None
        try:
            with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
                async for chunk in process.stderr:
                    process_info.stderr.feed(chunk)
        finally:
            stderr_done.set()

    async def pump_stdin() -> None:
        assert process.stdin is not None
        try:
            async with write_recv:
                async for message in write_recv:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode("utf-8") + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The server stopped reading (it died): end the session's read side so no request waits.
            await read_send.aclose()

    stdin_writer = getattr(process.stdin, "_stream", None)  # anyio's asyncio StreamWriter, when it is one

    async def write_line(data: bytes) -> None:
        assert process.stdin is not None
        if not isinstance(stdin_writer, asyncio.StreamWriter):
            await process.stdin.send(data + b"\n")
            return
        # anyio's `send` ends every write with a shielded checkpoint (one more event-loop pass per
        # request); the stream's own `drain` already waits while the pipe is full.
        try:
            stdin_writer.write(data + b"\n")
            await stdin_writer.drain()
        except (ConnectionResetError, BrokenPipeError, RuntimeError) as exc:
            if stdin_writer.is_closing():  # as anyio's `send` maps it
                raise anyio.BrokenResourceError from exc
            raise

    if raw is not None:
        raw.bind(write_line)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pump_stdout)
        tg.start_soon(pump_stderr)
        tg.start_soon(pump_stdin)
        try:
            yield read_recv, write_send
        finally:
            with anyio.CancelScope(shield=True):
                await write_send.aclose()
                await read_recv.aclose()
                await _stop(process)
                with anyio.move_on_after(_DIAGNOSIS_WAIT_S):
                    await stderr_done.wait()
                await _close_output(process)
                process_info.returncode = process.returncode
            tg.cancel_scope.cancel()


def _parse(line: bytes, process_info: StdioProcess) -> Any:
    """One stdout line as parsed JSON, or the parse error as a value for the session to surface.

    pydantic's parser (the SDK's own) keeps integers past 64 bits exact."""
    try:
        return pydantic_core.from_json(line)
    except ValueError as exc:
        if "recursion limit" in str(exc):
            deep = _parse_deep(line)
            if deep is not None:
                return deep
        _bad_output(line, process_info)
        return exc


def _parse_deep(line: bytes) -> Any:
    """A message nested deeper than the fast parser allows (about 128 levels): parsed by the
    standard library's, so result inspection can judge it; deeper than that too, the request it
    answers gets a parse error instead of waiting for its timeout. ``None``: no request to tell."""
    try:
        return json.loads(line)
    except (RecursionError, ValueError):
        request_id = _top_level_id(line)
    if request_id is None:
        return None
    error = {
        "code": types.PARSE_ERROR,
        "message": "the server's answer nests too deep to be read (JSON recursion limit exceeded)",
    }
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


_ID_VALUE = re.compile(rb'\s*:\s*(-?[0-9]+|"(?:[^"\\]|\\.){0,200}")\s*[,}]')
_ID_SCAN_BYTES = 1 << 20


def _top_level_id(line: bytes) -> int | str | None:
    """The ``id`` member of the JSON object ``line`` (only at its top level), found without
    parsing the rest; within the first ``_ID_SCAN_BYTES`` bytes."""
    depth, i, end = 0, 0, min(len(line), _ID_SCAN_BYTES)
    key_next = False
    while i < end:
        c = line[i]
        if c == 0x22:  # a string: skip it, and read it when it is a top-level key named "id"
            j = i + 1
            while j < end and line[j] != 0x22:
                j += 2 if line[j] == 0x5C else 1
            if depth == 1 and key_next and line[i + 1 : j] == b"id":
                m = _ID_VALUE.match(line, j + 1)
                return None if m is None else json.loads(m.group(1))
            key_next = False
            i = j + 1
            continue
        if c in b"{[":
            depth += 1
            key_next = c == 0x7B and depth == 1
        elif c in b"}]":
            depth -= 1
        elif c == 0x2C and depth == 1:
            key_next = True
        i += 1
    return None


def _message(value: Any, line: bytes, process_info: StdioProcess) -> SessionMessage | Exception:
    """Parsed JSON as the session's message, or the validation error as a value."""
    if isinstance(value, Exception):
        return value
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(value, by_name=False))
    except ValueError as exc:
        _bad_output(line, process_info)
        return exc


def _bad_output(line: bytes, process_info: StdioProcess) -> None:
    if process_info.bad_output is None:
        process_info.bad_output = line.decode("utf-8", "replace")[:200]


async def _stop(process: anyio.abc.Process) -> None:
    """Close stdin, wait a bounded grace period, then kill the process group."""
    if process.stdin is not None:
        with suppress(OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            await process.stdin.aclose()
    with anyio.move_on_after(_EXIT_GRACE_S):
        while process.returncode is None:
            await anyio.sleep(0.01)
    if process.returncode is None:
        await terminate_posix_process_tree(process, _EXIT_GRACE_S)
    else:
        # The leader exited; children it left in the group would otherwise outlive the gateway.
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, 9)
    with anyio.move_on_after(_EXIT_GRACE_S):
        while process.returncode is None:
            await anyio.sleep(0.01)


async def _close_output(process: anyio.abc.Process) -> None:
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            with suppress(OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
                await stream.aclose()
