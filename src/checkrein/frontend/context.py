"""Turn one MCP request into a `ToolCall`: who (identity), which session, which trace.

Identity: over stdio the local user (`source="stdio"`); over HTTP whatever the HTTP guard
(`frontend.http`) put into the ASGI scope under ``checkrein.identity``. Trace: a W3C
``traceparent`` from the request's ``_meta`` or the HTTP header continues the caller's trace (its
span becomes our parent); otherwise a new trace starts.
"""

from __future__ import annotations

import getpass
import re
import secrets
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp.server.context import ServerRequestContext

from checkrein.policy import Identity, RequestKind, ToolCall

__all__ = ["IDENTITY_SCOPE_KEY", "TASK_META_KEY", "CallFactory", "local_identity", "parse_traceparent"]

TASK_META_KEY = "io.checkrein/task"
"""`_meta` key under which a client may send the user's own task text with each call. The session
flow rules treat values from it as trusted (they came from the user, not from a tool result); a
client that sends it vouches for it, as it vouches for the calls it makes."""
_MAX_TASK_CHARS = 65_536

IDENTITY_SCOPE_KEY = "checkrein.identity"
"""ASGI scope key under which the HTTP guard stores the caller's `Identity`."""

_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


def parse_traceparent(value: str | None) -> tuple[str, str] | None:
    """``(trace id, parent span id)`` of a valid W3C traceparent, else ``None`` (all-zero ids are invalid)."""
    if not value:
        return None
    m = _TRACEPARENT.match(value.strip().lower())
    if m is None or m.group(1) == "ff" or set(m.group(2)) == {"0"} or set(m.group(3)) == {"0"}:
        return None
    return m.group(2), m.group(3)


def local_identity() -> Identity:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers): still a local, authenticated caller
        user = "local"
    return Identity(user=user, source="stdio")


