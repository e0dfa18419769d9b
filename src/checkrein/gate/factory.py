"""`build_gate`: wire a `Gate` from a `Config` with defaults for every part not given.

Defaults, one line each (other packages replace theirs here):

    upstreams   `UpstreamPool` of `[[servers]]` (list_changed and lifecycle events reach the gate)
    audit       `open_audit_trail` (`[audit] dir`, default beside the config), `NullAuditTrail`
                only with `[audit] enabled = false`
    approver    `build_approver([approval])`, with elicitation through the frontend's sessions
    budget      `InProcessBudget([budgets])` when limits are configured (`SharedBudget` on `[state]`), else none
    flows       `InMemoryFlowStore` (`SharedFlowStore` on `[state]`)
    inspector   `DefaultInspector([policy.results])`
    telemetry   `build_telemetry([telemetry])`: the metrics registry, OTLP export when configured

Use the result as ``async with build_gate(config) as gate: ...``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from checkrein.audit.record import AuditTrail, CallRecord, LifecycleRecord
from checkrein.config import LAUNCH, WEBHOOK, Config
from checkrein.policy import ResultInspector
from checkrein.state import FallbackState, SharedState, build_state
from checkrein.telemetry import Telemetry, build_telemetry
from checkrein.upstream import UpstreamPool
from checkrein.upstream.base import Upstream
from checkrein.upstream.spawn import EarlyProcesses, resolve_python

from .flow_shared import SharedFlowStore
from .metering import watch_state
from .pipeline import Gate
from .relay import GateRelay
from .seams import Approver, Budget
from .shared import SharedBudget, SharedGrants

__all__ = ["NullAuditTrail", "build_gate", "default_audit", "resolve_python"]

class NullAuditTrail:
    """The trail used with `[audit] enabled = false` (and by commands that serve no calls):
    always writable, keeps nothing."""

    discards_records = True
    """Tells the gate it may skip building records nobody keeps (a per-call saving)."""

    async def record_call(self, record: CallRecord) -> None:
        del record

    async def record_lifecycle(self, record: LifecycleRecord) -> None:
        del record

    def writable(self) -> bool:
        return True

    async def aclose(self) -> None:
        return None


def default_audit(config: Config) -> AuditTrail:
    """The chained log under `Config.audit_dir` (secrets found by the policy's finder), or
    nothing with `[audit] enabled = false`.

    Raises ``AuditUnavailable`` / ``AuditError`` when the log cannot be opened (fail closed).
    """
    if not config.audit.enabled:
        return NullAuditTrail()
    from checkrein.audit import open_audit_trail
    from checkrein.audit.signing import prepare_signing_key
    from checkrein.policy.analyzers import find_secrets
    from checkrein.policy.analyzers.secrets import may_find

    # Signed by default: the first serve creates the key beside the config (never in the audit dir).
    key = prepare_signing_key(config.audit, config.base_dir, config.source)
    if key is not None and key.created:
        print(f"checkrein: created audit signing key {key.path} (mode 0600; keep it out of version control; "
              "`checkrein audit vkey` prints what a witness needs)", file=sys.stderr)
    return open_audit_trail(config.audit, config.base_dir, secret_finder=find_secrets,
                            secret_prefilter=lambda text: may_find(text, None), signing_key=key)


def build_gate(
    config: Config,
    *,
    upstreams: Sequence[Upstream] | Mapping[str, Upstream] | None = None,
    audit: AuditTrail | None = None,
    approver: Approver | None = None,
    budget: Budget | None = None,
    inspector: ResultInspector | None = None,
    telemetry: Telemetry | None = None,
    state: SharedState | None = None,
    early: EarlyProcesses | None = None,
) -> Gate:
    """A gate over ``upstreams`` (default: the configured servers). Not started: use ``async with``.

    ``state`` is where budgets and approval grants live when `[state] url` is set (default: built
    from the config; pass it to share one client with the HTTP frontend and to close it yourself).
    ``early`` holds stdio servers already started (`spawn_early`); their connections adopt them.

    Raises ``ConfigError`` (e.g. an unset variable in a server's launch fields or the webhook's
    headers, let through by a loader told they were unused) and the errors of `default_audit`.
    """
    from checkrein.gate.approval import SessionElicitor, build_approver
    from checkrein.gate.budget import InProcessBudget
    from checkrein.policy.inspect import DefaultInspector

    gate: Gate | None = None

    async def tools_changed(server: str) -> None:
        if gate is not None:
            await gate.refresh(server)

    async def upstream_event(event: str, fields: dict[str, Any]) -> None:
        if gate is not None:
            await gate.record_lifecycle(event, fields)

    if approver is None and config.approval.mode == "webhook":
        config.require_resolved(WEBHOOK, "the approval webhook")
    relay = GateRelay()
    if upstreams is None:
        config.require_resolved(LAUNCH, "starting the servers")
        servers = [resolve_python(s) for s in config.servers]
        upstreams = UpstreamPool(servers, on_tools_changed=tools_changed, on_event=upstream_event, relay=relay, early=early)
    if telemetry is None:
        telemetry = build_telemetry(config)  # before the audit opens: a config error leaks nothing

    async def state_fallback(op: str, why: str) -> None:
        # `[state] on_unavailable = "local"`: every use is audited (a budget then holds per replica).
        if gate is not None:
            await gate.record_lifecycle("state.fallback", {"op": op, "error": why})

    if state is None and config.state.url is not None:
        state = build_state(config)
    if isinstance(state, FallbackState) and state.on_fallback is None:
        state.on_fallback = state_fallback
    if state is not None:
        watch_state(state, telemetry)
    elicitor = SessionElicitor()
    if approver is None:
        grants = SharedGrants(state) if state is not None else None
        approver = build_approver(config.approval, clock=time.time, elicitor=elicitor, grants=grants)
    if budget is None and config.budgets.limits:
        if state is not None:
            budget = SharedBudget(config.budgets, state, separator=config.gateway.separator)
        else:
            budget = InProcessBudget(config.budgets, separator=config.gateway.separator)
    if inspector is None:
        inspector = DefaultInspector(config.policy.results)
    flows = SharedFlowStore(state, config.policy.flow) if state is not None else None
    gate = Gate(
        config,
        upstreams,
        audit if audit is not None else default_audit(config),
        approver=approver,
        budget=budget,
        inspector=inspector,
        telemetry=telemetry,
        flows=flows,
    )
    gate.elicitor = elicitor
    gate.relay = relay
    relay.bind(lambda: gate.state, inspector, gate.audit, gate.counters)
    return gate
