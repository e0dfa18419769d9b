"""The stdio frontend's lean lane: ``tools/call`` of an initialized handshake-era session, served
without the SDK's server machinery.

The SDK's low-level `Server` costs most of a relayed call's CPU (a pydantic model per message,
memory streams, a per-request session, dispatch). The lane takes a ``tools/call`` line it can
prove is plain (see `LeanLane.takes`), builds the `ToolCall` from the parsed JSON, runs the same
`Gate` through `GatewayServer.call_tool_json` (every step, the audit, inspection of the whole
result), checks the result against the negotiated version's schema with the SDK's own serializer
and writes the response line itself. Everything else (initialization in both eras, 2026-era
requests, listings, the rare requests, anything unusual about a call) goes to the SDK as before,
so protocol correctness stays the SDK's: a line the lane is not sure of is the SDK's to answer.

For the calls it handles the lane is the client's `Downstream`: progress goes out with the
client's token, log messages as ``notifications/message`` (filtered by ``logging/setLevel``), and
sampling, elicitation and roots requests with the lane's own ids (``checkrein-N``), whose answers
are taken off the wire before the SDK sees them. ``notifications/cancelled`` for a lane request
cancels it (and it is not answered, as the SDK does); one of the lane's own requests abandoned
by its call is followed by ``notifications/cancelled`` to the client.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import mcp.types as types
from mcp.shared.dispatcher import coerce_request_id
from mcp_types import methods as sdk_methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter, ValidationError

from checkrein.policy import ToolCall
from checkrein.upstream.raw import dumps, plain_text_result
from checkrein.upstream.relay import ServerRequestKind

from .context import CallFactory
from .downstream import LogLevels, RequestFacts
from .server import GatewayServer

__all__ = ["LeanLane"]

log = logging.getLogger("checkrein.frontend")

LineWriter = Callable[[bytes], Awaitable[None]]

_CALL_KEYS = frozenset({"name", "arguments", "_meta"})
_ELICIT_PARAMS: TypeAdapter[Any] = TypeAdapter(types.ElicitRequestParams)
_SERVER_REQUESTS: dict[ServerRequestKind, str] = {
    "sampling": "sampling/createMessage",
    "elicitation": "elicitation/create",
    "roots": "roots/list",
}


def plain_id(value: Any) -> bool:
    """A request id or progress token the lanes pass through as it is (an int or a string)."""
    return type(value) is int or type(value) is str


def plain_call(params: Any) -> bool:
    """``tools/call`` params either lane serves: a name, object arguments, and ``_meta`` with at
    most a plain progress token (no 2026-era version key); anything else goes to the SDK."""
    if not isinstance(params, dict) or not _CALL_KEYS.issuperset(params) or type(params.get("name")) is not str:
        return False
    arguments = params.get("arguments")
    if arguments is not None and type(arguments) is not dict:
        return False
    meta = params.get("_meta")
    if meta is None:
        return "_meta" not in params
    if type(meta) is not dict or types.PROTOCOL_VERSION_META_KEY in meta:
        return False
    token = meta.get("progressToken")
    return token is None and "progressToken" not in meta or plain_id(token)


@dataclass(slots=True)
class _Handshake:
    """What the SDK's handshake settled, as the lane needs it."""

    version: str
    capabilities: types.ClientCapabilities
    client_name: str | None


@dataclass(eq=False, slots=True)
class _Asked:
    done: anyio.Event = field(default_factory=anyio.Event)
    answer: dict[str, Any] | None = None


