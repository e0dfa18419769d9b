"""``McpUpstream``: one long-lived MCP session to one server, restarted when it dies.

Lifecycle (``info.state``)::

    starting ──ok──> ready ──process exits / connection closes──> crashed
        │                                                            │ next call, after backoff
        └──fails──> failed <──restart fails── restarting <───────────┘
                                                  └──ok──> ready (restarts += 1)

A background task owns each connection (transport + ``ClientSession``) for its whole life, so a
call never re-opens or re-initializes anything: ``call_tool`` is one request on the open session.
When the connection dies, the in-flight requests fail at once with ``UpstreamUnavailable``; the
next call reconnects unless the server is in backoff (0.1 s doubling to 5 s by default), in which
case it fails fast saying when the next attempt is due.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import anyio
import anyio.abc
import httpx2
import mcp.types as types
from mcp.client._transport import TransportStreams  # typing only: the SDK's stream-pair alias
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import SubscriptionLost, listen
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED
from pydantic import ValidationError

import checkrein
from checkrein.catalog.model import ToolDefinition
from checkrein.config import ServerConfig, expand_env
from checkrein.errors import UpstreamError, UpstreamTimeout, UpstreamUnavailable
from checkrein.upstream._stdio import StderrTail, StdioProcess, open_stdio
from checkrein.upstream.base import ToolsChanged, UpstreamInfo, UpstreamState
from checkrein.upstream.session import Era, ModernOnlyServer, UpstreamSession, handshake
from checkrein.upstream.wire import strip_identifying_meta, tool_definition

__all__ = ["Backoff", "LifecycleHook", "McpUpstream", "UpstreamRequestFailed"]

logger = logging.getLogger("checkrein.upstream")

LifecycleHook = Callable[[str, dict[str, Any]], Awaitable[None]]
"""``hook(event, fields)``: event is ``upstream.start``, ``upstream.failed``, ``upstream.crash``,
``upstream.restart``, ``upstream.refresh_failed`` or ``upstream.close``; fields always hold
``server``, ``transport``, ``state`` and ``restarts``, plus ``error``/``pid`` when known."""

_Streams = TransportStreams
_MAX_PAGES = 1000


class UpstreamRequestFailed(UpstreamError):
    """The upstream answered with a JSON-RPC error (unknown tool, bad params, its own fault).

    ``rpc_code``/``rpc_message``/``rpc_data`` carry the upstream's error as it was sent.
    """

    code = "upstream.request_failed"

    def __init__(self, message: str, *, rpc_code: int, rpc_message: str, rpc_data: Any = None) -> None:
        super().__init__(message)
        self.rpc_code = rpc_code
        self.rpc_message = rpc_message
        self.rpc_data = rpc_data


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delay before restart attempt ``n`` (1-based): ``initial_s * factor**(n-1)``, capped at ``max_s``."""

    initial_s: float = 0.1
    factor: float = 2.0
    max_s: float = 5.0

    def delay(self, failures: int) -> float:
        if failures <= 0:
            return 0.0
        return float(min(self.max_s, self.initial_s * self.factor ** (failures - 1)))


@dataclass(eq=False)
class _Link:
    """One live connection: its session, the signal that ends it, and what its process did."""

    session: UpstreamSession
    stop: anyio.Event
    process: StdioProcess | None
    dead: bool = False
    reason: str | None = None
    listen_scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)


