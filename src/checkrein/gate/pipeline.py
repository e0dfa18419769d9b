"""`Gate`: the one object the frontend talks to. It owns the upstreams, the pinned catalog, the
compiled policy, per-session state and the counters, and runs each call through the steps of
`checkrein.gate.steps` (audit, catalog, writable, policy, approval, budget, inspect, forward).

Lifecycle: ``async with gate:`` (enters the upstream pool if it is a context manager, starts every
upstream concurrently, builds the catalog, writes the lock on first use), then any number of
concurrent ``call_tool`` / ``read_resource`` / ``get_prompt``; leaving the block closes upstreams
and the audit trail. Upstreams that need no entering may use ``start()`` / ``aclose()`` directly.
"""

from __future__ import annotations

import fnmatch
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from pathlib import Path
from typing import Any, Literal, Protocol

import anyio
import mcp.types as types

from checkrein.audit.record import AuditTrail, LifecycleRecord
from checkrein.catalog import (
    Catalog,
    PinnedTool,
    build_catalog,
    exposed_resource_uri,
    read_lock,
    resource_policy_name,
    write_lock,
)
from checkrein.catalog.model import ToolDefinition
from checkrein.config import Config
from checkrein.errors import CheckreinError, ConfigError
from checkrein.policy import (
    CompiledPolicy,
    Identity,
    ResultInspector,
    SessionState,
    ToolCall,
    compile_policy,
    decide,
    may_see,
)
from checkrein.upstream.base import Upstream, UpstreamInfo

from .flow import FlowStore, InMemoryFlowStore
from .seams import Approver, Budget
from .session import SessionTable
from .steps import CallContext, CallNext, CallOutcome, CallRefused, Counters, build_chain, default_steps

__all__ = ["CatalogListener", "Counters", "Gate", "SessionRegistry"]

log = logging.getLogger("checkrein.gate")

CatalogListener = Callable[[], Awaitable[None]]
"""Called after the catalog changed (a refresh), so the frontend can send list_changed."""


class SessionRegistry(Protocol):
    """Where the frontend registers the client session of a call, so an approver can ask that
    client (elicitation). `checkrein.gate.approval.SessionElicitor` implements it."""

    def register(self, session_id: str, session: Any, related_request_id: Any = None) -> None: ...

    def unregister(self, session_id: str) -> None: ...