class LeanLane:
    """The lean lane of one stdio client (`StdioFrontend` feeds it every inbound line first)."""

    def __init__(self, front: GatewayServer, calls: CallFactory, write: LineWriter) -> None:
        self.front = front
        self.calls = calls
        self.write = write
        self.handled = 0
        """tools/call requests the lane answered (tests and counters)."""
        self._init_params: dict[Any, Any] = {}
        self._settled: _Handshake | None = None
        self._ready = False
        self._running: dict[Any, asyncio.Task[None]] = {}
        self._asked: dict[str, _Asked] = {}
        self._ids = itertools.count(1)
        self._idle: anyio.Event | None = None
        self._crashed: BaseException | None = None
        self._tg: anyio.abc.TaskGroup | None = None

    # -- what the SDK does, observed ---------------------------------------------------------

    def inbound(self, message: Any) -> None:
        """Called with each inbound message the SDK gets: the handshake, as the client sent it."""
        method = message.get("method")
        if method == "initialize" and "id" in message:
            if len(self._init_params) < 16:
                self._init_params[message["id"]] = message.get("params")
        elif method == "notifications/initialized":
            self._ready = self._settled is not None

    def outbound(self, message: types.JSONRPCMessage) -> None:
        """Called with each message the SDK writes: its answer to ``initialize`` settles the era."""
        if not self._init_params or not isinstance(message, types.JSONRPCResponse):
            return
        params = self._init_params.pop(message.id, None)
        if not isinstance(params, dict):
            return
        version = message.result.get("protocolVersion")
        if not isinstance(version, str) or version in MODERN_PROTOCOL_VERSIONS:
            return
        try:
            caps = types.ClientCapabilities.model_validate(params.get("capabilities") or {}, by_name=False)
        except ValidationError:
            return
        info = params.get("clientInfo")
        name = info.get("name") if isinstance(info, dict) else None
        self._settled = _Handshake(version, caps, name if isinstance(name, str) else None)

    # -- the lane --------------------------------------------------------------------------------

    def takes(self, message: Any) -> bool:
        """Whether ``message`` (a parsed line) is a plain tools/call the lane serves. Anything it
        cannot vouch for is left to the SDK, which answers it (or its error) as it always did."""
        if not self._ready or message.get("method") != "tools/call" or message.get("jsonrpc") != "2.0":
            return False
        rid = message.get("id")
        return plain_id(rid) and coerce_request_id(rid) not in self._running and plain_call(message.get("params"))

    def start(self, message: dict[str, Any], tg: anyio.abc.TaskGroup) -> None:
        """Serve a message `takes` accepted, in its own task.

        A plain asyncio task (an anyio task costs several times as much to spawn): `aclose`
        cancels and awaits what is still running when ``tg``'s owner stops serving, and a task
        that fails unexpectedly cancels ``tg`` and is raised again by `raise_crash`, as it would
        have been from inside the task group."""
        self._tg = tg
        key = coerce_request_id(message["id"])
        self._running[key] = asyncio.get_running_loop().create_task(self._serve(message, key))

    def answer(self, message: Any) -> bool:
        """Take ``message`` if it is the client's answer to one of the lane's own requests."""
        if not self._asked or "method" in message:
            return False
        rid = message.get("id")
        asked = self._asked.get(rid) if type(rid) is str else None
        if asked is None:
            return False
        asked.answer = message
        asked.done.set()
        return True

    def cancelled(self, message: Any) -> bool:
        """Take a ``notifications/cancelled`` for a lane request: cancel it (it gets no answer)."""
        if not self._running or message.get("method") != "notifications/cancelled":
            return False
        params = message.get("params")
        rid = params.get("requestId") if isinstance(params, dict) else None
        plain = isinstance(rid, int | str) and not isinstance(rid, bool)
        task = self._running.get(coerce_request_id(rid)) if plain and rid is not None else None
        if task is None:
            return False
        if not task.cancelling():  # once: a second cancel would break into its shielded audit record
            task.cancel()
        return True

    async def wait_idle(self) -> None:
        """Until every lane request has been answered (or cancelled)."""
        if self._running:
            if self._idle is None:
                self._idle = anyio.Event()
            await self._idle.wait()

    async def aclose(self) -> None:
        """Cancel the lane requests still running and wait until they are gone (each one's audit
        record is written under a shield)."""
        tasks = list(self._running.values())
        for task in tasks:
            if not task.cancelling():
                task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    def raise_crash(self) -> None:
        """Raise what a lane request failed with unexpectedly, if one did."""
        if self._crashed is not None:
            raise self._crashed

    def _crash(self, exc: Exception) -> None:
        log.error("a lean lane request failed", exc_info=exc)
        if self._crashed is None:
            self._crashed = exc
            if self._tg is not None:
                self._tg.cancel_scope.cancel()

    async def _serve(self, message: dict[str, Any], key: Any) -> None:
        rid = message["id"]
        settled = self._settled
        assert settled is not None
        try:
            line = await self._respond(rid, message["params"], settled)
            self.handled += 1
            await self.write(line)
        except Exception as exc:  # noqa: BLE001 - outside the gate (which answers every failure): stop serving
            self._crash(exc)
        finally:
            self._running.pop(key, None)
            if not self._running and self._idle is not None:
                self._idle.set()
                self._idle = None

    async def _respond(self, rid: Any, params: dict[str, Any], settled: _Handshake) -> bytes:
        meta = params.get("_meta")
        call = self.calls.make_raw(
            kind="tool",
            name=params["name"],
            arguments=dict(params.get("arguments") or {}),
            meta=meta,
            client_name=settled.client_name,
        )
        request = LeanRequest(self, rid, call, meta, settled.capabilities)
        try:
            result = await self.front.call_tool_json(call, request, request, rid)
            dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True) if not isinstance(result, dict) else result
            wire = plain_wire(dumped)
            if wire is None:
                wire = sdk_methods.serialize_server_result("tools/call", settled.version, dumped)
        except ValidationError:
            log.exception("tools/call %s: the result does not fit the protocol's schema", params["name"])
            return _error(rid, types.INTERNAL_ERROR, "Handler returned an invalid result")
        except Exception:
            # The gate never raises; this is a bug, answered as the SDK answers one.
            log.exception("tools/call %s failed in the lean lane", params["name"])
            return _error(rid, types.INTERNAL_ERROR, "Internal server error")
        return dumps({"jsonrpc": "2.0", "id": rid, "result": wire})

    async def ask(self, method: str, params: dict[str, Any] | None, call_id: Any) -> dict[str, Any]:
        """Send a server-to-client request; the client's ``result``. Raises ``MCPError`` with the
        client's error."""
        rid = f"checkrein-{next(self._ids)}"
        asked = _Asked()
        self._asked[rid] = asked
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            request["params"] = params
        try:
            await self.write(dumps(request))
            await asked.done.wait()
        except anyio.get_cancelled_exc_class():
            with anyio.move_on_after(5, shield=True):
                cancel = {"requestId": rid, "reason": f"the request {call_id!r} it served ended"}
                await self.write(dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}))
            raise
        finally:
            self._asked.pop(rid, None)
        return answer_result(method, asked.answer)


