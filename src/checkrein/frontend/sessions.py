"""`FleetSessionManager`: Streamable HTTP sessions every replica of a fleet can serve.

The SDK's `StreamableHTTPSessionManager` keeps sessions in one process: a request for a session
id it did not create gets 404, so a load balancer would need affinity. This subclass writes a
record of each session to the shared state when the session is established (owner, negotiated
protocol version, the client's ``initialize`` parameters) and, for a session id it does not hold,
looks the record up and *adopts* the session: it builds the transport under that id and a
connection that is already initialized with the recorded parameters, then serves the request.

    new session (no id)        as the SDK, then ``session:<id>`` = record (TTL: the idle timeout)
    id held here               the caller must be the owner; the record is read: a tombstone (a
                               DELETE on any replica) drops this copy too (404); a record Redis
                               lost (restarted empty) is written again from this copy
    id not held here           record found and caller is its owner: adopt, serve; else 404
    DELETE                     the transport ends and the record becomes a tombstone fleet-wide
    shared state unavailable   unknown ids get 503 (``state.unavailable``); sessions held here
                               go on (counted: ``sessions_unverified``)

The owner is the caller's identity (``source:user``) as the HTTP guard authenticated it, so a
session id alone, leaked or guessed, never lets another identity in (the SDK itself binds a
session only to its own auth scheme, which checkrein does not use).

Only the 2025-11-25 (handshake) era has sessions; 2026-07-28 requests are stateless anyway.
Server-to-client requests and GET streams work on the replica that holds the stream; messages
in flight on one replica are not replayed on another (no shared event store).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio
from anyio.abc import TaskStatus
from mcp.server.connection import Connection
from mcp.server.runner import serve_connection
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import (
    StreamableHTTPASGIApp,
    StreamableHTTPSessionManager,
    _error_response,
    _send_and_report_status,
)
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.transport_context import TransportContext
from mcp_types import INTERNAL_ERROR, InitializeRequestParams
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from checkrein.errors import StateUnavailable
from checkrein.policy import Identity
from checkrein.state import SharedState

from .context import IDENTITY_SCOPE_KEY

__all__ = ["FleetSessionManager", "fleet_http_app", "session_owner"]

log = logging.getLogger("checkrein.frontend")


def session_owner(scope: Scope) -> str:
    identity = scope.get(IDENTITY_SCOPE_KEY)
    if isinstance(identity, Identity):
        return f"{identity.source}:{identity.user}"
    return "anonymous:anonymous"


class FleetSessionManager(StreamableHTTPSessionManager):
    def __init__(self, *args: Any, state: SharedState, replica: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.state = state
        self.replica = replica
        self.ttl_s = float(self.session_idle_timeout or 86_400.0)
        self.counters: dict[str, int] = {
            "sessions_opened": 0, "sessions_adopted": 0, "sessions_not_found": 0, "sessions_wrong_owner": 0,
            "sessions_unshared": 0, "sessions_unverified": 0, "sessions_state_refusals": 0, "sessions_closed_elsewhere": 0,
            "sessions_republished": 0,
        }
        self._owners: dict[str, str] = {}
        self._records: dict[str, dict[str, Any]] = {}
        self._refreshed: dict[str, float] = {}

    @staticmethod
    def _key(session_id: str) -> str:
        return f"session:{session_id}"

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        sid = request.headers.get(MCP_SESSION_ID_HEADER)
        owner = session_owner(scope)
        if sid is None:
            await self._open(owner, scope, receive, send)
            return
        transport = self._server_instances.get(sid)
        if transport is not None:
            if self._owners.get(sid) != owner:
                self.counters["sessions_wrong_owner"] += 1
                await _error_response("Session not found", 404)(scope, receive, send)
                return
            if not await self._still_open(sid):
                self.counters["sessions_closed_elsewhere"] += 1
                await self._discard_session(sid, transport)
                self._forget(sid)
                await _error_response("Session not found", 404)(scope, receive, send)
                return
            await self._serve(sid, transport, scope, receive, send)
            return
        try:
            record = await self.state.get(self._key(sid))
        except StateUnavailable:
            self.counters["sessions_state_refusals"] += 1
            await _error_response("Session state unavailable (state.unavailable)", 503, INTERNAL_ERROR)(scope, receive, send)
            return
        if not isinstance(record, dict) or record.get("closed"):
            self.counters["sessions_not_found"] += 1
            await _error_response("Session not found", 404)(scope, receive, send)
            return
        if record.get("owner") != owner:
            self.counters["sessions_wrong_owner"] += 1
            await _error_response("Session not found", 404)(scope, receive, send)
            return
        async with self._session_creation_lock:
            transport = self._server_instances.get(sid)
            if transport is None:
                transport = self._new_transport(sid)
                assert self._task_group is not None
                await self._task_group.start(self._run_session, transport, record)
                self._server_instances[sid] = transport
                self._owners[sid] = owner
                self._records[sid] = record
                self._refreshed[sid] = time.monotonic()
                self.counters["sessions_adopted"] += 1
                log.info("adopted session %s (opened on %s)", sid[:12], record.get("replica"))
        await self._serve(sid, transport, scope, receive, send)

    async def _still_open(self, sid: str) -> bool:
        """One read per request: a tombstone means the client ended it (on any replica); a missing
        record (Redis lost it, e.g. restarted empty) is written again from what this replica holds;
        the expiry is pushed back now and then, not on every request."""
        try:
            record = await self.state.get(self._key(sid))
            if isinstance(record, dict) and record.get("closed"):
                return False
            now = time.monotonic()
            if record is None and sid in self._records:
                self.counters["sessions_republished"] += 1
                await self.state.put(self._key(sid), self._records[sid], self.ttl_s)
                self._refreshed[sid] = now
            elif now - self._refreshed.get(sid, 0.0) > self.ttl_s / 4:
                await self.state.touch(self._key(sid), self.ttl_s)
                self._refreshed[sid] = now
        except StateUnavailable:
            self.counters["sessions_unverified"] += 1  # held here, owned by the caller: serve it
        return True

    def _forget(self, sid: str) -> None:
        self._owners.pop(sid, None)
        self._records.pop(sid, None)
        self._refreshed.pop(sid, None)

    async def _serve(self, sid: str, transport: StreamableHTTPServerTransport, scope: Scope, receive: Receive, send: Send) -> None:
        await transport.handle_request(scope, receive, send)
        if transport.is_terminated:  # the client ended the session (DELETE): everywhere
            owner = self._owners.get(sid, "")
            await self._discard_session(sid, transport)
            self._forget(sid)
            try:
                await self.state.put(self._key(sid), {"closed": True, "owner": owner}, self.ttl_s)
            except StateUnavailable:
                log.warning("could not mark session %s closed fleet-wide; other copies expire idle", sid[:12])

    def _new_transport(self, sid: str | None) -> StreamableHTTPServerTransport:
        from uuid import uuid4

        return StreamableHTTPServerTransport(
            mcp_session_id=sid or uuid4().hex,
            is_json_response_enabled=self.json_response,
            event_store=self.event_store,
            security_settings=self.security_settings,
            retry_interval=self.retry_interval,
            idle_timeout=self.session_idle_timeout,
        )

    async def _open(self, owner: str, scope: Scope, receive: Receive, send: Send) -> None:
        async with self._session_creation_lock:
            full = self.max_sessions is not None and len(self._server_instances) >= self.max_sessions
            transport = self._new_transport(None)
            sid = str(transport.mcp_session_id)
            if not full:
                self._server_instances[sid] = transport
                self._owners[sid] = owner
        if full:
            await _error_response("Too many open sessions", 503, INTERNAL_ERROR)(scope, receive, send)
            return
        connections: list[Connection] = []
        established = False
        published = False

        async def publish_first(message: Message) -> None:
            # Before the first bytes of the initialize result leave: the client cannot send its
            # next request (perhaps to another replica) before the record exists.
            nonlocal published
            if not published and message["type"] == "http.response.body" and message.get("body") and connections:
                published = True
                if connections[0].client_params is not None:
                    await self._publish(sid, owner, connections[0])
            await send(message)

        try:
            assert self._task_group is not None
            await self._task_group.start(self._run_session, transport, None, connections)
            status = await _send_and_report_status(transport.handle_request, scope, receive, publish_first)
            established = status is not None and status < 400
        finally:
            if not established:
                await self._discard_session(sid, transport)
                self._forget(sid)

    async def _publish(self, sid: str, owner: str, connection: Connection) -> None:
        params = connection.client_params
        record = {
            "owner": owner,
            "replica": self.replica,
            "protocol_version": connection.protocol_version,
            "client_params": params.model_dump(mode="json", by_alias=True, exclude_none=True) if params is not None else None,
            "opened": time.time(),
        }
        self._records[sid] = record
        self._refreshed[sid] = time.monotonic()
        try:
            await self.state.put(self._key(sid), record, self.ttl_s)
            self.counters["sessions_opened"] += 1
        except StateUnavailable:
            # The session works here; another replica answers it 404 and the client re-initializes.
            self.counters["sessions_unshared"] += 1
            log.warning("session %s not shared: the shared state is unavailable", sid[:12])

    async def _run_session(
        self,
        transport: StreamableHTTPServerTransport,
        record: dict[str, Any] | None,
        connections: list[Connection] | None = None,
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        sid = transport.mcp_session_id
        assert sid is not None
        async with transport.connect() as (read_stream, write_stream):
            task_status.started()
            try:
                dispatcher: JSONRPCDispatcher[TransportContext] = JSONRPCDispatcher(
                    read_stream, write_stream, inline_methods=frozenset({"initialize"})
                )
                if record is None:
                    connection = Connection.for_loop(dispatcher, session_id=sid)
                else:
                    raw = record.get("client_params")
                    params = InitializeRequestParams.model_validate(raw) if isinstance(raw, dict) else None
                    connection = Connection(
                        dispatcher,
                        protocol_version=str(record.get("protocol_version")),
                        session_id=sid,
                        client_params=params,
                    )
                    connection.initialized.set()  # the handshake happened on the replica that opened it
                if connections is not None:
                    connections.append(connection)
                idle_scope = transport.idle_scope or anyio.CancelScope()
                with idle_scope:
                    await serve_connection(self.app, dispatcher, connection=connection, lifespan_state=self._lifespan_state)
                if idle_scope.cancelled_caught:
                    log.info("session %s idle timeout", sid[:12])
            except Exception:
                log.exception("session %s crashed", sid[:12])
            finally:
                await self._discard_session(sid, transport)
                self._forget(sid)


def fleet_http_app(
    server: Any, security: Any, routes: list[Route], state: SharedState, *, replica: str
) -> tuple[Starlette, FleetSessionManager]:
    """The same app as ``Server.streamable_http_app`` (``/mcp`` plus ``routes``), with sessions
    shared through ``state``."""
    manager = FleetSessionManager(server, security_settings=security, state=state, replica=replica)
    app = Starlette(
        routes=[Route("/mcp", endpoint=StreamableHTTPASGIApp(manager)), *routes],
        lifespan=lambda _app: manager.run(),
    )
    return app, manager
