"""The frontend's side of relaying: `ClientRequest` (one client request, as an upstream's messages
reach it), log levels per client, and resource subscriptions per client.

`ClientRequest` implements `checkrein.upstream.relay.Downstream` over the SDK's per-request
`ServerSession`: progress goes out with the client's own token on the request's stream, log messages
and server requests ride the request's stream too (so over Streamable HTTP they reach exactly the
POST they belong to), and a 2026-era client, which has no back channel inside a request, is reported
as not supporting server requests instead of being asked and failing.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.message import ServerMessageMetadata
from pydantic import TypeAdapter

from checkrein.policy import ToolCall
from checkrein.upstream.relay import CURRENT_DOWNSTREAM, Downstream, ServerRequestKind

__all__ = ["LOG_LEVEL_META", "ClientRequest", "LogLevels", "RequestFacts", "Subscriptions", "relaying"]

_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
LOG_LEVEL_META = "io.modelcontextprotocol/logLevel"
_ELICIT_PARAMS: TypeAdapter[Any] = TypeAdapter(types.ElicitRequestParams)


class LogLevels:
    """``logging/setLevel`` per client session; what upstreams are asked for is the most verbose."""

    def __init__(self) -> None:
        self._levels: dict[str, str] = {}

    def set(self, session_key: str, level: str) -> str:
        """Record ``level`` for the session; returns the level to ask of the upstreams."""
        self._levels[session_key] = level
        if len(self._levels) > 10_000:
            self._levels.pop(next(iter(self._levels)))
        return min(self._levels.values(), key=_LEVELS.index)

    def admits(self, session_key: str, level: str) -> bool:
        wanted = self._levels.get(session_key)
        if wanted is None or level not in _LEVELS:
            return True
        return _LEVELS.index(level) >= _LEVELS.index(wanted)


class RequestFacts:
    """What every `Downstream` of a client request knows: its call, the client's progress token
    and the ``_meta`` entries that go on to the upstream (``raw_meta``: the request's ``_meta``)."""

    def __init__(self, call: ToolCall, token: Any, raw_meta: Any) -> None:
        self._call = call
        self._token: str | int | None = token if isinstance(token, str | int) and not isinstance(token, bool) else None
        level = raw_meta.get(LOG_LEVEL_META) if isinstance(raw_meta, dict) else None
        self._upstream_meta: dict[str, Any] = {LOG_LEVEL_META: level} if isinstance(level, str) else {}

    @property
    def session_key(self) -> str:
        return self._call.session_id

    @property
    def progress_token(self) -> str | int | None:
        return self._token

    @property
    def upstream_meta(self) -> dict[str, Any]:
        return self._upstream_meta

    def call(self) -> ToolCall:
        return self._call


class ClientRequest(RequestFacts):
    """One in-flight client request (`Downstream`)."""

    def __init__(self, ctx: ServerRequestContext[Any, Any], call: ToolCall, levels: LogLevels) -> None:
        raw_meta = (ctx.params or {}).get("_meta") if isinstance(ctx.params, dict) else None
        super().__init__(call, (ctx.meta or {}).get("progress_token"), raw_meta)
        self._ctx = ctx
        self._levels = levels

    def supports(self, kind: ServerRequestKind) -> bool:
        session = self._ctx.session
        if kind != "roots" and not session.can_send_request:
            return False
        caps = session.client_capabilities
        if caps is None:
            return False
        return {"sampling": caps.sampling, "elicitation": caps.elicitation, "roots": caps.roots}[kind] is not None

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        if self._token is None:
            return
        await self._ctx.session.send_progress_notification(
            self._token, progress, total, message, related_request_id=str(self._ctx.request_id)
        )

    async def log(self, level: str, data: Any, logger: str | None) -> None:
        if not self._levels.admits(self.session_key, level):
            return
        await self._ctx.session.send_log_message(
            level,  # type: ignore[arg-type]
            data,
            logger=logger,
            related_request_id=self._ctx.request_id,
        )

    async def request(self, kind: ServerRequestKind, params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        session = self._ctx.session
        related = ServerMessageMetadata(related_request_id=self._ctx.request_id)
        with anyio.fail_after(timeout_s):
            if kind == "sampling":
                sampling = types.CreateMessageRequestParams.model_validate(params, by_name=False)
                wants_tools = bool(sampling.tools or sampling.tool_choice)
                result_type: Any = types.CreateMessageResultWithTools if wants_tools else types.CreateMessageResult
                result: Any = await session.send_request(
                    types.CreateMessageRequest(params=sampling), result_type, metadata=related
                )
            elif kind == "elicitation":
                elicit = _ELICIT_PARAMS.validate_python(params, by_name=False)
                result = await session.send_request(types.ElicitRequest(params=elicit), types.ElicitResult, metadata=related)
            else:
                result = await session.list_roots()
        dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped


class relaying:
    """Make ``request`` the client an upstream's messages go to while the gate handles it (a
    class rather than a generator: it runs on every call)."""

    __slots__ = ("_request", "_token")

    def __init__(self, request: Downstream) -> None:
        self._request = request

    def __enter__(self) -> None:
        self._token = CURRENT_DOWNSTREAM.set(self._request)

    def __exit__(self, *exc: object) -> None:
        CURRENT_DOWNSTREAM.reset(self._token)


class Subscriptions:
    """Which client sessions subscribed to which exposed resource URI.

    The SDK's `ServerSession` of the subscribe request is kept (its standalone channel is the
    connection's); a client that went away is dropped the first time an update cannot reach it.
    """

    def __init__(self) -> None:
        self._by_uri: dict[str, dict[str, Any]] = {}

    def add(self, uri: str, session_key: str, session: Any) -> bool:
        """Subscribe; True when nobody had subscribed to ``uri`` before (forward it upstream)."""
        first = not self._subscribers(uri)
        self._by_uri.setdefault(uri, {})[session_key] = session
        return first

    def remove(self, uri: str, session_key: str) -> bool:
        """Unsubscribe; True when nobody is subscribed to ``uri`` any more (forward it upstream)."""
        subs = self._by_uri.get(uri)
        if not subs or session_key not in subs:
            return False
        del subs[session_key]
        if not subs:
            del self._by_uri[uri]
            return True
        return False

    def has(self, uri: str) -> bool:
        return bool(self._subscribers(uri))

    def items(self, uri: str) -> list[tuple[str, Any]]:
        return list(self._subscribers(uri).items())

    def _subscribers(self, uri: str) -> dict[str, Any]:
        return self._by_uri.get(uri, {})

    def sessions(self, uri: str) -> list[Any]:
        return list(self._subscribers(uri).values())

    def __len__(self) -> int:
        return sum(len(v) for v in self._by_uri.values())

    def drop(self, session_key: str) -> list[str]:
        """Forget every subscription of a session; the URIs nobody is subscribed to any more."""
        gone = []
        for uri in list(self._by_uri):
            if self.remove(uri, session_key):
                gone.append(uri)
        return gone
