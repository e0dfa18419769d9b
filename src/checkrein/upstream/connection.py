"""``McpUpstream``: one long-lived MCP session to one server, restarted when it dies.

Lifecycle (``info.state``)::

    starting ──ok──> ready ──process exits / connection closes──> crashed
        │                                                            │ next call, after backoff
        └──fails──> failed <──restart fails── restarting <───────────┘
                                                  └──ok──> ready (restarts += 1)

A background task owns each connection for its whole life: ``call_tool`` is one request on the
open session. When it dies, in-flight requests fail at once (``UpstreamUnavailable``); the next
call reconnects, waiting out a backoff of up to 1 s (0.1 s doubling to 5 s), else fails fast.
What the server lists, and following its ``list_changed``, is `checkrein.upstream.listings`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from functools import partial
from types import TracebackType
from typing import Any, TypeVar

import anyio
import anyio.abc
import mcp.types as types
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED
from pydantic import ValidationError

import checkrein
from checkrein.catalog.model import ToolDefinition
from checkrein.config import ServerConfig
from checkrein.errors import UpstreamError, UpstreamRequestFailed, UpstreamTimeout, UpstreamUnavailable
from checkrein.upstream._stdio import StderrTail, StdioProcess
from checkrein.upstream.backoff import Backoff
from checkrein.upstream.base import ToolsChanged, UpstreamInfo, UpstreamState
from checkrein.upstream.listings import ServerListings, listen_for_changes
from checkrein.upstream.raw import RawRequests
from checkrein.upstream.raw_http import RawHttpRequests, raw_http_enabled
from checkrein.upstream.relay import (
    CURRENT_DOWNSTREAM,
    Downstream,
    InFlight,
    RelayHooks,
    SessionCallbacks,
    no_downstream,
)
from checkrein.upstream.session import Era, ModernOnlyServer, UpstreamSession, handshake
from checkrein.upstream.spawn import EarlyProcesses
from checkrein.upstream.transports import open_transport
from checkrein.upstream.wire import describe_error as _describe
from checkrein.upstream.wire import first_cause as _first_cause
from checkrein.upstream.wire import session_expired as _session_expired
from checkrein.upstream.wire import strip_identifying_json_meta, strip_identifying_meta

__all__ = ["LifecycleHook", "McpUpstream"]

logger = logging.getLogger("checkrein.upstream")

_T = TypeVar("_T")

LifecycleHook = Callable[[str, dict[str, Any]], Awaitable[None]]
"""``hook(event, fields)``: event is ``upstream.start``, ``upstream.failed``, ``upstream.crash``,
``upstream.restart``, ``upstream.refresh_failed`` or ``upstream.close``; fields always hold
``server``, ``transport``, ``state`` and ``restarts``, plus ``error``/``pid`` when known."""


_WAIT_OUT_BACKOFF_S = 1.0
"""A restart due within this long is waited for by the next call instead of failing it."""


@dataclass(eq=False)
class _Link:
    """One live connection: its session, the signal that ends it, and what its process did."""

    session: UpstreamSession
    stop: anyio.Event
    process: StdioProcess | None
    dead: bool = False
    reason: str | None = None


class McpUpstream:
    """An ``Upstream`` over stdio, legacy SSE or Streamable HTTP, built from a ``ServerConfig``.

    Use it as an async context manager (it owns a task group) and call ``start()`` inside::

        async with McpUpstream(config, on_tools_changed=cb, on_event=hook) as up:
            await up.start()                      # raises UpstreamUnavailable on failure
            result = await up.call_tool("echo", {"text": "hi"}, timeout_s=config.timeout_s)

    ``${VAR}`` references in ``config`` were resolved when the config was loaded; the values here
    are used as they are. ``early`` may hold this server's process already started (its first
    connection adopts it). ``connect_timeout_s`` bounds a start or restart (spawn + handshake + first listings).
    """

    def __init__(
        self,
        config: ServerConfig,
        *,
        on_tools_changed: ToolsChanged | None = None,
        on_event: LifecycleHook | None = None,
        era: Era = "auto",
        connect_timeout_s: float = 15.0,
        backoff: Backoff | None = None,
        relay: RelayHooks | None = None,
        early: EarlyProcesses | None = None,
    ) -> None:
        self.name = config.name
        self._early = early
        self._relay = relay
        self._inflight = InFlight()
        self.config = config
        self._on_event = on_event
        self._era: Era = era
        self._connect_timeout_s = connect_timeout_s
        self._backoff = backoff or Backoff()
        self._tg: anyio.abc.TaskGroup | None = None
        self._link: _Link | None = None
        self._restart_lock = anyio.Lock()
        self._state: UpstreamState = "starting"
        self._error: str | None = None
        self._restarts = 0
        self._failures = 0
        self._retry_at = 0.0
        self._closed = False
        self._ever_started = False
        self._negotiated_era: Era | None = None
        self._server_info: types.Implementation | None = None
        self._protocol_version: str | None = None
        self._last_process: StdioProcess | None = None
        self.stats: dict[str, int] = {"bad_messages": 0, "hook_errors": 0, "refresh_failures": 0}
        """Degradation counters: non-JSON-RPC lines, raising lifecycle hooks, failed (re-)listings."""
        self._listings = ServerListings(
            self.name,
            timeout_s=config.timeout_s,
            live_session=self._live_session,
            on_tools_changed=on_tools_changed,
            relay=relay,
            emit=self._emit,
            stats=self.stats,
        )

    # -- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> McpUpstream:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        return await self._tg.__aexit__(exc_type, exc, tb)

    @property
    def info(self) -> UpstreamInfo:
        return UpstreamInfo(
            name=self.name,
            transport=self.config.transport,
            state=self._state,
            server_name=self._server_info.name if self._server_info else None,
            server_version=self._server_info.version if self._server_info else None,
            protocol_version=self._protocol_version,
            error=self._error,
            restarts=self._restarts,
        )

    def stderr_tail(self, lines: int = 20) -> list[str]:
        """The last ``lines`` lines the (latest) stdio server process wrote to stderr."""
        return self._last_process.stderr.tail(lines) if self._last_process else []

    async def start(self) -> None:
        """Connect and fetch tools, resources and prompts. Raises ``UpstreamUnavailable`` on failure.

        A no-op while the upstream is already connected.
        """
        async with self._restart_lock:
            if self._link is not None and not self._link.dead:
                return
            if self._closed:
                raise UpstreamUnavailable(f"{self.name}: the upstream is closed")
            if self._state != "failed":  # a retried start stays "failed" until it succeeds
                self._state = "starting"
            try:
                await self._connect()
            except UpstreamUnavailable as exc:
                self._note_failure(str(exc))
                await self._emit("upstream.failed", error=str(exc))
                raise
            await self._emit("upstream.start")

    async def aclose(self) -> None:
        """Stop the connection (and its process); later calls raise ``UpstreamUnavailable``."""
        if self._closed:
            return
        self._closed = True
        link = self._link
        self._link = None
        if link is not None:
            link.dead = True
            link.stop.set()
        self._state = "closed"
        await self._emit("upstream.close")

    # -- the Upstream protocol ---------------------------------------------------------------

    async def tools(self) -> list[ToolDefinition]:
        return list(self._listings.tools)

    async def list_resources(self) -> list[types.Resource]:
        return list(self._listings.resources)

    async def set_logging_level(self, level: str, *, timeout_s: float) -> bool:
        """Pass a client's ``logging/setLevel`` on; False when the server does not log (2025 era only)."""
        link = self._link
        caps = link.session.server_capabilities if link is not None and not link.dead else None
        if caps is None or caps.logging is None or self._negotiated_era == "modern":
            return False
        await self._forward("logging/setLevel", timeout_s, lambda session: session.set_logging_level(level))  # type: ignore[arg-type]
        return True

    async def roots_changed(self) -> None:
        """Tell the server the client's roots changed (it may ask for them again)."""
        link = self._link
        if link is not None and not link.dead:
            await link.session.send_roots_list_changed()

    def tools_pending(self) -> bool:
        """True while a ``list_changed`` for tools is being followed (re-listed, handed to the gate)."""
        return self._listings.tools_pending()

    async def tools_settled(self) -> None:
        """Return once no tools re-listing is in flight (the gate has seen the new list)."""
        await self._listings.tools_settled()

    async def list_resource_templates(self) -> list[types.ResourceTemplate]:
        """The cached resource templates (empty when the server has none or cannot list them)."""
        return list(self._listings.templates)

    async def list_prompts(self) -> list[types.Prompt]:
        return list(self._listings.prompts)

    async def complete(
        self,
        ref: dict[str, Any],
        argument: dict[str, Any],
        context: dict[str, Any] | None,
        *,
        timeout_s: float,
    ) -> types.CompleteResult:
        """completion/complete for a prompt or resource template of this server (its own names)."""
        if ref.get("type") == "ref/prompt":
            sdk_ref: types.PromptReference | types.ResourceTemplateReference = types.PromptReference(
                type="ref/prompt", name=str(ref.get("name", ""))
            )
        else:
            sdk_ref = types.ResourceTemplateReference(type="ref/resource", uri=str(ref.get("uri", "")))
        args = (context or {}).get("arguments") if isinstance(context, dict) else None
        result = await self._forward(
            "completion",
            timeout_s,
            lambda session: session.complete(sdk_ref, {str(k): str(v) for k, v in argument.items()}, args),
        )
        return strip_identifying_meta(result)

    async def subscribe_resource(self, uri: str, *, timeout_s: float) -> types.EmptyResult:
        """resources/subscribe; updates arrive as ``notifications/resources/updated``."""
        return await self._forward(f"subscribe {uri!r}", timeout_s, lambda session: session.subscribe_resource(uri))

    async def unsubscribe_resource(self, uri: str, *, timeout_s: float) -> types.EmptyResult:
        return await self._forward(f"unsubscribe {uri!r}", timeout_s, lambda session: session.unsubscribe_resource(uri))

    async def call_tool(self, name: str, arguments: dict[str, Any], *, timeout_s: float) -> types.CallToolResult:
        result = await self.call_tool_json(name, arguments, timeout_s=timeout_s)
        return types.CallToolResult.model_validate(result, by_name=False)

    async def call_tool_json(self, name: str, arguments: dict[str, Any], *, timeout_s: float) -> dict[str, Any]:
        """``tools/call``; the result as the server's JSON (wire names), checked against the
        ``CallToolResult`` schema, without the ``_meta`` entries that name the server. Raises as
        ``call_tool`` does."""
        downstream = CURRENT_DOWNSTREAM.get()
        meta = downstream.upstream_meta if downstream is not None else None
        on_progress = None
        if downstream is not None and downstream.progress_token is not None:
            on_progress = downstream.progress if self._relay is None else partial(self._progress, downstream)
        result = await self._forward(
            f"tool {name!r}",
            timeout_s,
            lambda session: session.forward_tool_call(name, arguments, meta=meta, on_progress=on_progress, timeout_s=timeout_s),
            bounded=True,
        )
        self._failures = 0
        return strip_identifying_json_meta(result)

    async def _progress(self, downstream: Downstream, progress: float, total: float | None, message: str | None) -> None:
        """A progress notification of a relayed call: its message text goes to the client only as
        the relay lets it (secrets masked, an injection withheld), like a log message."""
        assert self._relay is not None
        if message is not None:
            message = await self._relay.progress_message(self.name, message, downstream)
        await downstream.progress(progress, total, message)

    async def read_resource(self, uri: str, *, timeout_s: float) -> types.ReadResourceResult:
        result = await self._forward(f"resource {uri!r}", timeout_s, lambda session: session.read_resource(uri))
        return strip_identifying_meta(result)

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None, *, timeout_s: float
    ) -> types.GetPromptResult:
        result = await self._forward(
            f"prompt {name!r}", timeout_s, lambda session: session.get_prompt(name, arguments)
        )
        return strip_identifying_meta(result)

    async def _forward(
        self, what: str, timeout_s: float, send: Callable[[UpstreamSession], Awaitable[_T]], *, bounded: bool = False
    ) -> _T:
        """Send one request on the live session (restarting a dead one first), within ``timeout_s``
        (``bounded``: ``send`` itself raises ``TimeoutError`` once ``timeout_s`` passed).

        A request the server refused because it no longer knows our HTTP session (it restarted
        while we were idle) never ran, so it is sent once more on a fresh session.
        """
        link = self._link
        if link is not None and not link.dead and link.session.connection_closed():
            # It died while idle (an HTTP/SSE server went away): this request was never sent.
            await self._link_lost(link, "the connection closed while idle", penalize=False)
        if link is None or link.dead:
            link = await self._revive()
        for attempt in (1, 2):
            try:
                if bounded:
                    with self._inflight.holding(CURRENT_DOWNSTREAM.get()):
                        return await send(link.session)
                # A bare deadline scope: `fail_after` is two generator context managers around one.
                with anyio.CancelScope(deadline=anyio.current_time() + timeout_s), self._inflight.holding(CURRENT_DOWNSTREAM.get()):
                    return await send(link.session)
                raise TimeoutError  # only its own deadline cancels that scope (nothing else holds it)
            except TimeoutError:
                raise UpstreamTimeout(f"{self.name}: {what} did not answer within {timeout_s:g} s") from None
            except MCPError as exc:
                if attempt == 1 and link.process is None and _session_expired(exc):
                    reason = f"the server no longer knows our session ({exc.message})"
                    await self._link_lost(link, reason, penalize=False)
                    link = await self._revive()
                    continue
                raise await self._request_error(link, exc, what) from None
            except (ValidationError, RuntimeError) as exc:
                raise UpstreamError(f"{self.name}: {what} came back unusable: {exc}") from exc
        raise AssertionError("unreachable: the second attempt returns or raises")

    # -- connecting --------------------------------------------------------------------------

    async def _revive(self) -> _Link:
        """Restart a crashed or failed server, honouring the backoff. Raises ``UpstreamUnavailable``."""
        async with self._restart_lock:
            link = self._link
            if link is not None and not link.dead:
                return link  # another call restarted it while we waited
            if self._closed:
                raise UpstreamUnavailable(f"{self.name}: the upstream is closed")
            wait = self._retry_at - anyio.current_time()
            if 0 < wait <= _WAIT_OUT_BACKOFF_S:
                # A short backoff is waited out, so the call after a one-off crash succeeds; a
                # server that keeps crashing soon backs off longer and its calls then fail fast.
                await anyio.sleep(wait)
                wait = 0.0
            if wait > 0:
                raise UpstreamUnavailable(
                    f"{self.name} is {self._state} ({self._error or 'no detail'}); "
                    f"next restart attempt in {wait:.2f} s"
                )
            was_started = self._ever_started
            self._state = "restarting"
            try:
                link = await self._connect()
            except UpstreamUnavailable as exc:
                self._note_failure(str(exc))
                await self._emit("upstream.failed", error=str(exc))
                raise
            if was_started:
                self._restarts += 1
                await self._emit("upstream.restart")
            else:
                await self._emit("upstream.start")
            return link

    def _note_failure(self, error: str) -> None:
        if self._closed:
            return  # a closed upstream stays "closed"
        self._state = "failed"
        self._error = error
        self._failures += 1
        self._retry_at = anyio.current_time() + self._backoff.delay(self._failures)

    async def _connect(self) -> _Link:
        """Open a connection in a background task and wait until it is ready (bounded)."""
        if self._tg is None:
            raise RuntimeError("McpUpstream must be entered (`async with`) before start()")
        era: Era = self._negotiated_era or self._era
        try:
            link = await self._start_link(era)
        except ModernOnlyServer:
            logger.info("%s refused the initialize handshake; reconnecting with server/discover", self.name)
            link = await self._start_link("modern")
            era = "modern"
        if era == "modern":
            self._negotiated_era = "modern"  # it refused the handshake once; don't ask again
        if self._closed:
            # aclose() ran while we were connecting: this connection must not outlive it.
            link.dead = True
            link.stop.set()
            raise UpstreamUnavailable(f"{self.name}: the upstream was closed while it started")
        self._link = link
        self._ever_started = True
        self._state = "ready"
        self._error = None
        return link

    async def _start_link(self, era: Era) -> _Link:
        assert self._tg is not None
        process = StdioProcess(stderr=StderrTail(log_as=self.name)) if self.config.transport == "stdio" else None
        self._last_process = process
        try:
            # A restart may happen inside some client's call: the connection's tasks must not
            # inherit that client (they would attribute every later message to it).
            with no_downstream():
                link: _Link = await self._tg.start(self._run_link, era, process)
        except Exception as exc:
            cause = _first_cause(exc)
            if isinstance(cause, ModernOnlyServer):
                raise cause from None
            if isinstance(cause, TimeoutError):
                what = f"no answer to the handshake within {self._connect_timeout_s:g} s"
            else:
                what = _describe(cause)
            raise UpstreamUnavailable(self._failure_text(what, process)) from exc
        return link

    def _failure_text(self, what: str, process: StdioProcess | None) -> str:
        text = f"{self.name} ({self.config.transport}) failed to start: {what}"
        if process is not None:
            text += f"; {process.describe()}"
        return text

    async def _run_link(
        self, era: Era, process: StdioProcess | None, *, task_status: anyio.abc.TaskStatus[_Link]
    ) -> None:
        """Own one connection from spawn to teardown; report it through ``task_status`` once ready."""
        stop = anyio.Event()
        started = False
        link: _Link | None = None
        try:
            async with AsyncExitStack() as stack:
                link = await self._open_link(stack, era, process, stop)
                async with anyio.create_task_group() as watchers:
                    if process is not None:
                        watchers.start_soon(self._watch_process, link)
                    if era == "modern":
                        # Subscribed before we report ready, so no change can slip past unseen.
                        await watchers.start(listen_for_changes, link.session, self.name, self._connect_timeout_s)
                    task_status.started(link)
                    started = True
                    await stop.wait()
                    watchers.cancel_scope.cancel()
        except Exception as exc:
            if not started or link is None:
                raise  # tg.start() hands it to _start_link
            # After start nothing may escape into the shared task group; the link just ends.
            if link.dead:
                logger.debug("%s: teardown of a dead connection raised: %s", self.name, _describe(exc))
            else:
                logger.exception("%s: connection ended with an error", self.name)
            await self._link_lost(link, f"connection failed: {_describe(exc)}")

    async def _open_link(
        self,
        stack: AsyncExitStack,
        era: Era,
        process: StdioProcess | None,
        stop: anyio.Event,
    ) -> _Link:
        # Contexts entered here stay open after this returns, so they must not sit inside the
        # deadline's cancel scope; the deadline covers the waiting: handshake and first listings.
        # `CHECKREIN_FAST_PATH=off`: no raw lane on either transport, every request through the SDK.
        raw = RawRequests() if process is not None and raw_http_enabled() else None
        raw_http = RawHttpRequests() if self.config.transport == "streamable-http" and raw_http_enabled() else None
        read, write = await stack.enter_async_context(open_transport(self.config, process, self._early, raw or raw_http))
        relayed = SessionCallbacks(self.name, self._relay, self._inflight) if self._relay else None
        if raw is not None and relayed is not None:
            raw.on_log = relayed.log_json
        if raw_http is not None and relayed is not None:
            raw_http.on_log = relayed.log_json
        session = UpstreamSession(
            read,
            write,
            message_handler=self._on_message,
            client_info=types.Implementation(name="checkrein", version=checkrein.__version__),
            **(relayed.kwargs() if relayed is not None else {}),
        )
        session.raw = raw
        session.raw_http = raw_http
        await stack.enter_async_context(session)
        with anyio.fail_after(self._connect_timeout_s):
            await handshake(session, era)
            self._server_info = session.server_info
            self._protocol_version = session.protocol_version
            await self._listings.fetch(session, ever_started=self._ever_started)
        return _Link(session=session, stop=stop, process=process)

    async def _watch_process(self, link: _Link) -> None:
        assert link.process is not None
        await link.process.exited.wait()
        await self._link_lost(link, f"the server process ended ({link.process.describe()})")

    async def _link_lost(self, link: _Link, reason: str, *, penalize: bool = True) -> None:
        """Mark ``link`` dead once; if it was the current link, the server counts as crashed.

        ``penalize=False`` (a session the server forgot, not a fault) restarts without backoff.
        """
        if link.dead:
            return
        link.dead = True
        link.reason = reason
        link.stop.set()
        if self._link is link and not self._closed:
            self._state = "crashed"
            self._error = reason
            if penalize:
                self._failures += 1
                self._retry_at = anyio.current_time() + self._backoff.delay(self._failures)
            else:
                self._retry_at = anyio.current_time()
            pid = link.process.pid if link.process else None
            await self._emit("upstream.crash", error=reason, pid=pid)

    async def _request_error(self, link: _Link, exc: MCPError, what: str) -> UpstreamError:
        # Only a transport that really closed is a crash: -32000 is also the code many servers
        # use for their own errors ("Server error"), answered on a healthy connection.
        if exc.code == CONNECTION_CLOSED and (
            link.session.connection_closed() or (link.process is not None and link.process.exited.is_set())
        ):
            if link.process is not None:
                # The pipe closed first; give the exit code and stderr a moment to land.
                with anyio.move_on_after(1.0):
                    await link.process.exited.wait()
                detail = link.process.describe()
            else:
                detail = exc.message
            await self._link_lost(link, f"connection closed during {what} ({detail})")
            return UpstreamUnavailable(
                f"{self.name}: the server went away during {what} ({detail}); it is restarted on the next call"
            )
        return UpstreamRequestFailed(
            f"{self.name}: {what} failed: {exc.message} (JSON-RPC error {exc.code})",
            rpc_code=exc.code,
            rpc_message=exc.message,
            rpc_data=exc.error.data,
        )

    # -- what the server sends on its own ---------------------------------------------------

    def _live_session(self) -> UpstreamSession | None:
        link = self._link
        return link.session if link is not None and not link.dead else None

    async def _on_message(self, message: types.ServerNotification | Exception) -> None:
        if isinstance(message, Exception):
            self.stats["bad_messages"] += 1
            logger.warning("%s sent an unreadable message: %s", self.name, message)
            return
        if isinstance(message, types.ResourceUpdatedNotification):
            if self._relay is not None:
                await self._relay.resource_updated(self.name, str(message.params.uri))
            return
        if self._tg is not None:
            self._listings.changed(message, self._tg)

    async def _emit(self, event: str, **fields: Any) -> None:
        if self._on_event is None:
            return
        payload: dict[str, Any] = {
            "server": self.name,
            "transport": self.config.transport,
            "state": self._state,
            "restarts": self._restarts,
            **fields,
        }
        try:
            await self._on_event(event, payload)
        except Exception:  # a broken hook must not take the upstream down; it is counted
            self.stats["hook_errors"] += 1
            logger.exception("%s: lifecycle hook failed for %s", self.name, event)