def answer_result(method: str, answer: dict[str, Any] | None) -> dict[str, Any]:
    """The ``result`` of the client's answer to a lane's own ``method`` request (both lanes);
    raises ``MCPError`` for an error answer and ``ValueError`` for an answer without a result."""
    answer = answer or {}
    error = answer.get("error")
    if isinstance(error, dict):
        from mcp.shared.exceptions import MCPError

        code, text = error.get("code"), error.get("message")
        raise MCPError(code if type(code) is int else types.INTERNAL_ERROR, text if isinstance(text, str) else "", error.get("data"))
    result = answer.get("result")
    if not isinstance(result, dict):
        raise ValueError(f"the client's answer to {method} has no result object")
    return result


def plain_wire(result: dict[str, Any]) -> dict[str, Any] | None:
    """What the SDK's serializer makes of a plain text result (`plain_text_result`) for every
    handshake-era version: the same members in the same order, ``resultType`` dropped; ``None``
    for anything else (the serializer then runs). A property test holds it to the serializer."""
    if not plain_text_result(result):
        return None
    free = [b["_meta"] for b in result["content"] if len(b) > 2]
    free += [result[k] for k in ("_meta", "structuredContent") if k in result]
    if free and not all(_finite(v, 0) for v in free):
        return None  # the serializer writes a non-finite float as null (or refuses what nests too deep)
    wire: dict[str, Any] = {}
    if "_meta" in result:
        wire["_meta"] = result["_meta"]
    wire["content"] = [
        {"text": b["text"], "type": "text"} if len(b) == 2 else {"_meta": b["_meta"], "text": b["text"], "type": "text"}
        for b in result["content"]
    ]
    if "isError" in result:
        wire["isError"] = result["isError"]
    if "structuredContent" in result:
        wire["structuredContent"] = result["structuredContent"]
    return wire