class Gate:
    """The pipeline in front of the upstreams. See the module docstring for the lifecycle."""

    def __init__(
        self,
        config: Config,
        upstreams: Sequence[Upstream] | Mapping[str, Upstream],
        audit: AuditTrail,
        *,
        approver: Approver | None = None,
        budget: Budget | None = None,
        inspector: ResultInspector | None = None,
        flows: FlowStore | None = None,
    ) -> None:
        self.config = config
        self._upstream_source = upstreams
        self.upstreams: dict[str, Upstream] = (
            dict(upstreams) if isinstance(upstreams, Mapping) else {u.name: u for u in upstreams}
        )
        self._stack: AsyncExitStack | None = None
        self._closed = False
        self.audit = audit
        self.audit_discards = bool(getattr(audit, "discards_records", False))
        """True for a trail that keeps nothing (no `[audit] dir`): the audit step skips the record."""
        self.counters = Counters()
        self.sessions = SessionTable()
        self.separator = config.gateway.separator
        self.failures: dict[str, str] = {}
        """Server name -> why it failed to start (stderr tail). Those servers are not served."""
        self.catalog: Catalog = build_catalog({}, separator=self.separator, pins={})
        self.policy: CompiledPolicy = compile_policy(config, {})
        self.elicitor: SessionRegistry | None = None
        """Set by `build_gate` when the approver can ask the client (elicitation)."""
        self.trust_on_first_use = True
        """Whether entering the gate writes the lock when there is none (`tools`/`pin` turn it off)."""
        self.lock_written = False
        """True when `start` wrote the lock (trust on first use)."""
        self._pins: dict[str, PinnedTool] | None = None
        self._lock_mtime: int | None = None
        self._tools: list[types.Tool] = []
        self._listeners: list[CatalogListener] = []
        self._timeouts = {s.name: s.timeout_s for s in config.servers}
        self._read_only_rules = {k: r.read_only for k, r in config.policy.tools.items() if r.read_only is not None}
        self.flows: FlowStore = flows if flows is not None else InMemoryFlowStore(config.policy.flow)
        """Session flow states (`checkrein.gate.flow`)."""
        steps, terminal = default_steps(self, approver=approver, budget=budget, inspector=inspector)
        self._run: CallNext = build_chain(steps, terminal)

    # -- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> Gate:
        """Enter the upstreams (a pool that owns task groups must be entered in this task), start."""
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            if isinstance(self._upstream_source, AbstractAsyncContextManager):
                await stack.enter_async_context(self._upstream_source)
            await self.start(trust_on_first_use=self.trust_on_first_use)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def start(self, *, trust_on_first_use: bool = True) -> None:
        """Start every upstream concurrently (a failure is recorded, the rest are served), then
        build the catalog. Without a lock file and with ``trust_on_first_use``, write one.

        Raises ``LockFileError`` when the lock exists but is invalid.
        """
        async with anyio.create_task_group() as tg:
            for up in self.upstreams.values():
                tg.start_soon(self._start_one, up)
        await self.rebuild(trust_on_first_use=trust_on_first_use)
        await self.record_lifecycle(
            "gateway.start",
            {
                "servers": sorted(self.ready_servers()),
                "failed": dict(self.failures),
                "tools": len(self.catalog),
                "quarantined": [e.exposed for e in self.catalog.quarantined],
                "lock_written": self.lock_written,
            },
        )

    async def _start_one(self, up: Upstream) -> None:
        try:
            await up.start()
        except Exception as exc:  # one server failing to start must not stop the others
            self.failures[up.name] = str(exc) or type(exc).__name__
            log.warning("server %r failed to start: %s", up.name, self.failures[up.name])
            log.debug("start failure of %r", up.name, exc_info=True)

    async def retry_failed_starts(self) -> list[str]:
        """Try once more to start every server that failed to start; rebuild the catalog for each
        that comes up (its tools not yet in the lock arrive quarantined, as any new tool does).
        Returns the names that came up. Never raises."""
        up_now: list[str] = []
        for name in sorted(self.failures):
            up = self.upstreams.get(name)
            if up is None or self._closed:
                continue
            try:
                await up.start()
            except Exception as exc:  # noqa: BLE001 - still down: keep serving the others, keep the reason fresh
                self.failures[name] = str(exc) or type(exc).__name__
                continue
            await self.refresh(name)
            up_now.append(name)
        return up_now

    async def aclose(self) -> None:
        """Close the upstreams, then the audit trail (after recording the stop). Idempotent."""
        if self._closed:
            return
        self._closed = True
        await self.record_lifecycle("gateway.stop", {"counters": self.counters.as_dict()})
        stack, self._stack = self._stack, None
        try:
            if stack is not None and isinstance(self._upstream_source, AbstractAsyncContextManager):
                await stack.aclose()
            else:
                for up in self.upstreams.values():
                    try:
                        await up.aclose()
                    except Exception:  # closing is best effort; report and go on with the rest
                        log.exception("closing server %r failed", up.name)
                if stack is not None:
                    await stack.aclose()
        finally:
            try:
                await self.audit.aclose()
            except Exception:  # the trail reports its own failures; closing must finish
                log.exception("closing the audit trail failed")

    async def rebuild(self, *, trust_on_first_use: bool = False) -> Catalog:
        """Re-read every ready upstream's (cached) tool list and the lock; rebuild catalog and policy."""
        tools: dict[str, list[ToolDefinition]] = {}
        for name in sorted(self.ready_servers()):
            try:
                tools[name] = list(await self.upstreams[name].tools())
            except Exception as exc:  # a server whose list fails is left out, not fatal
                log.warning("listing tools of %r failed: %s", name, exc, exc_info=True)
        lock_path = self.config.lock_path
        self._lock_mtime = _mtime(lock_path)
        pins = read_lock(lock_path)
        if pins is None and trust_on_first_use:
            catalog = build_catalog(tools, separator=self.separator, pins=None)
            pins = {e.exposed: PinnedTool(e.digest, e.definition.pinned_fields()) for e in catalog}
            write_lock(lock_path, pins)
            self._lock_mtime = _mtime(lock_path)
            self.lock_written = True
            log.info("wrote %s with %d tool(s) (trust on first use)", lock_path, len(pins))
        if pins is None:
            # The lock vanished after start: keep judging drift against what was pinned then.
            # (No lock and no pins yet, without trust on first use: report everything as ok.)
            pins = self._pins
        self._pins = pins
        catalog = build_catalog(tools, separator=self.separator, pins=pins)
        policy = compile_policy(self.config, catalog.ok_tools)
        self.catalog, self.policy = catalog, policy
        self._tools = [_mcp_tool(e.exposed, e.definition) for e in catalog if e.status == "ok"]
        for skipped in catalog.skipped:
            log.warning("not exposing %s tool %r: %s", skipped.server, skipped.tool, skipped.reason)
        for q in catalog.quarantined:
            log.warning("quarantined %s: %s", q.exposed, q.drift)
        return catalog

    async def refresh(self, server: str) -> None:
        """Rebuild after ``server`` reported a changed tool list; tell listeners. Never raises."""
        before = {e.exposed: e.digest for e in self.catalog if e.status == "ok"}
        up = self.upstreams.get(server)
        if server in self.failures and up is not None and up.info.state == "ready":
            del self.failures[server]  # it came up after all (a retried start)
        try:
            catalog = await self.rebuild()
        except CheckreinError as exc:
            log.error("refresh after %r changed its tools failed, keeping the old catalog: %s", server, exc)
            return
        await self.record_lifecycle(
            "catalog.refresh",
            {"server": server, "tools": len(catalog), "quarantined": [e.exposed for e in catalog.quarantined]},
        )
        after = {e.exposed: e.digest for e in catalog if e.status == "ok"}
        if after != before:
            for listener in list(self._listeners):
                try:
                    await listener()
                except Exception:  # a client that went away must not break the refresh
                    log.exception("catalog listener failed")

    async def apply_config(self, config: Config) -> None:
        """Put a re-read config in force without a restart: `[policy]` (rules, risks, read-only
        retries, result settings seen by the policy), approval timeout, audit failure mode. Calls in
        flight finish under the old policy.

        Raises ``ConfigError`` for changes that need a restart (servers, separator, lock file,
        approval, budgets, audit location, identities) and whatever ``compile_policy`` raises; the
        old config then stays in force.
        """
        old = self.config
        restart = [
            name
            for name, before, after in (
                ("[[servers]]", old.servers, config.servers),
                ("gateway.separator", old.gateway.separator, config.gateway.separator),
                ("gateway.lock_file", old.gateway.lock_file, config.gateway.lock_file),
                ("gateway.token", old.gateway.token, config.gateway.token),
                ("[[identities]]", old.identities, config.identities),
                ("[approval]", old.approval, config.approval),
                ("[budgets]", old.budgets, config.budgets),
                ("audit.dir", old.audit.dir, config.audit.dir),
            )
            if before != after
        ]
        if restart:
            raise ConfigError(f"{', '.join(restart)} changed: restart checkrein to apply", file=config.source)
        policy = compile_policy(config, self.catalog.ok_tools)
        old_digest = self.policy.digest
        self.config, self.policy = config, policy
        self._read_only_rules = {k: r.read_only for k, r in config.policy.tools.items() if r.read_only is not None}
        await self.record_lifecycle("policy.reload", {"old_digest": old_digest, "new_digest": policy.digest})
        for listener in list(self._listeners):
            try:
                await listener()
            except Exception:  # a client that went away must not break the reload
                log.exception("catalog listener failed")

    async def reload_lock_if_changed(self) -> bool:
        """Rebuild when `checkrein pin` (or anyone) rewrote the lock since the last build.

        Called on listings and on calls to quarantined tools, so a reviewed tool comes back
        without a restart. Costs one ``stat`` when nothing changed.
        """
        if _mtime(self.config.lock_path) == self._lock_mtime:
            return False
        await self.refresh("checkrein.lock")
        return True

    def add_catalog_listener(self, listener: CatalogListener) -> Callable[[], None]:
        """Register ``listener``; returns a function that removes it."""
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    async def record_lifecycle(self, event: str, fields: dict[str, Any]) -> None:
        """Hand a lifecycle event to the audit trail; a failure is counted and logged, never raised."""
        try:
            await self.audit.record_lifecycle(LifecycleRecord(event, fields))
        except Exception:  # lifecycle events are informative; a failure is counted, not fatal
            self.counters.audit_errors += 1
            log.exception("audit could not record %s", event)

    # -- the call path -----------------------------------------------------------------------

    async def run(self, call: ToolCall) -> CallOutcome:
        """Run ``call`` through every step. Never raises (except cancellation)."""
        return await self._run(CallContext(call, time.perf_counter()))

    async def call_tool(self, call: ToolCall) -> types.CallToolResult:
        """A tools/call. Refusals and errors come back as ``isError`` results with the reason."""
        out = await self.run(call)
        if isinstance(out.result, types.CallToolResult):
            return out.result
        return types.CallToolResult(content=[types.TextContent(type="text", text=out.message)], is_error=True)

    async def read_resource(self, call: ToolCall) -> types.ReadResourceResult:
        """A resources/read of an exposed URI (``call.exposed_name``). Raises ``CallRefused``."""
        out = await self.run(call)
        if isinstance(out.result, types.ReadResourceResult):
            return out.result
        raise CallRefused(out.message, code=out.error_code or "gate.error")

    async def get_prompt(self, call: ToolCall) -> types.GetPromptResult:
        """A prompts/get of an exposed prompt name. Raises ``CallRefused``."""
        out = await self.run(call)
        if isinstance(out.result, types.GetPromptResult):
            return out.result
        raise CallRefused(out.message, code=out.error_code or "gate.error")

    # -- listings (not on the call path) -----------------------------------------------------

    def _visible(self, identity: Identity, name: str, kind: Literal["tool", "resource", "prompt"] = "tool") -> bool:
        try:
            if kind == "tool":
                return may_see(self.policy, identity, name)
            # `may_see` knows tools only; a resource or prompt is visible when a bare read would pass.
            probe = ToolCall(identity, "", "", "", name, {}, kind=kind)
            return decide(self.policy, probe, SessionState(""), 0.0).effect != "deny"
        except Exception:  # fail closed: a tool whose visibility cannot be decided is hidden
            self.counters.policy_errors += 1
            log.exception("may_see raised on %s", name)
            return False

    def tools_for(self, identity: Identity) -> list[types.Tool]:
        """The tools ``identity`` may see: not quarantined, and not denied by the policy."""
        return [t for t in self._tools if self._visible(identity, t.name)]

    async def resources_for(self, identity: Identity) -> list[types.Resource]:
        out: list[types.Resource] = []
        for name in sorted(self.ready_servers()):
            try:
                listed = await self.upstreams[name].list_resources()
            except Exception as exc:  # one server's failure hides its resources, not everyone's
                log.warning("listing resources of %r failed: %s", name, exc, exc_info=True)
                continue
            for r in listed:
                if self._visible(identity, resource_policy_name(name, r.uri, self.separator), "resource"):
                    out.append(r.model_copy(update={"uri": exposed_resource_uri(name, r.uri)}))
        return out

    async def prompts_for(self, identity: Identity) -> list[types.Prompt]:
        out: list[types.Prompt] = []
        for name in sorted(self.ready_servers()):
            try:
                listed = await self.upstreams[name].list_prompts()
            except Exception as exc:  # one server's failure hides its prompts, not everyone's
                log.warning("listing prompts of %r failed: %s", name, exc, exc_info=True)
                continue
            for p in listed:
                exposed = f"{name}{self.separator}{p.name}"
                if self._visible(identity, exposed, "prompt"):
                    out.append(p.model_copy(update={"name": exposed}))
        return out

    # -- facts the steps ask for -------------------------------------------------------------

    def ready_servers(self) -> set[str]:
        return {n for n in self.upstreams if n not in self.failures}

    def upstream_infos(self) -> list[UpstreamInfo]:
        return [u.info for u in self.upstreams.values()]

    def unavailable_reason(self, name: str) -> str | None:
        """Why ``<server><sep>...`` cannot be served when its server failed; else ``None``."""
        server = name.partition(self.separator)[0]
        if server in self.failures:
            return f"server {server!r} is not available (it failed to start: {self.failures[server]})"
        return None

    def timeout_of(self, server: str) -> float:
        return self._timeouts.get(server, 30.0)

    def is_read_only(self, ctx: CallContext) -> bool:
        """Read-only (retry-safe) per the config rule for the tool, else its readOnlyHint."""
        if ctx.call.kind != "tool":
            return True
        name = ctx.call.exposed_name
        rule = self._read_only_rules.get(name)
        if rule is None:
            for pattern, value in self._read_only_rules.items():
                if fnmatch.fnmatchcase(name, pattern):
                    rule = value
                    break
        if rule is not None:
            return rule
        return ctx.entry is not None and ctx.entry.definition.read_only_hint


def _mcp_tool(exposed: str, definition: ToolDefinition) -> types.Tool:
    return types.Tool.model_validate({**definition.pinned_fields(), "name": exposed})


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None
