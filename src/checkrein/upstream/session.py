"""The SDK ``ClientSession`` as a proxy needs it, and the protocol-era handshake.

Eras on the upstream side:

    "auto"    send the 2025-11-25 ``initialize`` handshake; only if the server refuses it as a
              2026-only server (-32022 or method-not-found) reconnect and use ``server/discover``.
              Handshake-first because it works against ``mcp`` 1.x servers and every dual-era 2.x
              server, keeps per-request envelopes small, and delivers ``list_changed``
              notifications on the standing channel.
    "legacy"  ``initialize`` only.
    "modern"  ``server/discover`` only; change notifications then come through a
              ``subscriptions/listen`` stream, which ``McpUpstream`` opens.
"""

from __future__ import annotations

from typing import Any, Literal

import anyio
import mcp.types as types
from mcp.client.session import ClientSession
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import MCPError
from mcp_types import METHOD_NOT_FOUND, UNSUPPORTED_PROTOCOL_VERSION

from checkrein.upstream.raw import RawRequests, plain_text_result
from checkrein.upstream.raw_http import RawHttpRequests

from .propagation import OUTBOUND_TRACEPARENT

__all__ = ["Era", "ModernOnlyServer", "UpstreamSession", "handshake"]

Era = Literal["auto", "legacy", "modern"]


class UpstreamSession(ClientSession):
    """A ``ClientSession`` that does not re-validate tool results.

    The upstream's output schema is its own contract; the gate's checks come later. Skipping the
    SDK's validation also avoids its hidden ``tools/list`` on the first call of each tool.
    """

    async def validate_tool_result(self, name: str, result: types.CallToolResult) -> None:
        return None

    def connection_closed(self) -> bool:
        """True once the transport ended (e.g. an idle SSE stream dropped): nothing sent now
        could be answered, and nothing was sent, so a fresh connection may carry it."""
        raw_http = self.raw_http
        return bool(getattr(self._dispatcher, "_closed", False)) or (raw_http is not None and raw_http.broken)

    raw: RawRequests | None = None
    """The connection's raw request lane (stdio), set by the connection; ``None``: the dispatcher."""

    raw_http: RawHttpRequests | None = None
    """The raw request lane of a Streamable HTTP connection (`checkrein.upstream.raw_http`)."""

    async def forward_tool_call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        meta: dict[str, Any] | None = None,
        on_progress: Any = None,
        timeout_s: float | None = None,
    ) -> dict[str, Any]:
        """``tools/call`` on the hot path: the same wire message and era stamping as ``call_tool``,
        without building a request model, and the result as the server's JSON (checked against
        ``CallToolResult``, never built into one). Over stdio the request goes out on the raw lane
        (`checkrein.upstream.raw`), over Streamable HTTP in the handshake era on the raw HTTP lane
        (`checkrein.upstream.raw_http`), elsewhere through the SDK's dispatcher.

        Raises ``MCPError`` exactly as ``call_tool`` does, ``pydantic.ValidationError`` for a
        malformed result, ``RuntimeError`` for a result a proxy cannot forward
        (``input_required`` or an extension's result type), and ``TimeoutError`` when
        ``timeout_s`` (if given) passes first.
        """
        # `_stamp` and `_dispatcher` are the SDK session's own seams (set in its constructor);
        # the behaviour suite runs this path in both protocol eras, so a change in them shows.
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if meta:
            params["_meta"] = dict(meta)
        traceparent = OUTBOUND_TRACEPARENT.get()
        if traceparent is not None:
            # W3C trace context goes unprefixed in `_meta` (OpenTelemetry MCP conventions, SEP-414);
            # the upstream call is a child of this gateway's span, not of the caller's.
            params["_meta"] = {**params.get("_meta", {}), "traceparent": traceparent}
        data: dict[str, Any] = {"method": "tools/call", "params": params}
        opts: CallOptions = {}
        self._stamp(data, opts)
        raw_lane = self.raw
        if raw_lane is not None and raw_lane.ready:
            # Headers (the only other thing the stamp sets) mean nothing on a pipe.
            raw = await raw_lane.request("tools/call", data["params"], on_progress=on_progress, timeout_s=timeout_s)
        elif self.raw_http is not None and self.raw_http.ready(self.protocol_version):
            with anyio.fail_after(timeout_s):
                raw = await self.raw_http.request("tools/call", data["params"], headers=opts.get("headers"), on_progress=on_progress)
        else:
            if on_progress is not None:
                # The dispatcher sends its own request id as the progress token and calls this once
                # per progress notification of that request.
                opts["on_progress"] = on_progress
            with anyio.fail_after(timeout_s):
                raw = await self._dispatcher.send_raw_request("tools/call", data["params"], opts)
        kind = raw.get("resultType")
        if kind is not None and kind != "complete":
            raise RuntimeError(f"the upstream answered with a {kind!r} result, which checkrein does not forward")
        if not plain_text_result(raw):  # text blocks only are certainly valid: no model needed
            types.CallToolResult.model_validate(raw, by_name=False)  # the check; the JSON is what goes on
        return raw


class ModernOnlyServer(Exception):
    """The server refused the ``initialize`` handshake; reconnect with ``server/discover``."""


async def handshake(session: UpstreamSession, era: Era) -> None:
    """Negotiate the protocol era on a fresh session.

    Raises ``ModernOnlyServer`` in ``"auto"`` era when the server rejects ``initialize`` the way a
    2026-only server does (the connection is then locked and must be replaced); ``MCPError`` for
    any other refusal.
    """
    if era == "modern":
        await session.discover()
        return
    try:
        await session.initialize()
    except MCPError as exc:
        if era == "auto" and exc.code in (UNSUPPORTED_PROTOCOL_VERSION, METHOD_NOT_FOUND):
            raise ModernOnlyServer(exc.message) from exc
        raise
