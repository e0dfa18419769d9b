"""`checkrein serve` over stdio: protocol messages only on stdout, logs on stderr.

The wire is checkrein's own (`stdio_wire`: asyncio pipes, no worker threads). Each line is parsed
once (pydantic's JSON parser, as fast as ``orjson`` and exact for big integers); what the SDK's low-level `Server` serves (initialization in both protocol
eras, listings, the rare requests) reaches it as a validated message over an in-memory stream,
and its answers are written back line by line.

A client that sent garbage deserves an answer: a line that is not JSON gets ``-32700`` (parse
error, id ``null``), JSON that is not a JSON-RPC 2.0 message gets ``-32600`` (invalid request,
with the request's id when it can be read), a line over the size limit gets ``-32600`` too; none
of them reaches the server, and the gateway keeps serving.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

import anyio
import anyio.abc
import mcp.types as types
import orjson
import pydantic_core
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from checkrein._switches import switch
from checkrein.gate.pipeline import Gate

from .context import CallFactory
from .server import GatewayServer
from .stdio_lean import LeanLane
from .stdio_wire import LineTooLong, StdioWire, open_stdio_wire

__all__ = ["Malformed", "decode_line", "serve_stdio"]

log = logging.getLogger("checkrein.frontend")


class Malformed(Exception):
    """An inbound line that is not a JSON-RPC message; ``answer`` is the error to send back."""

    def __init__(self, answer: dict[str, Any]) -> None:
        super().__init__(answer["error"]["message"])
        self.answer = answer


def _error(rid: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def _request_id(value: Any) -> str | int | None:
    rid = value.get("id") if isinstance(value, dict) else None
    return rid if isinstance(rid, str | int) and not isinstance(rid, bool) else None


def decode_line(line: bytes | LineTooLong) -> Any:
    """The JSON value of one inbound line. Raises `Malformed` for a line that is not JSON (or too long)."""
    if isinstance(line, LineTooLong):
        raise Malformed(_error(None, types.INVALID_REQUEST, f"Invalid Request: a {line.size}-byte message is over the limit"))
    try:
        # pydantic's parser (the SDK's own): as fast as orjson here, and exact for integers past
        # 64 bits, which orjson would silently turn into floats.
        return pydantic_core.from_json(line)
    except ValueError:
        pass
    try:
        # Invalid UTF-8 is replaced, as the SDK's own stdio transport did.
        return pydantic_core.from_json(line.decode("utf-8", "replace"))
    except ValueError:
        raise Malformed(_error(None, types.PARSE_ERROR, "Parse error: not JSON")) from None


def validate_message(value: Any) -> types.JSONRPCMessage:
    """``value`` as the SDK's JSON-RPC message model. Raises `Malformed` (-32600, with the id when readable)."""
    try:
        return types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValidationError:
        raise Malformed(
            _error(_request_id(value), types.INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message")
        ) from None


class SdkWriter:
    """The SDK server's write stream: each message it sends becomes one line on the wire
    (``observe`` sees it first)."""

    def __init__(self, wire: StdioWire, observe: Callable[[types.JSONRPCMessage], None] | None = None) -> None:
        self._wire = wire
        self._observe = observe

    async def send(self, item: SessionMessage, /) -> None:
        if self._observe is not None:
            self._observe(item.message)
        await self._wire.write_line(item.message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8"))

    async def aclose(self) -> None:
        return None  # the wire outlives the SDK's loop: it is closed by `serve_stdio`

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> bool | None:
        return None


class StdioFrontend:
    """One client on the wire: reads its lines, serves plain tools/calls in the lean lane
    (`stdio_lean`, unless ``lean`` is off) and hands every other message to the SDK server."""

    def __init__(self, front: GatewayServer, wire: StdioWire, *, lean: bool = True) -> None:
        self.front = front
        self.wire = wire
        self.lane = LeanLane(front, front.calls, wire.write_line) if lean else None
        self.malformed = 0
        """Lines answered with a JSON-RPC error because they were not JSON-RPC messages."""

    async def serve(self) -> None:
        """Serve until the client closes our stdin (or stops reading our stdout)."""
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        writer = SdkWriter(self.wire, self.lane.outbound if self.lane is not None else None)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._read, send, tg)
                tg.start_soon(self._end_when_stdout_closes, tg.cancel_scope)
                await self.front.server.run(receive, writer, self.front.initialization_options())
                tg.cancel_scope.cancel()
        finally:
            if self.lane is not None:
                with anyio.CancelScope(shield=True):
                    await self.lane.aclose()
        if self.lane is not None:
            self.lane.raise_crash()

    async def _end_when_stdout_closes(self, scope: anyio.CancelScope) -> None:
        await self.wire.wait_closed()
        scope.cancel()

    async def _read(self, send: anyio.abc.ObjectSendStream[SessionMessage | Exception], tg: anyio.abc.TaskGroup) -> None:
        lane = self.lane
        async with send:
            while (line := await self.wire.next_line()) is not None:
                try:
                    value = decode_line(line)
                    if lane is not None and type(value) is dict:
                        if lane.answer(value) or lane.cancelled(value):
                            continue
                        if lane.takes(value):
                            lane.start(value, tg)
                            continue
                    message = validate_message(value)
                except Malformed as exc:
                    await self._answer_malformed(exc)
                    continue
                if lane is not None:
                    lane.inbound(value)
                await send.send(SessionMessage(message))
            if lane is not None:
                # End of input: what the lane accepted is still answered before the SDK stops.
                await lane.wait_idle()

    async def _answer_malformed(self, exc: Malformed) -> None:
        self.malformed += 1
        log.warning("malformed message from the client: %s", exc)
        await self.wire.write_line(orjson.dumps(exc.answer))


async def serve_stdio(
    gate: Gate, *, read_fd: int | None = None, write_fd: int | None = None, lean: bool | None = None
) -> None:
    """Serve ``gate`` (already started) on this process's stdin/stdout (or the given descriptors)
    until the client closes it. ``lean`` (default: on unless ``CHECKREIN_FAST_PATH=off``) serves
    plain tools/calls in the lean lane."""
    if lean is None:
        lean = switch("CHECKREIN_FAST_PATH") == "on"
    front = GatewayServer(gate, CallFactory.for_stdio())
    try:
        async with open_stdio_wire(read_fd, write_fd) as wire:
            await StdioFrontend(front, wire, lean=lean).serve()
    finally:
        front.close()
