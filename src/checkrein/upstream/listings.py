"""``ServerListings``: what one server lists (tools, resources, resource templates, prompts), cached,
and how the cache follows the server's ``list_changed``.

The lists are fetched whole on every (re)connection (`fetch`). A handshake-era server announces a
change with ``notifications/*/list_changed`` on its session, a 2026-era server only on a
``subscriptions/listen`` stream (`listen_for_changes`, which the connection runs); either way
`changed` re-lists that kind in the background, coalescing the notifications that arrive meanwhile
into one more re-listing. A changed tool list is handed to the gate (``on_tools_changed``);
resources and prompts changes go to the relay. A failed re-listing keeps the old lists, counted.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable

import anyio
import anyio.abc
import mcp.types as types
from mcp.client.subscriptions import SubscriptionLost, listen
from mcp.shared.exceptions import MCPError
from mcp_types import METHOD_NOT_FOUND
from pydantic import ValidationError

from checkrein.catalog.model import ToolDefinition
from checkrein.errors import UpstreamError
from checkrein.upstream.base import ToolsChanged
from checkrein.upstream.relay import RelayHooks
from checkrein.upstream.session import UpstreamSession
from checkrein.upstream.transports import all_pages
from checkrein.upstream.wire import describe_error as _describe
from checkrein.upstream.wire import tool_definition

__all__ = ["ServerListings", "listen_for_changes"]

logger = logging.getLogger("checkrein.upstream")

_LIST_CHANGED: dict[type, str] = {
    types.ToolListChangedNotification: "tools",
    types.ResourceListChangedNotification: "resources",
    types.PromptListChangedNotification: "prompts",
}


class ServerListings:
    """The cached lists of the server ``name`` and their re-listing after a ``list_changed``.

    ``live_session()`` is the session to re-list on (``None`` while there is no live connection:
    a re-listing then stops, the next connection fetches everything). ``emit`` reports
    ``upstream.refresh_failed``; ``stats`` is the upstream's counters (``refresh_failures``,
    ``hook_errors`` are counted here).
    """

    def __init__(
        self,
        name: str,
        *,
        timeout_s: float,
        live_session: Callable[[], UpstreamSession | None],
        on_tools_changed: ToolsChanged | None,
        relay: RelayHooks | None,
        emit: Callable[..., Awaitable[None]],
        stats: dict[str, int],
    ) -> None:
        self.name = name
        self._timeout_s = timeout_s
        self._live_session = live_session
        self._on_tools_changed = on_tools_changed
        self._relay = relay
        self._emit = emit
        self._stats = stats
        self.tools: list[ToolDefinition] = []
        self.resources: list[types.Resource] = []
        self.templates: list[types.ResourceTemplate] = []
        self.prompts: list[types.Prompt] = []
        self._refreshing: set[str] = set()
        self._refresh_again: set[str] = set()
        self._tools_settled = anyio.Event()
        self._tools_settled.set()

    def tools_pending(self) -> bool:
        """True while a ``list_changed`` for tools is being followed (re-listed, handed to the gate)."""
        return not self._tools_settled.is_set()

    async def tools_settled(self) -> None:
        """Return once no tools re-listing is in flight (the gate has seen the new list)."""
        await self._tools_settled.wait()

    async def fetch(self, session: UpstreamSession, *, ever_started: bool) -> None:
        """List tools (a failure fails the connection), then resources and prompts (a failure
        there leaves that list empty, with a warning: the tools are still worth serving).

        ``ever_started``: this is a reconnection, so a tool list that differs is handed on."""
        caps = session.server_capabilities
        before = [t.digest for t in self.tools]
        if caps is None or caps.tools is not None:
            tools = await all_pages(session.list_tools, "tools")
            self.tools = [tool_definition(self.name, t) for t in tools]
        else:
            self.tools = []
        self.resources = []
        self.templates = []
        self.prompts = []
        try:
            if caps is not None and caps.resources is not None:
                self.resources = await all_pages(session.list_resources, "resources")
                self.templates = await _templates(session)
            if caps is not None and caps.prompts is not None:
                self.prompts = await all_pages(session.list_prompts, "prompts")
        except (MCPError, ValidationError, UpstreamError) as exc:
            self._stats["refresh_failures"] += 1
            logger.warning("%s: listing resources/prompts failed: %s", self.name, _describe(exc))
        if ever_started and before != [t.digest for t in self.tools]:
            await self.tools_changed()

    def changed(self, message: types.ServerNotification, tg: anyio.abc.TaskGroup) -> None:
        """Follow ``message`` if it is a ``list_changed``: re-list that kind in a task of ``tg``."""
        kind = _LIST_CHANGED.get(type(message))
        if kind is None:
            return
        if kind == "tools" and self._tools_settled.is_set():
            self._tools_settled = anyio.Event()
        if kind in self._refreshing:
            self._refresh_again.add(kind)
        else:
            self._refreshing.add(kind)
            tg.start_soon(self._refresh, kind)

    async def _refresh(self, kind: str) -> None:
        """Re-list ``kind`` after a list_changed, coalescing notifications that arrive meanwhile."""
        try:
            while True:
                self._refresh_again.discard(kind)
                session = self._live_session()
                if session is None:
                    return
                try:
                    with anyio.fail_after(self._timeout_s):
                        await self._relist(session, kind)
                except Exception as exc:  # a failed re-listing keeps the old cache and is reported
                    self._stats["refresh_failures"] += 1
                    logger.exception("%s: re-listing %s failed", self.name, kind)
                    await self._emit("upstream.refresh_failed", error=f"{kind}: {_describe(exc)}")
                    return
                if kind not in self._refresh_again:
                    return
        finally:
            self._refreshing.discard(kind)
            if kind == "tools":
                self._tools_settled.set()

    async def _relist(self, session: UpstreamSession, kind: str) -> None:
        if kind == "tools":
            before = [t.digest for t in self.tools]
            tools = await all_pages(session.list_tools, "tools")
            self.tools = [tool_definition(self.name, t) for t in tools]
            if before != [t.digest for t in self.tools]:
                await self.tools_changed()
        elif kind == "resources":
            self.resources = await all_pages(session.list_resources, "resources")
            self.templates = await _templates(session)
            if self._relay is not None:
                await self._relay.list_changed(self.name, "resources")
        else:
            self.prompts = await all_pages(session.list_prompts, "prompts")
            if self._relay is not None:
                await self._relay.list_changed(self.name, "prompts")

    async def tools_changed(self) -> None:
        """Hand the changed tool list to the gate; a failing callback is counted and reported."""
        if self._on_tools_changed is None:
            return
        try:
            await self._on_tools_changed(self.name)
        except Exception as exc:  # the gate's callback failing must not fail our connection
            # Counted and reported: the gate may now hold a stale catalog, which it must treat
            # as drift on its side (it owns quarantine); we make the failure visible.
            self._stats["hook_errors"] += 1
            logger.exception("%s: on_tools_changed failed", self.name)
            await self._emit("upstream.refresh_failed", error=f"on_tools_changed: {_describe(exc)}")


async def listen_for_changes(
    session: UpstreamSession, name: str, ack_timeout_s: float, *, task_status: anyio.abc.TaskStatus[None]
) -> None:
    """2026-era servers deliver list_changed only on a subscriptions/listen stream.

    Reports started once the server acknowledged the subscription (or it could not be had:
    then the upstream still serves, with a warning, and its catalog is refreshed on restart).
    """
    caps = session.server_capabilities
    tools = bool(caps and caps.tools and caps.tools.list_changed)
    prompts = bool(caps and caps.prompts and caps.prompts.list_changed)
    resources = bool(caps and caps.resources and caps.resources.list_changed)
    acked = False
    try:
        if tools or prompts or resources:
            # The deadline bounds only the wait for the acknowledgment.
            with anyio.CancelScope(deadline=anyio.current_time() + ack_timeout_s) as scope:
                async with listen(
                    session,
                    tools_list_changed=tools,
                    prompts_list_changed=prompts,
                    resources_list_changed=resources,
                ) as subscription:
                    scope.deadline = math.inf
                    acked = True
                    task_status.started()
                    # The events also reach the session's message handler (the session tees
                    # them); draining keeps the subscription's backlog from overflowing.
                    async for _event in subscription:
                        continue
            if scope.cancelled_caught:
                logger.warning("%s: no acknowledgment of the change subscription", name)
    except (SubscriptionLost, MCPError, TimeoutError) as exc:
        logger.warning("%s: change subscription ended: %s", name, exc)
    finally:
        if not acked:
            task_status.started()


async def _templates(session: UpstreamSession) -> list[types.ResourceTemplate]:
    """All resource templates; a server without the method (many have none) has no templates."""
    try:
        return await all_pages(session.list_resource_templates, "resource_templates")
    except MCPError as exc:
        if exc.code == METHOD_NOT_FOUND:
            return []
        raise
