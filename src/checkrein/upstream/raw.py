"""Requests checkrein writes itself on a stdio upstream, answered without the SDK's message models.

The hot request (``tools/call``) does not need the SDK client's machinery (a request model, memory
streams, a dispatcher task, a response model): `RawRequests` writes the JSON-RPC line straight to
the server's stdin and the stdout pump hands it the answer as parsed JSON before anything else
sees it. Everything else on the connection (the handshake, listings, the server's own requests
and notifications) stays the SDK ``ClientSession``'s.

Ids are integers from ``2**40`` up, a range the SDK's dispatcher (counting from 1) never reaches,
and still exact in a JavaScript server. As the SDK does, a request with a progress callback sends
its own id as the progress token, and a request abandoned by its caller (cancelled, timed out)
is followed by ``notifications/cancelled`` so the server can stop working on it.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel
import orjson
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

__all__ = ["ProgressFn", "RawRequests", "dumps", "plain_text_result", "relay_log"]

log = logging.getLogger("checkrein.upstream")

ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]
LineWriter = Callable[[bytes], Awaitable[None]]

_FIRST_ID = 1 << 40
_CANCEL_WRITE_S = 5.0


def dumps(value: Any) -> bytes:
    """Compact JSON for the wire (orjson; the standard library for what orjson refuses, such as
    integers past 64 bits)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        import json

        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


_RESULT_KEYS = frozenset({"content", "isError", "_meta", "structuredContent"})
_TEXT_KEYS = frozenset({"type", "text", "_meta"})


def plain_text_result(value: Any) -> bool:
    """Whether ``value`` is a tools/call result that ``CallToolResult`` certainly accepts: only
    text blocks (``type``, ``text``, optional ``_meta`` object), ``isError`` a boolean,
    ``_meta`` and ``structuredContent`` objects, ``resultType`` ``"complete"``, nothing else. False says "not sure", never
    "invalid": the caller then validates with the model (a property test holds this check to
    the model's)."""
    if type(value) is not dict:
        return False
    if not _RESULT_KEYS.issuperset(value) and (value.get("resultType") != "complete" or not _RESULT_KEYS.issuperset(k for k in value if k != "resultType")):
        return False
    content = value.get("content")
    if type(content) is not list:
        return False
    for block in content:
        if type(block) is not dict or block.get("type") != "text" or type(block.get("text")) is not str:
            return False
        if len(block) > 2 and (not _TEXT_KEYS.issuperset(block) or type(block.get("_meta")) is not dict):
            return False
    is_error = value.get("isError", False)
    if type(is_error) is not bool:
        return False
    return all(type(value.get(k, {})) is dict for k in ("_meta", "structuredContent"))


@dataclass(eq=False, slots=True)
class _Waiting:
    on_progress: ProgressFn | None
    done: asyncio.Future[None]
    outcome: dict[str, Any] | None = None

    def settle(self, outcome: dict[str, Any]) -> None:
        if not self.done.done():
            self.outcome = outcome
            self.done.set_result(None)


