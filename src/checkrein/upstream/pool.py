"""``UpstreamPool``: every configured server, started together, each failing on its own."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any

import anyio
import mcp.types as types

from checkrein.config import ServerConfig
from checkrein.errors import UpstreamError, UpstreamUnavailable
from checkrein.upstream.backoff import Backoff
from checkrein.upstream.base import ToolsChanged, Upstream, UpstreamInfo
from checkrein.upstream.connection import LifecycleHook, McpUpstream
from checkrein.upstream.relay import RelayHooks
from checkrein.upstream.session import Era
from checkrein.upstream.spawn import EarlyProcesses

__all__ = ["UpstreamPool"]

logger = logging.getLogger("checkrein.upstream")


class UpstreamPool(Mapping[str, Upstream]):
    """The gateway's upstreams by server name (a read-only mapping of name -> ``Upstream``).

    ::

        async with UpstreamPool(config.servers, on_tools_changed=cb, on_event=hook) as pool:
            infos = await pool.start_all()          # never raises for a server that fails
            result = await pool["files"].call_tool("read", {"path": "a"}, timeout_s=30)

    Disabled servers (``enabled = false``) are left out. ``upstreams`` adds ready-made
    ``Upstream`` objects (e.g. ``checkrein.testing.MemoryUpstream``) next to the configured ones;
    names must be unique across both. Other keyword arguments go to every ``McpUpstream``.
    """

    def __init__(
        self,
        configs: Sequence[ServerConfig],
        *,
        on_tools_changed: ToolsChanged | None = None,
        on_event: LifecycleHook | None = None,
        upstreams: Sequence[Upstream] = (),
        era: Era = "auto",
        connect_timeout_s: float = 15.0,
        backoff: Backoff | None = None,
        relay: RelayHooks | None = None,
        early: EarlyProcesses | None = None,
    ) -> None:
        self._managed: dict[str, McpUpstream] = {}
        for cfg in configs:
            if not cfg.enabled:
                continue
            if cfg.name in self._managed:
                raise ValueError(f"duplicate upstream name {cfg.name!r}")
            self._managed[cfg.name] = McpUpstream(
                cfg,
                on_tools_changed=on_tools_changed,
                on_event=on_event,
                era=era,
                connect_timeout_s=connect_timeout_s,
                backoff=backoff,
                relay=relay,
                early=early,
            )
        self._all: dict[str, Upstream] = dict(self._managed)
        for up in upstreams:
            if up.name in self._all:
                raise ValueError(f"duplicate upstream name {up.name!r}")
            self._all[up.name] = up
        self._stack: AsyncExitStack | None = None

    # -- Mapping --------------------------------------------------------------------------

    def __getitem__(self, name: str) -> Upstream:
        return self._all[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)

    # -- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> UpstreamPool:
        async with AsyncExitStack() as stack:
            for up in self._managed.values():
                await stack.enter_async_context(up)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        return None

    async def start_all(self) -> dict[str, UpstreamInfo]:
        """Start every upstream concurrently; return each one's ``UpstreamInfo`` by name.

        A server that fails to start ends up ``state="failed"`` with the reason (and its stderr
        tail) in ``error``; the others are unaffected. Calls to a failed server retry its start,
        with backoff.
        """
        if self._stack is None and self._managed:
            raise RuntimeError("enter the pool (`async with UpstreamPool(...)`) before start_all()")

        async def start_one(up: Upstream) -> None:
            try:
                await up.start()
            except UpstreamError as exc:
                # Recorded in up.info (state "failed", error) and reported through on_event.
                logger.warning("upstream %s is not available: %s", up.name, exc)

        async with anyio.create_task_group() as tg:
            for up in self._all.values():
                tg.start_soon(start_one, up)
        return {name: up.info for name, up in self._all.items()}

    def infos(self) -> list[UpstreamInfo]:
        return [up.info for up in self._all.values()]

    def stats(self) -> dict[str, dict[str, int]]:
        """Per configured server: its restarts and degradation counters (``bad_messages``,
        ``hook_errors``, ``refresh_failures``), for ``checkrein stats`` and the audit."""
        return {name: {"restarts": up.info.restarts, **up.stats} for name, up in self._managed.items()}

    async def aclose(self) -> None:
        """Stop every upstream and its process; idempotent."""
        # Signal every upstream first (cheap), so their processes wind down in parallel while the
        # exit stack below waits for each in turn: a sequential stop costs one grace period per server.
        for up in self._all.values():
            await up.aclose()
        stack, self._stack = self._stack, None
        if stack is not None:
            # Not shielded here: each upstream's task group must exit in the scope it entered,
            # and the stdio transport shields its own process shutdown.
            await stack.aclose()

    # -- conveniences -------------------------------------------------------------------

    def require(self, name: str) -> Upstream:
        """The upstream called ``name``; raises ``UpstreamUnavailable`` naming the known ones."""
        try:
            return self._all[name]
        except KeyError:
            known = ", ".join(sorted(self._all)) or "none"
            raise UpstreamUnavailable(f"no upstream server named {name!r} (known: {known})") from None

    def timeout_for(self, name: str, default: float = 30.0) -> float:
        """The configured ``timeout_s`` of server ``name`` (``default`` for unmanaged upstreams)."""
        up = self._managed.get(name)
        return up.config.timeout_s if up is not None else default

    async def call_tool(
        self, server: str, tool: str, arguments: dict[str, Any], *, timeout_s: float | None = None
    ) -> types.CallToolResult:
        """Forward one call to ``server`` with its configured timeout unless ``timeout_s`` is given."""
        up = self.require(server)
        return await up.call_tool(tool, arguments, timeout_s=timeout_s or self.timeout_for(server))
