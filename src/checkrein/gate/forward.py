"""The terminal step: send the request to its upstream (or answer a listing from the catalog).

One retry, only for read-only requests (resource reads, prompt gets, completions, tools the policy
calls read-only), and only after the transport failed. An error the upstream answered keeps what it
was (its JSON-RPC code, message and data; an HTTP status) in the text the client sees; the inspect
step around this one masks secrets in it and withholds an injection. Resource URIs inside results
are rewritten to their exposed form, so the client can read back what a result points to.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp.types as types

from checkrein.canonical import canonical_json
from checkrein.catalog import Names
from checkrein.errors import CheckreinError, UpstreamRequestFailed, UpstreamTimeout, UpstreamUnavailable
from checkrein.policy import ToolCall
from checkrein.upstream.wire import strip_identifying_json_meta, strip_identifying_meta

from .chain import CallContext, CallOutcome, GateResult, ToolResultJson, fail
from .counters import Counters
from .session import SessionTable
from .state import GateState

__all__ = ["ForwardStep", "Listing", "expose_json_uris", "expose_uris"]

log = logging.getLogger("checkrein.gate")

Listing = Callable[[GateState, ToolCall], Awaitable[GateResult]]
"""Answers a ``list`` request (``call.exposed_name`` is the method) from the state."""

_MAX_ERROR_DATA = 2048


@dataclass
class ForwardStep:
    counters: Counters
    sessions: SessionTable
    listing: Listing

    async def __call__(self, ctx: CallContext) -> CallOutcome:
        call, state, counters = ctx.call, ctx.state, self.counters
        if call.kind == "list":
            return CallOutcome(ctx, "ok", await self.listing(state, call))
        upstream = state.upstreams.get(call.server)
        if upstream is None:
            return fail(ctx, "upstream.unavailable", "error", f"server {call.server!r} is not connected")
        timeout_s = state.timeout_of(call.server)
        attempts = 2 if call.kind != "tool" or state.is_read_only(call.exposed_name) else 1
        for attempt in range(attempts):
            try:
                # The upstream enforces timeout_s (the `Upstream` contract: it never hangs); a second
                # cancel scope here would cost as much as the rest of this step.
                result = await _send(upstream, call, timeout_s)
            except (UpstreamTimeout, TimeoutError):
                counters.upstream_timeouts += 1
                return fail(ctx, "upstream.timeout", "timeout", f"{call.server!r} did not answer within {timeout_s:g} s")
            except UpstreamUnavailable as exc:
                counters.upstream_crashes += 1
                if attempt + 1 < attempts:
                    counters.retries += 1
                    continue
                return fail(ctx, exc.code, "error", f"server {call.server!r} is unavailable: {exc.message}")
            except UpstreamRequestFailed as exc:
                counters.upstream_errors += 1
                return fail(ctx, "upstream.error", "error", _rpc_text(call.server, exc), rpc_code=exc.rpc_code)
            except Exception as exc:  # anything else from the upstream is an error result, never a crash
                counters.upstream_errors += 1
                log.warning("server %r failed on %s", call.server, call.exposed_name, exc_info=True)
                code = exc.code if isinstance(exc, CheckreinError) else "upstream.error"
                return fail(ctx, code, "error", f"server {call.server!r} failed: {exc}")
            self.sessions.record_forwarded(call.session_id, call.exposed_name)
            if isinstance(result, ToolResultJson):
                result = expose_json_uris(result, state.names, call.server)
            else:
                result = expose_uris(strip_identifying_meta(result), state.names, call.server)
            is_error = isinstance(result, types.CallToolResult | ToolResultJson) and bool(result.is_error)
            return CallOutcome(ctx, "error" if is_error else "ok", result, "tool.error" if is_error else None)
        raise AssertionError("unreachable")  # pragma: no cover


def _rpc_text(server: str, exc: UpstreamRequestFailed) -> str:
    text = f"server {server!r} answered JSON-RPC error {exc.rpc_code}: {exc.rpc_message}"
    if exc.rpc_data is not None:
        try:
            data = canonical_json(exc.rpc_data).decode("utf-8")
        except (TypeError, ValueError):
            data = repr(exc.rpc_data)
        text += f" (data: {data[:_MAX_ERROR_DATA]}{'...' if len(data) > _MAX_ERROR_DATA else ''})"
    return text


async def _send(upstream: Any, call: ToolCall, timeout_s: float) -> GateResult:
    kind = call.kind
    if kind == "tool":
        as_json = getattr(upstream, "call_tool_json", None)
        if as_json is not None:  # the upstream relays the server's JSON: no SDK model on the way
            return ToolResultJson(strip_identifying_json_meta(await as_json(call.tool, call.arguments, timeout_s=timeout_s)))
        r: GateResult = await upstream.call_tool(call.tool, call.arguments, timeout_s=timeout_s)
    elif kind == "resource":
        r = await upstream.read_resource(call.tool, timeout_s=timeout_s)
    elif kind == "prompt":
        args = {k: str(v) for k, v in call.arguments.items()} or None
        r = await upstream.get_prompt(call.tool, args, timeout_s=timeout_s)
    elif kind == "completion":
        a = call.arguments
        r = await upstream.complete(a["ref"], dict(a.get("argument") or {}), a.get("context"), timeout_s=timeout_s)
    elif kind == "subscribe":
        r = await upstream.subscribe_resource(call.tool, timeout_s=timeout_s)
    elif kind == "unsubscribe":
        r = await upstream.unsubscribe_resource(call.tool, timeout_s=timeout_s)
    else:  # pragma: no cover - the catalog step refuses other kinds
        raise UpstreamUnavailable(f"checkrein does not forward {kind} requests")
    return r


def _expose_block(block: Any, names: Names, server: str) -> Any:
    if isinstance(block, types.ResourceLink):
        return block.model_copy(update={"uri": names.uri(server, str(block.uri))})
    if isinstance(block, types.EmbeddedResource):
        inner = block.resource
        return block.model_copy(update={"resource": inner.model_copy(update={"uri": names.uri(server, str(inner.uri))})})
    return block


def expose_json_uris(result: ToolResultJson, names: Names, server: str) -> ToolResultJson:
    """`expose_uris` for a tool result as JSON: resource links and embedded resources in
    ``content`` get their exposed URIs. Returns ``result`` itself when it holds none."""
    content = result.json.get("content")
    if not names.prefix(server) or not isinstance(content, list):
        return result
    if not any(isinstance(b, dict) and b.get("type") in ("resource_link", "resource") for b in content):
        return result
    return ToolResultJson({**result.json, "content": [_expose_json_block(b, names, server) for b in content]})


def _expose_json_block(block: Any, names: Names, server: str) -> Any:
    if not isinstance(block, dict):
        return block
    if block.get("type") == "resource_link" and isinstance(block.get("uri"), str):
        return {**block, "uri": names.uri(server, block["uri"])}
    inner = block.get("resource")
    if block.get("type") == "resource" and isinstance(inner, dict) and isinstance(inner.get("uri"), str):
        return {**block, "resource": {**inner, "uri": names.uri(server, inner["uri"])}}
    return block


def expose_uris(result: GateResult, names: Names, server: str) -> GateResult:
    """``result`` with every upstream resource URI in it (read contents, embedded resources, resource
    links) in its exposed form. Returns ``result`` itself when it holds none."""
    if not names.prefix(server):
        return result
    if isinstance(result, types.ReadResourceResult):
        return result.model_copy(
            update={"contents": [c.model_copy(update={"uri": names.uri(server, str(c.uri))}) for c in result.contents]}
        )
    if isinstance(result, types.CallToolResult):
        if not any(isinstance(b, types.ResourceLink | types.EmbeddedResource) for b in result.content):
            return result
        return result.model_copy(update={"content": [_expose_block(b, names, server) for b in result.content]})
    if isinstance(result, types.GetPromptResult):
        if not any(isinstance(m.content, types.ResourceLink | types.EmbeddedResource) for m in result.messages):
            return result
        messages = [m.model_copy(update={"content": _expose_block(m.content, names, server)}) for m in result.messages]
        return result.model_copy(update={"messages": messages})
    return result
