"""`Gate`: the one object the frontends talk to.

It owns the upstreams, the counters and the per-session table, and keeps the current `GateState`
(catalog, compiled policy, naming, upstream handles): an immutable snapshot, replaced whole when a
tool list, the lock or the policy changes. Every request, of every kind, runs through the same chain
of steps (`checkrein.gate.steps`, ending in `checkrein.gate.forward`) with the snapshot current when
it arrived.

Lifecycle: ``async with gate:`` (enters the upstream pool if it is a context manager, starts every
upstream concurrently, builds the catalog, pins by trust on first use), then any number of
concurrent requests; leaving the block closes upstreams and the audit trail. Upstreams that need no
entering may use ``start()`` / ``aclose()`` directly.

Steps: ``Gate(..., steps=...)`` takes the list of steps to run, or a function that receives the
default list (`default_steps`) and returns the one to use, so a test or an operator can insert one::

    Gate(config, upstreams, audit, steps=lambda s: [*s[:3], MyStep(), *s[3:]])
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from types import MappingProxyType
from typing import Any, Protocol

import mcp.types as types

from checkrein.audit.record import AuditTrail, LifecycleRecord
from checkrein.catalog import Catalog, Names, build_catalog
from checkrein.catalog.model import ToolDefinition
from checkrein.config import Config
from checkrein.errors import CheckreinError, ConfigError
from checkrein.policy import CompiledPolicy, Identity, ResultInspector, ToolCall, compile_policy
from checkrein.policy.analyzers.descriptions import review_tool
from checkrein.telemetry import Telemetry

from . import metering
from .approval import BoundApprover
from .approval_state import RequestSealer, accept_input, input_required
from .chain import CallContext, CallNext, CallOutcome, CallRefused, Step, ToolResultJson, build_chain
from .counters import Counters
from .flow import FlowStep, FlowStore, InMemoryFlowStore
from .forward import ForwardStep
from .listing import Listings
from .pins import Pins
from .relay import GateRelay
from .seams import ApprovalRequest, Approver, Budget
from .session import SessionTable
from .state import GateState
from .steps import ApprovalStep, AuditStep, BudgetStep, CatalogStep, InspectStep, PolicyStep, WritableStep

__all__ = ["CatalogListener", "Counters", "Gate", "SessionRegistry", "StepsArg", "default_steps"]

log = logging.getLogger("checkrein.gate")

CatalogListener = Callable[[], Awaitable[None]]
"""Called after the catalog changed (a refresh), so the frontend can send list_changed."""
StepsArg = Sequence[Step] | Callable[[list[Step]], Sequence[Step]] | None


class SessionRegistry(Protocol):
    """Where the frontend registers the client session and request id of each call in progress,
    so an approver can ask that client (elicitation) as part of that request.
    `checkrein.gate.approval.SessionElicitor` implements it."""

    def register(self, call: ToolCall, session: Any, related_request_id: Any = None) -> None: ...

    def unregister(self, call: ToolCall) -> None: ...


def default_steps(
    *,
    audit: AuditTrail,
    counters: Counters,
    sessions: SessionTable,
    approver: Approver | None,
    budget: Budget | None,
    inspector: ResultInspector | None,
    reload_lock: Callable[[], Awaitable[GateState | None]],
    unavailable: Callable[[str, str], str | None],
    discards: bool = False,
    current: Callable[[], GateState] | None = None,
    flows: FlowStore | None = None,
) -> list[Step]:
    """The DESIGN.md order, outermost first (the forward step is the terminal, not in the list)."""
    return [
        AuditStep(audit, counters, discards),
        CatalogStep(counters, reload_lock, unavailable, current),
        WritableStep(audit, counters),
        PolicyStep(counters, sessions),
        BudgetStep(budget, counters),
        FlowStep(flows if flows is not None else InMemoryFlowStore(), counters),
        ApprovalStep(approver, counters),
        InspectStep(inspector, counters, sessions),
    ]


class Gate:
    """The pipeline in front of the upstreams. See the module docstring for the lifecycle."""

    def __init__(
        self,
        config: Config,
        upstreams: Sequence[Any] | Mapping[str, Any],
        audit: AuditTrail,
        *,
        approver: Approver | None = None,
        budget: Budget | None = None,
        inspector: ResultInspector | None = None,
        steps: StepsArg = None,
        flows: FlowStore | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        self._upstream_source = upstreams
        self.upstreams: dict[str, Any] = (
            dict(upstreams) if isinstance(upstreams, Mapping) else {u.name: u for u in upstreams}
        )
        self._stack: AsyncExitStack | None = None
        self._closed = False
        self.audit = audit
        self.audit_discards = bool(getattr(audit, "discards_records", False))
        """True for a trail that keeps nothing (auditing off): the audit step skips the record."""
        self.counters = Counters()
        self.sessions = SessionTable()
        self.budget = budget
        self.failures: dict[str, str] = {}
        """Server name -> why it failed to start (stderr tail). Those servers are not served."""
        self.elicitor: SessionRegistry | None = None
        """Set by `build_gate` when the approver can ask the client (elicitation)."""
        self.relay: GateRelay | None = None
        """Set by `build_gate`: what upstreams send back on their own (`checkrein.gate.relay`)."""
        self.trust_on_first_use = True
        """Whether entering the gate pins by trust on first use (`tools`/`pin` turn it off)."""
        self._pins = Pins()
        self._listeners: list[CatalogListener] = []
        self._schema_cache: dict[str, Any] = {}
        names = Names.of(((s.name, s.exposed_prefix) for s in config.servers), config.gateway.separator)
        empty = build_catalog({}, separator=names.separator, pins={}, names=names)
        self._state = self._make_state(config, empty, names)
        self.listings = Listings(self.counters, self.ready_servers)
        if approver is not None and not isinstance(approver, BoundApprover):
            # Every approver answers through the one grant cache (identity, session, arguments, policy).
            approver = BoundApprover(
                approver, ttl_s=config.approval.ttl_s, timeout_s=config.approval.timeout_s, clock=time.time
            )
        self.approver = approver
        self.sealer = RequestSealer.from_secret(config.approval.state_key)
        """Seals the state of 2026-era approval rounds (`gate.approval_state`)."""
        self.flows: FlowStore = flows if flows is not None else InMemoryFlowStore(config.policy.flow)
        """Session flow states (`checkrein.gate.flow`)."""
        defaults = default_steps(
            audit=audit,
            counters=self.counters,
            sessions=self.sessions,
            approver=approver,
            budget=budget,
            inspector=inspector,
            reload_lock=self._reload_lock_state,
            unavailable=self._unavailable,
            discards=self.audit_discards,
            current=lambda: self._state,
            flows=self.flows,
        )
        chosen = steps(defaults) if callable(steps) else (defaults if steps is None else list(steps))
        self.steps: tuple[Step, ...] = tuple(chosen)
        self.telemetry = telemetry or Telemetry()
        timed, terminal = metering.instrument(
            self.steps, ForwardStep(self.counters, self.sessions, self.listings), self.telemetry
        )
        metering.watch(self, self.telemetry)
        self._run: CallNext = build_chain(timed, terminal)

    # -- the snapshot ------------------------------------------------------------------------

    @property
    def state(self) -> GateState:
        return self._state

    @property
    def config(self) -> Config:
        return self._state.config

    @property
    def catalog(self) -> Catalog:
        return self._state.catalog

    @property
    def policy(self) -> CompiledPolicy:
        return self._state.policy

    @property
    def names(self) -> Names:
        return self._state.names

    @property
    def separator(self) -> str:
        return self._state.names.separator

    @property
    def lock_written(self) -> bool:
        """True when the gate wrote the lock (trust on first use)."""
        return self._pins.lock_written

    def _make_state(self, config: Config, catalog: Catalog, names: Names | None = None) -> GateState:
        names = names if names is not None else self._state.names
        policy = compile_policy(config, catalog.ok_tools, schema_cache=self._schema_cache)
        tools = tuple(_mcp_tool(e.exposed, e.definition) for e in catalog if e.status == "ok")
        return GateState(
            config=config,
            catalog=catalog,
            policy=policy,
            names=names,
            upstreams=MappingProxyType(self.upstreams),
            tools=tools,
            timeouts=MappingProxyType({s.name: s.timeout_s for s in config.servers}),
        )

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
        build the catalog; pin by trust on first use when allowed (see `rebuild`).

        Raises ``LockFileError`` when the lock exists but is invalid.
        """
        import anyio

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

    async def _start_one(self, up: Any) -> None:
        try:
            await up.start()
        except Exception as exc:  # one server failing to start must not stop the others
            self.failures[up.name] = str(exc) or type(exc).__name__
            log.warning("server %r failed to start: %s", up.name, self.failures[up.name])
            log.debug("start failure of %r", up.name, exc_info=True)

    async def retry_failed_starts(self) -> list[str]:
        """Try once more to start every server that failed to start; rebuild the catalog for each
        that comes up (a server the lock has never pinned is pinned by trust on first use, like
        at the very first start). Returns the names that came up. Never raises."""
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
        await self.record_lifecycle(
            "gateway.stop", {"counters": self.counters.as_dict(), "metrics": self.telemetry.metrics.snapshot()}
        )
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
            import anyio.to_thread

            await anyio.to_thread.run_sync(self.telemetry.close)

    async def rebuild(self, *, trust_on_first_use: bool = False) -> Catalog:
        """Re-read every ready upstream's (cached) tool list and the lock; build a new state.

        Trust on first use, per server (`checkrein.gate.pins`): without a lock (and with
        ``trust_on_first_use``) every tool is pinned and the lock written; with a lock, a ready
        server none of whose tools the lock holds (it was down at the first pin, or was added
        since) has its tools pinned the same way the first time it is seen, so it is served
        instead of quarantined. Every other tool that is new or changed is quarantined until
        `checkrein pin`. Raises ``LockFileError`` when the lock exists but is invalid.
        """
        tools: dict[str, list[ToolDefinition]] = {}
        for name in sorted(self.ready_servers()):
            try:
                tools[name] = list(await self.upstreams[name].tools())
            except Exception as exc:  # a server whose list fails is left out, not fatal
                log.warning("listing tools of %r failed: %s", name, exc, exc_info=True)
        names = self._state.names
        pins = await self._pins.settle(
            self.config.lock_path,
            tools,
            names,
            trust_on_first_use=trust_on_first_use,
            trust_new_servers=self.trust_on_first_use,
            record_lifecycle=self.record_lifecycle,
        )
        flagged_before = {(e.exposed, e.digest) for e in self.catalog.flagged}
        catalog = build_catalog(tools, separator=names.separator, pins=pins, names=names, review=review_tool)
        self._state = self._make_state(self.config, catalog)
        for e in catalog.flagged:  # each flagged definition is audited once
            if (e.exposed, e.digest) not in flagged_before:
                await self.record_lifecycle("tool.flagged", {"tool": e.exposed, "server": e.server, "digest": e.digest, "reason": e.flagged})
        for skipped in catalog.skipped:
            log.warning("not exposing %s tool %r: %s", skipped.server, skipped.tool, skipped.reason)
        for q in catalog.quarantined:
            log.warning("quarantined %s: %s", q.exposed, q.reason)
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
            await self._tell_listeners()

    async def _tell_listeners(self) -> None:
        for listener in list(self._listeners):
            try:
                await listener()
            except Exception:  # a client that went away must not break the refresh
                log.exception("catalog listener failed")

    async def apply_config(self, config: Config) -> None:
        """Put a re-read config in force without a restart: `[policy]` (rules, risks, read-only
        retries, result settings seen by the policy), approval timeout, audit failure mode. Calls in
        flight finish under the old policy (they hold the old `GateState`).

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
                ("audit.enabled", old.audit.enabled, config.audit.enabled),
            )
            if before != after
        ]
        if restart:
            raise ConfigError(f"{', '.join(restart)} changed: restart checkrein to apply", file=config.source)
        old_digest = self.policy.digest
        self._state = self._make_state(config, self.catalog)
        await self.record_lifecycle("policy.reload", {"old_digest": old_digest, "new_digest": self.policy.digest})
        await self._tell_listeners()

    async def reload_lock_if_changed(self) -> bool:
        """Rebuild when `checkrein pin` (or anyone) rewrote the lock since the last build.

        Called on listings and on calls to quarantined tools, so a reviewed tool comes back
        without a restart. Costs one ``stat`` when nothing changed.
        """
        if not self._pins.lock_changed(self.config.lock_path):
            return False
        await self.refresh("checkrein.lock")
        return True

    async def _reload_lock_state(self) -> GateState | None:
        return self._state if await self.reload_lock_if_changed() else None

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

    # -- requests ----------------------------------------------------------------------------

    async def run(self, call: ToolCall) -> CallOutcome:
        """Run ``call`` (any kind) through every step. Never raises (except cancellation)."""
        return await self._run(CallContext(call, time.perf_counter(), self._state))

    async def call_tool(self, call: ToolCall) -> types.CallToolResult:
        """A tools/call. Refusals and errors come back as ``isError`` results with the reason."""
        return self.result_of(await self.run(call))

    def result_of(self, out: CallOutcome) -> types.CallToolResult:
        """The tools/call answer for an outcome: the result, or an ``isError`` result with the reason."""
        if isinstance(out.result, types.CallToolResult):
            return out.result
        if isinstance(out.result, ToolResultJson):
            return types.CallToolResult.model_validate(out.result.json, by_name=False)
        return types.CallToolResult(content=[types.TextContent(type="text", text=out.message)], is_error=True)

    def input_required(self, pending: ApprovalRequest) -> types.InputRequiredResult:
        """The 2026-era answer to a call that needs approval (`approval_state.input_required`)."""
        return input_required(self.sealer, pending, self.config.approval.timeout_s)

    async def accept_input(self, call: ToolCall, state: str | None, responses: Mapping[str, Any] | None) -> str:
        """Take a 2026-era client's answer to an approval form (`approval_state.accept_input`):
        ``granted``, ``declined``, or why the answer was ignored. Never raises."""
        return await accept_input(self.approver, self.sealer, call, state, responses, self.policy.digest)

    def result_json(self, out: CallOutcome) -> dict[str, Any]:
        """`result_of` as JSON (wire names, ``resultType`` set: 2026-era results need it, the SDK's
        serializer drops it for handshake-era clients); no SDK model is built when the upstream
        relayed JSON. Never mutate what it returns."""
        result = out.result
        if isinstance(result, ToolResultJson):
            json = result.json
            return json if "resultType" in json else {**json, "resultType": "complete"}
        if isinstance(result, types.CallToolResult):
            return result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return {"content": [{"type": "text", "text": out.message}], "isError": True, "resultType": "complete"}

    async def request(self, call: ToolCall) -> Any:
        """Any request other than tools/call: its result. Raises ``CallRefused`` (``rpc_code`` set
        when the upstream's own JSON-RPC error is what refused it)."""
        out = await self.run(call)
        if out.result is not None:
            return out.result
        raise CallRefused(out.message, code=out.error_code or "gate.error", rpc_code=out.rpc_code)

    async def read_resource(self, call: ToolCall) -> types.ReadResourceResult:
        """A resources/read of an exposed URI (``call.exposed_name``). Raises ``CallRefused``."""
        result = await self.request(call)
        assert isinstance(result, types.ReadResourceResult)
        return result

    async def get_prompt(self, call: ToolCall) -> types.GetPromptResult:
        """A prompts/get of an exposed prompt name. Raises ``CallRefused``."""
        result = await self.request(call)
        assert isinstance(result, types.GetPromptResult)
        return result

    async def set_logging_level(self, level: str) -> None:
        """A client's ``logging/setLevel``, passed to every ready upstream that logs. Never raises."""
        for name in sorted(self.ready_servers()):
            up = self.upstreams[name]
            setter = getattr(up, "set_logging_level", None)
            if setter is None:
                continue
            try:
                await setter(level, timeout_s=self.timeout_of(name))
            except Exception as exc:  # noqa: BLE001 - one server that cannot set its level must not fail the client
                log.warning("setting the log level of %r failed: %s", name, exc)

    async def roots_changed(self) -> None:
        """A client's ``notifications/roots/list_changed``, passed to the upstreams allowed roots."""
        for name in sorted(self.ready_servers()):
            up = self.upstreams[name]
            notify = getattr(up, "roots_changed", None)
            if notify is not None and (self.relay is None or self.relay.wants(name, "roots")):
                try:
                    await notify()
                except Exception as exc:  # noqa: BLE001 - informative; the upstream asks again when it needs roots
                    log.debug("telling %r that roots changed failed: %s", name, exc)

    # -- listings without a request (CLI, tests) ---------------------------------------------

    def tools_for(self, identity: Identity) -> list[types.Tool]:
        """The tools ``identity`` may see: not quarantined, and not denied by the policy."""
        state = self._state
        return [t for t in state.tools if self.listings._sees(state, identity, t.name)]

    async def resources_for(self, identity: Identity) -> list[types.Resource]:
        return await self.listings.resources(self._state, identity)

    async def prompts_for(self, identity: Identity) -> list[types.Prompt]:
        return await self.listings.prompts(self._state, identity)

    # -- facts the steps ask for -------------------------------------------------------------

    def ready_servers(self) -> set[str]:
        return {n for n in self.upstreams if n not in self.failures}

    def upstream_infos(self) -> list[Any]:
        return [u.info for u in self.upstreams.values()]

    def _unavailable(self, server: str, name: str) -> str | None:
        if server in self.failures:
            return f"server {server!r} is not available (it failed to start: {self.failures[server]})"
        return None

    def unavailable_reason(self, name: str) -> str | None:
        """Why ``name`` (an exposed tool or prompt name) cannot be served when its server failed."""
        split = self.names.split_name(name)
        return self._unavailable(split[0], name) if split is not None else None

    def timeout_of(self, server: str) -> float:
        return self._state.timeout_of(server)


def _mcp_tool(exposed: str, definition: ToolDefinition) -> types.Tool:
    return types.Tool.model_validate({**definition.pinned_fields(), "name": exposed})