class McpUpstream:
    """An ``Upstream`` over stdio, legacy SSE or Streamable HTTP, built from a ``ServerConfig``.

    Use it as an async context manager (it owns a task group) and call ``start()`` inside::

        async with McpUpstream(config, on_tools_changed=cb, on_event=hook) as up:
            await up.start()                      # raises UpstreamUnavailable on failure
            result = await up.call_tool("echo", {"text": "hi"}, timeout_s=config.timeout_s)

    ``environ`` is what ``${VAR}`` in ``env``/``headers`` expand against (default ``os.environ``).
    ``connect_timeout_s`` bounds a start or restart (spawn + handshake + first listings).
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
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.name = config.name
        self.config = config
        self._on_tools_changed = on_tools_changed
        self._on_event = on_event
        self._era: Era = era
        self._connect_timeout_s = connect_timeout_s
        self._backoff = backoff or Backoff()
        self._environ = environ
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
        self._tools: list[ToolDefinition] = []
        self._resources: list[types.Resource] = []
        self._prompts: list[types.Prompt] = []
        self._refreshing: set[str] = set()
        self._refresh_again: set[str] = set()
        self.stats: dict[str, int] = {"bad_messages": 0, "hook_errors": 0, "refresh_failures": 0}
        """Degradation counters: non-JSON-RPC lines, raising lifecycle hooks, failed re-listings."""

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
        return list(self._tools)

    async def list_resources(self) -> list[types.Resource]:
        return list(self._resources)

    async def list_prompts(self) -> list[types.Prompt]:
        return list(self._prompts)

    async def call_tool(self, name: str, arguments: dict[str, Any], *, timeout_s: float) -> types.CallToolResult:
        link = self._link
        if link is None or link.dead:
            link = await self._revive()
        try:
            with anyio.fail_after(timeout_s):
                result = await link.session.call_tool(name, arguments)
        except TimeoutError:
            raise UpstreamTimeout(f"{self.name}: tool {name!r} did not answer within {timeout_s:g} s") from None
        except MCPError as exc:
            raise await self._request_error(link, exc, f"tools/call {name!r}") from None
        except (ValidationError, RuntimeError) as exc:
            raise UpstreamError(f"{self.name}: tool {name!r} returned an unusable result: {exc}") from exc
        self._failures = 0
        return strip_identifying_meta(result)

    async def read_resource(self, uri: str, *, timeout_s: float) -> types.ReadResourceResult:
        link = await self._live_link()
        try:
            with anyio.fail_after(timeout_s):
                result = await link.session.read_resource(uri)
        except TimeoutError:
            raise UpstreamTimeout(f"{self.name}: resource {uri!r} was not read within {timeout_s:g} s") from None
        except MCPError as exc:
            raise await self._request_error(link, exc, f"resources/read {uri!r}") from None
        except (ValidationError, RuntimeError) as exc:
            raise UpstreamError(f"{self.name}: resource {uri!r} came back unusable: {exc}") from exc
        return strip_identifying_meta(result)

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None, *, timeout_s: float
    ) -> types.GetPromptResult:
        link = await self._live_link()
        try:
            with anyio.fail_after(timeout_s):
                result = await link.session.get_prompt(name, arguments)
        except TimeoutError:
            raise UpstreamTimeout(f"{self.name}: prompt {name!r} did not answer within {timeout_s:g} s") from None
        except MCPError as exc:
            raise await self._request_error(link, exc, f"prompts/get {name!r}") from None
        except (ValidationError, RuntimeError) as exc:
            raise UpstreamError(f"{self.name}: prompt {name!r} came back unusable: {exc}") from exc
        return strip_identifying_meta(result)

    # -- connecting --------------------------------------------------------------------------

    async def _live_link(self) -> _Link:
        link = self._link
        if link is None or link.dead:
            link = await self._revive()
        return link

    async def _revive(self) -> _Link:
        """Restart a crashed or failed server, honouring the backoff. Raises ``UpstreamUnavailable``."""
        async with self._restart_lock:
            link = self._link
            if link is not None and not link.dead:
                return link  # another call restarted it while we waited
            if self._closed:
                raise UpstreamUnavailable(f"{self.name}: the upstream is closed")
            wait = self._retry_at - anyio.current_time()
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

    def _transport(self, process: StdioProcess | None) -> AbstractAsyncContextManager[_Streams]:
        cfg = self.config
        if cfg.transport == "stdio":
            assert process is not None and cfg.command is not None
            env = {k: expand_env(v, self._environ) for k, v in cfg.env.items()}
            return open_stdio(cfg.command, list(cfg.args), env=env, cwd=cfg.cwd, process_info=process)
        assert cfg.url is not None
        headers = {k: expand_env(v, self._environ) for k, v in cfg.headers.items()}
        # Read timeout above the call timeout: our own deadline decides, not the socket's.
        read_s = max(300.0, cfg.timeout_s + 30.0)
        if cfg.transport == "sse":
            return sse_client(cfg.url, headers=headers, timeout=10.0, sse_read_timeout=read_s)
        return _streamable_http(cfg.url, headers, read_s)

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
                        await watchers.start(self._listen_for_changes, link)
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
        read, write = await stack.enter_async_context(self._transport(process))
        session = UpstreamSession(
            read,
            write,
            message_handler=self._on_message,
            client_info=types.Implementation(name="checkrein", version=checkrein.__version__),
        )
        await stack.enter_async_context(session)
        with anyio.fail_after(self._connect_timeout_s):
            await handshake(session, era)
            self._server_info = session.server_info
            self._protocol_version = session.protocol_version
            await self._fetch_catalog(session, first=True)
        return _Link(session=session, stop=stop, process=process)

    async def _watch_process(self, link: _Link) -> None:
        assert link.process is not None
        await link.process.exited.wait()
        await self._link_lost(link, f"the server process ended ({link.process.describe()})")

    async def _listen_for_changes(self, link: _Link, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """2026-era servers deliver list_changed only on a subscriptions/listen stream.

        Reports started once the server acknowledged the subscription (or it could not be had:
        then the upstream still serves, with a warning, and its catalog is refreshed on restart).
        """
        caps = link.session.server_capabilities
        tools = bool(caps and caps.tools and caps.tools.list_changed)
        prompts = bool(caps and caps.prompts and caps.prompts.list_changed)
        resources = bool(caps and caps.resources and caps.resources.list_changed)
        acked = False
        try:
            if tools or prompts or resources:
                # The deadline bounds only the wait for the acknowledgment.
                with anyio.CancelScope(deadline=anyio.current_time() + self._connect_timeout_s) as scope:
                    async with listen(
                        link.session,
                        tools_list_changed=tools,
                        prompts_list_changed=prompts,
                        resources_list_changed=resources,
                    ) as subscription:
                        scope.deadline = math.inf
                        acked = True
                        task_status.started()
                        # The events also reach _on_message (the session tees them); draining
                        # keeps the subscription's backlog from overflowing.
                        async for _event in subscription:
                            continue
                if scope.cancelled_caught:
                    logger.warning("%s: no acknowledgment of the change subscription", self.name)
        except (SubscriptionLost, MCPError, TimeoutError) as exc:
            logger.warning("%s: change subscription ended: %s", self.name, exc)
        finally:
            if not acked:
                task_status.started()

    async def _link_lost(self, link: _Link, reason: str) -> None:
        """Mark ``link`` dead once; if it was the current link, the server counts as crashed."""
        if link.dead:
            return
        link.dead = True
        link.reason = reason
        link.stop.set()
        if self._link is link and not self._closed:
            self._state = "crashed"
            self._error = reason
            self._failures += 1
            self._retry_at = anyio.current_time() + self._backoff.delay(self._failures)
            pid = link.process.pid if link.process else None
            await self._emit("upstream.crash", error=reason, pid=pid)

    async def _request_error(self, link: _Link, exc: MCPError, what: str) -> UpstreamError:
        if exc.code == CONNECTION_CLOSED:
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

    # -- catalog ----------------------------------------------------------------------------

    async def _fetch_catalog(self, session: UpstreamSession, *, first: bool) -> None:
        caps = session.server_capabilities
        before = [t.digest for t in self._tools]
        if caps is None or caps.tools is not None:
            tools = await _all_pages(session.list_tools, "tools")
            self._tools = [tool_definition(self.name, t) for t in tools]
        if caps is not None and caps.resources is not None:
            self._resources = await _all_pages(session.list_resources, "resources")
        if caps is not None and caps.prompts is not None:
            self._prompts = await _all_pages(session.list_prompts, "prompts")
        if self._ever_started and before != [t.digest for t in self._tools]:
            await self._tools_changed()

    async def _on_message(self, message: types.ServerNotification | Exception) -> None:
        if isinstance(message, Exception):
            self.stats["bad_messages"] += 1
            logger.warning("%s sent an unreadable message: %s", self.name, message)
            return
        kind = {
            types.ToolListChangedNotification: "tools",
            types.ResourceListChangedNotification: "resources",
            types.PromptListChangedNotification: "prompts",
        }.get(type(message))
        if kind is not None and self._tg is not None:
            if kind in self._refreshing:
                self._refresh_again.add(kind)
            else:
                self._refreshing.add(kind)
                self._tg.start_soon(self._refresh, kind)

    async def _refresh(self, kind: str) -> None:
        """Re-list ``kind`` after a list_changed, coalescing notifications that arrive meanwhile."""
        try:
            while True:
                self._refresh_again.discard(kind)
                link = self._link
                if link is None or link.dead:
                    return
                try:
                    with anyio.fail_after(self.config.timeout_s):
                        await self._relist(link.session, kind)
                except Exception as exc:  # a failed re-listing keeps the old cache and is reported
                    self.stats["refresh_failures"] += 1
                    logger.exception("%s: re-listing %s failed", self.name, kind)
                    await self._emit("upstream.refresh_failed", error=f"{kind}: {_describe(exc)}")
                    return
                if kind not in self._refresh_again:
                    return
        finally:
            self._refreshing.discard(kind)

    async def _relist(self, session: UpstreamSession, kind: str) -> None:
        if kind == "tools":
            before = [t.digest for t in self._tools]
            tools = await _all_pages(session.list_tools, "tools")
            self._tools = [tool_definition(self.name, t) for t in tools]
            if before != [t.digest for t in self._tools]:
                await self._tools_changed()
        elif kind == "resources":
            self._resources = await _all_pages(session.list_resources, "resources")
        else:
            self._prompts = await _all_pages(session.list_prompts, "prompts")

    async def _tools_changed(self) -> None:
        if self._on_tools_changed is not None:
            await self._on_tools_changed(self.name)

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


async def _all_pages(fetch: Callable[..., Awaitable[Any]], attr: str) -> list[Any]:
    """Follow ``nextCursor`` until the listing ends. Raises ``UpstreamError`` on a cursor loop."""
    items: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(_MAX_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        page = await fetch(params=params)
        items.extend(getattr(page, attr))
        cursor = page.next_cursor
        if cursor is None:
            return items
        if cursor in seen:
            raise UpstreamError(f"the server repeated the {attr} cursor {cursor!r}")
        seen.add(cursor)
    raise UpstreamError(f"the {attr} listing did not end after {_MAX_PAGES} pages")


@asynccontextmanager
async def _streamable_http(url: str, headers: dict[str, str], read_s: float) -> AsyncIterator[_Streams]:
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(10.0, read=read_s)) as client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            yield read, write


def _first_cause(exc: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups, or ``exc`` itself."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException) -> str:
    """One line for an exception, looking inside exception groups for the first real cause."""
    exc = _first_cause(exc)
    if isinstance(exc, MCPError):
        return f"{exc.message} (JSON-RPC error {exc.code})"
    if isinstance(exc, httpx2.ConnectError):
        return f"cannot connect: {exc}"
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, UpstreamError) else f"{type(exc).__name__}: {text}"