@dataclass(frozen=True)
class CallFactory:
    """Builds `ToolCall`s for one frontend. ``stdio_session`` is this process's session id (stdio)."""

    transport: Literal["stdio", "http"]
    stdio_identity: Identity
    stdio_session: str
    _named: dict[str, Identity] = field(default_factory=dict, compare=False, repr=False)
    """`make_raw`'s identities by client name (``stdio_identity`` with that client)."""

    @classmethod
    def for_stdio(cls) -> CallFactory:
        return cls("stdio", local_identity(), f"stdio-{uuid.uuid4()}")

    @classmethod
    def for_http(cls) -> CallFactory:
        return cls("http", Identity(user="anonymous", source="anonymous", authenticated=False), "")

    def identity(self, ctx: ServerRequestContext[Any, Any]) -> Identity:
        base = self.stdio_identity
        request = ctx.request
        if self.transport == "http":
            scope = getattr(request, "scope", None)
            found = scope.get(IDENTITY_SCOPE_KEY) if isinstance(scope, Mapping) else None
            # No identity in the scope means the guard did not run: treat as anonymous, never as local.
            base = found if isinstance(found, Identity) else Identity("anonymous", source="anonymous", authenticated=False)
        client = _client_name(ctx)
        if client is not None and base.client is None:
            return Identity(base.user, base.roles, base.source, client, base.authenticated)
        return base

    def session_id(self, ctx: ServerRequestContext[Any, Any], identity: Identity | None = None) -> str:
        """The protocol session (stdio: this process; HTTP: ``mcp-session-id``). A request without
        one (the 2026-07-28 era, stateless clients) belongs to its identity's session, so
        per-session state (caps, taint, flow) follows the caller instead of lasting one request."""
        return self._session(ctx, identity)[0]

    def _session(self, ctx: ServerRequestContext[Any, Any], identity: Identity | None = None) -> tuple[str, bool]:
        """(session id, whether the client gave it). Flow state of a request without one is keyed
        by identity and trace (`checkrein.gate.flow.flow_key`)."""
        if self.transport == "stdio":
            return self.stdio_session, True
        headers = _headers(ctx)
        sid = headers.get("mcp-session-id") if headers is not None else None
        if sid:
            return sid, True
        who = identity if identity is not None else self.identity(ctx)
        return f"identity:{who.source}:{who.user}", False

    def make(
        self,
        ctx: ServerRequestContext[Any, Any],
        *,
        kind: RequestKind,
        name: str,
        arguments: dict[str, Any],
    ) -> ToolCall:
        meta = ctx.meta
        trace = _trace(meta)
        if trace is None:
            headers = _headers(ctx)
            trace = parse_traceparent(headers.get("traceparent") if headers is not None else None)
        identity = self.identity(ctx)
        session_id, given = self._session(ctx, identity)
        return self._call(identity, session_id, given, trace, kind, name, arguments, meta)

    def make_raw(
        self,
        *,
        kind: RequestKind,
        name: str,
        arguments: dict[str, Any],
        meta: Mapping[str, Any] | None,
        client_name: str | None,
    ) -> ToolCall:
        """`make` for a stdio request read as plain JSON (the lean lane): ``meta`` is its raw
        ``_meta``, ``client_name`` the ``clientInfo.name`` of the handshake."""
        base = self.stdio_identity
        if client_name is None or base.client is not None:
            identity = base
        else:
            named = self._named.get(client_name)  # the same client on every call: built once
            if named is None:
                if len(self._named) >= 16:
                    self._named.clear()
                named = self._named[client_name] = Identity(base.user, base.roles, base.source, client_name, base.authenticated)
            identity = named
        return self._call(identity, self.stdio_session, True, _trace(meta), kind, name, arguments, meta)

    def make_raw_http(
        self,
        *,
        identity: Any,
        session_id: str,
        traceparent: str | None,
        name: str,
        arguments: dict[str, Any],
        meta: Mapping[str, Any] | None,
        client_name: str | None,
    ) -> ToolCall:
        """`make` for an HTTP tools/call read as plain JSON (`checkrein.frontend.http_lean`):
        ``identity`` is what the HTTP guard put into the scope, ``session_id`` the request's
        ``mcp-session-id``, ``traceparent`` its header, ``client_name`` the handshake's."""
        base = identity if isinstance(identity, Identity) else Identity("anonymous", source="anonymous", authenticated=False)
        if client_name is not None and base.client is None:
            base = Identity(base.user, base.roles, base.source, client_name, base.authenticated)
        trace = _trace(meta) or parse_traceparent(traceparent)
        return self._call(base, session_id, True, trace, "tool", name, arguments, meta)

    @staticmethod
    def _call(
        identity: Identity,
        session_id: str,
        given: bool,
        trace: tuple[str, str] | None,
        kind: RequestKind,
        name: str,
        arguments: dict[str, Any],
        meta: Mapping[str, Any] | None,
    ) -> ToolCall:
        task: str | None = None
        if meta is not None:
            sent = meta.get(TASK_META_KEY)
            task = sent[:_MAX_TASK_CHARS] if isinstance(sent, str) and sent.strip() else None
        if trace is None:
            ids = secrets.token_hex(24)  # one read of the system's random source for both ids
            trace_id, parent, span_id = ids[:32], None, ids[32:]
        else:
            (trace_id, parent), span_id = trace, secrets.token_hex(8)
        return ToolCall(
            identity=identity,
            session_id=session_id,
            trace_id=trace_id,
            span_id=span_id,
            parent_span_id=parent,
            exposed_name=name,
            arguments=arguments,
            kind=kind,
            session_given=given,
            task=task,
        )


def _trace(meta: Mapping[str, Any] | None) -> tuple[str, str] | None:
    raw = meta.get("traceparent") if meta is not None else None
    return parse_traceparent(raw if isinstance(raw, str) else None)


def _headers(ctx: ServerRequestContext[Any, Any]) -> Mapping[str, str] | None:
    headers = getattr(ctx.request, "headers", None)
    return headers if isinstance(headers, Mapping) else None


def _client_name(ctx: ServerRequestContext[Any, Any]) -> str | None:
    params = ctx.session.client_params
    if params is None:
        return None
    return params.client_info.name