def _finite(value: Any, depth: int) -> bool:
    """No float in ``value`` is NaN or infinite (and it nests less than 64 deep)."""
    if type(value) is float:
        return math.isfinite(value)
    if depth > 64:
        return False
    if type(value) is dict:
        return all(_finite(v, depth + 1) for v in value.values())
    if type(value) is list:
        return all(_finite(v, depth + 1) for v in value)
    return True


def _error(rid: Any, code: int, message: str) -> bytes:
    return dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


class LeanRequest(RequestFacts):
    """One lane request as the client its upstream's messages go to (`Downstream`), and as the
    session an approver may ask (`checkrein.gate.approval.ElicitingSession`)."""

    can_send_request = True

    def __init__(
        self, lane: LeanLane, rid: Any, call: ToolCall, meta: dict[str, Any] | None, caps: types.ClientCapabilities
    ) -> None:
        super().__init__(call, meta.get("progressToken") if meta else None, meta)
        self._lane = lane
        self._rid = rid
        self._caps = caps

    def supports(self, kind: ServerRequestKind) -> bool:
        caps = self._caps
        return {"sampling": caps.sampling, "elicitation": caps.elicitation, "roots": caps.roots}[kind] is not None

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        if self._token is None:
            return
        params: dict[str, Any] = {"progressToken": self._token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._lane.write(dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}))

    async def log(self, level: str, data: Any, logger: str | None) -> None:
        levels: LogLevels = self._lane.front.levels
        if not levels.admits(self.session_key, level):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self._lane.write(dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": params}))

    async def request(self, kind: ServerRequestKind, params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        result_type: Any
        sent: dict[str, Any] | None
        if kind == "sampling":
            sampling = types.CreateMessageRequestParams.model_validate(params, by_name=False)
            wants_tools = bool(sampling.tools or sampling.tool_choice)
            result_type = types.CreateMessageResultWithTools if wants_tools else types.CreateMessageResult
            sent = sampling.model_dump(by_alias=True, mode="json", exclude_none=True)
        elif kind == "elicitation":
            sent = _ELICIT_PARAMS.dump_python(_ELICIT_PARAMS.validate_python(params, by_name=False), by_alias=True, mode="json", exclude_none=True)
            result_type = types.ElicitResult
        else:
            sent, result_type = None, types.ListRootsResult
        with anyio.fail_after(timeout_s):
            raw = await self._lane.ask(_SERVER_REQUESTS[kind], sent, self._rid)
        dumped: dict[str, Any] = result_type.model_validate(raw, by_name=False).model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped

    # -- ElicitingSession --------------------------------------------------------------------------

    def check_client_capability(self, capability: types.ClientCapabilities) -> bool:
        have = self._caps
        if capability.elicitation is not None and have.elicitation is None:
            return False
        if capability.sampling is not None and have.sampling is None:
            return False
        return capability.roots is None or have.roots is not None

    async def elicit_form(
        self, message: str, requested_schema: dict[str, Any], related_request_id: types.RequestId | None = None
    ) -> types.ElicitResult:
        form = types.ElicitRequestFormParams(message=message, requested_schema=requested_schema)
        params = form.model_dump(by_alias=True, mode="json", exclude_none=True)
        return types.ElicitResult.model_validate(await self._lane.ask("elicitation/create", params, self._rid), by_name=False)