class RawRequests:
    """The raw request lane of one stdio connection (bound to its writer by the transport)."""

    def __init__(self) -> None:
        self._ids = itertools.count(_FIRST_ID)
        self._waiting: dict[int, _Waiting] = {}
        self._write: LineWriter | None = None
        self._closed = False
        self.on_log: Callable[[dict[str, Any]], Awaitable[None]] | None = None
        """Where the server's log messages go while requests of this lane are in flight (they must
        reach the client before the answer they precede, so they take this lane too)."""
        self.sent = 0
        """Requests written on this lane (tests and counters)."""

    def bind(self, write: LineWriter) -> None:
        """Called by the transport once the server's stdin is open."""
        self._write = write

    @property
    def ready(self) -> bool:
        return self._write is not None and not self._closed

    async def request(
        self, method: str, params: dict[str, Any], *, on_progress: ProgressFn | None = None, timeout_s: float | None = None
    ) -> dict[str, Any]:
        """Send ``method`` and return the server's ``result`` as parsed JSON.

        Raises ``MCPError`` with the server's error, or ``CONNECTION_CLOSED`` when the connection
        ends first (or was never open); ``TimeoutError`` when ``timeout_s`` passes first, the
        write included (the server is then told ``notifications/cancelled``). The deadline is
        asyncio's own (`asyncio.timeout`), a fraction of an anyio cancel scope's cost.
        """
        if self._write is None or self._closed:
            raise MCPError(CONNECTION_CLOSED, "Connection closed")
        rid = next(self._ids)
        if on_progress is not None:
            params = {**params, "_meta": {**(params.get("_meta") or {}), "progressToken": rid}}
        loop = asyncio.get_running_loop()
        waiting = _Waiting(on_progress, loop.create_future())
        self._waiting[rid] = waiting
        written = False
        try:
            async with asyncio.timeout(timeout_s):
                line = dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
                await anyio.lowlevel.checkpoint_if_cancelled()
                written = True  # a write interrupted by cancellation may still have gone out
                await self._write(line)
                self.sent += 1
                await waiting.done
        except (anyio.get_cancelled_exc_class(), TimeoutError):
            # Cancelled, or out of time (asyncio.timeout cancels first, then turns it into TimeoutError).
            if written and waiting.outcome is None:
                await self._cancel(rid, "caller cancelled")
            raise
        finally:
            self._waiting.pop(rid, None)
        outcome = waiting.outcome
        assert outcome is not None
        if "error" in outcome:
            error = outcome["error"]
            raise MCPError(error.get("code", 0), error.get("message", ""), error.get("data"))
        result: dict[str, Any] = outcome["result"]
        return result

    async def _cancel(self, rid: int, reason: str) -> None:
        with anyio.move_on_after(_CANCEL_WRITE_S, shield=True) as scope:
            try:
                if self._write is not None and not self._closed:
                    await self._write(dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                             "params": {"requestId": rid, "reason": reason}}))  # fmt: skip
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                log.debug("courtesy cancel for raw request %s not delivered", rid)
        if scope.cancelled_caught:
            log.warning("courtesy cancel for raw request %s gave up: the server's stdin is blocked", rid)

    async def take(self, message: Any) -> bool:
        """Handle ``message`` (one parsed line from the server) if it is this lane's: the answer to
        one of its requests, or progress for one. Returns True when it was."""
        if not isinstance(message, dict) or not self._waiting:
            return False
        method = message.get("method")
        if method is None:
            rid = message.get("id")
            waiting = self._waiting.get(rid) if type(rid) is int else None
            if waiting is None:
                return False
            result, error = message.get("result"), message.get("error")
            if isinstance(result, dict) and error is None:
                waiting.settle({"result": result})
            elif isinstance(error, dict) and isinstance(error.get("code"), int) and isinstance(error.get("message"), str):
                waiting.settle({"error": error})
            else:
                waiting.settle({"error": {"code": -32603, "message": "the server sent a malformed response"}})
            return True
        if method == "notifications/progress":
            return await self._progress(message.get("params"))
        if method == "notifications/message" and self.on_log is not None:
            return await self._log(message.get("params"))
        return False

    async def _log(self, params: Any) -> bool:
        assert self.on_log is not None
        return await relay_log(self.on_log, params)

    async def _progress(self, params: Any) -> bool:
        if not isinstance(params, dict):
            return False
        token = params.get("progressToken")
        waiting = self._waiting.get(token) if type(token) is int else None
        if waiting is None or waiting.on_progress is None:
            return False
        progress, total, message = params.get("progress"), params.get("total"), params.get("message")
        if not isinstance(progress, int | float) or isinstance(progress, bool):
            return True  # malformed progress for our request: dropped, as the SDK drops it
        try:
            await waiting.on_progress(
                float(progress),
                float(total) if isinstance(total, int | float) and not isinstance(total, bool) else None,
                message if isinstance(message, str) else None,
            )
        except Exception:  # a failing relay must not stop the connection's reader
            log.exception("relaying progress failed")
        return True

    def close(self) -> None:
        """The connection ended: every waiting request fails with ``CONNECTION_CLOSED``."""
        self._closed = True
        for waiting in list(self._waiting.values()):
            waiting.settle({"error": {"code": CONNECTION_CLOSED, "message": "Connection closed"}})


async def relay_log(on_log: Callable[[dict[str, Any]], Awaitable[None]], params: Any) -> bool:
    """Hand a server's ``notifications/message`` params to ``on_log`` (checked as the SDK checks
    them); False when they are malformed (the SDK session then reports them as it always did).
    A failing relay is logged: it must fail neither the call nor the connection's reader."""
    import mcp.types as types
    from pydantic import ValidationError

    try:
        checked = types.LoggingMessageNotificationParams.model_validate(params, by_name=False)
    except ValidationError:
        return False
    try:
        await on_log(checked.model_dump(by_alias=True, mode="json", exclude_none=True))
    except Exception:  # a failing relay (an observer) fails neither the call nor the reader
        log.exception("relaying a log message failed")
    return True
