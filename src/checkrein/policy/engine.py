"""The policy engine: `compile_policy` once per config/catalog, `decide` per call (pure, no I/O).

`decide(policy, call, session, now)` checks, in this order, and the first step that denies wins:

1. bounds       arguments are an object within ``[policy.limits]`` (`checkrein.policy.bounds`), so no
                later step ever sees hostile sizes, depths or invalid text
2. governance   deny globs, server security level, tool roles, allow/default/template, unknown risk
                (`checkrein.policy.governance`)
3. schema       the tool's own ``inputSchema``, strict (`checkrein.policy.schema`)
4. constraints  ``[policy.tools."<tool>".args]`` (`checkrein.policy.constraints`)
5. analyzers    `scan_arguments` with the tool's `ScanContext`; each finding maps to deny / ask / off
                (per tool ``findings``, then ``[policy.analyzers]``, then the template; default deny)
6. approval     ``ask`` for high and critical risk, findings configured to ask, or ``approval = "ask"``;
                ``approval = "deny"`` turns an ask into a deny, ``approval = "auto"`` skips the risk ask

Any exception inside these steps (an analyzer's included) denies the call with rule and error code
``policy.error`` and is counted in `CompiledPolicy.counters` under a degradation name.

Error codes of denials: ``policy.arguments_rejected`` (bounds, schema, constraints),
``policy.denied`` (governance, ``approval = "deny"``), ``policy.finding`` (an analyzer finding),
``tool.not_found``, ``policy.error``. The only I/O `decide` can ever do is the DNS resolver handed to
`compile_policy`, and only when ``[policy.urls] resolve_dns = true``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from checkrein.canonical import digest
from checkrein.catalog.model import ToolDefinition
from checkrein.config import Config
from checkrein.config.policy import ANALYZERS, ArgConstraint, ArgKind
from checkrein.policy.analyzers.api import Resolver, ScanContext
from checkrein.policy.analyzers.verdicts import VerdictCache

from .bounds import argument_problem
from .call import Identity, SessionState, ToolCall
from .constraints import CompiledConstraint, SqlClassifier, compile_constraint, parse_pointer, pointer_of
from .decision import Decision, Finding, RiskLevel
from .governance import (
    GovernanceTables,
    ToolGovernance,
    govern_tool,
    identity_problem,
)
from .requests import decide_request
from .schema import CompiledSchema, compile_schema

__all__ = [
    "CompiledPolicy",
    "PolicyCounters",
    "Scanner",
    "ToolPlan",
    "compile_policy",
    "decide",
    "governance_decision",
    "may_see",
]

Scanner = Callable[[Mapping[str, Any], ScanContext], Sequence[Finding]]
"""`checkrein.policy.analyzers.scan_arguments`, or a stand-in (tests, benchmarks)."""

_ALL_ANALYZERS = frozenset(ANALYZERS)


class PolicyCounters:
    """Named counts of degradations (``policy.exception``, ``policy.analyzer_failed``, ...).

    One object per `CompiledPolicy`; thread-safe; read with `snapshot`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def increment(self, name: str) -> None:
        with self._lock:
            self._counts[name] = self._counts.get(name, 0) + 1

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)


@dataclass(frozen=True, slots=True)
class ToolPlan:
    """Everything `decide` needs about one exposed tool, computed at `compile_policy` time."""

    exposed: str
    definition: ToolDefinition
    governance: ToolGovernance
    schema: CompiledSchema
    constraints: tuple[CompiledConstraint, ...]
    scan: ScanContext | None
    """None when every analyzer is off for this tool."""
    secret_pointers: tuple[str, ...]
    read_only: bool


@dataclass(frozen=True)
class CompiledPolicy:
    config: Config
    tools: Mapping[str, ToolDefinition]
    """Exposed name -> pinned definition (only tools that are not quarantined)."""
    digest: str
    """Covers the policy section, identities, server levels and every tool's pinned digest."""
    plans: Mapping[str, ToolPlan] = field(default_factory=dict)
    counters: PolicyCounters = field(default_factory=PolicyCounters)
    scanner: Scanner | None = None
    classify_sql: SqlClassifier | None = None
    analyzers_missing: str | None = None
    """Why the analyzers could not be loaded (calls needing them are denied), or None."""
    tables: GovernanceTables | None = None
    """What governance needs from the config; resources, prompts and completions use it per name."""
    resolver: Resolver | None = None
    other_governance: dict[tuple[str, str], ToolGovernance] = field(default_factory=dict)
    """Memo of `govern_other` per (policy name, server): pure, bounded (see `policy.requests`)."""
    verdicts: VerdictCache = field(default_factory=VerdictCache)
    """Analyzer verdicts of this policy's tool calls by value (`checkrein.policy.analyzers.verdicts`):
    bounded, thread-safe, and new with every compiled policy."""

    def risk_of(self, exposed: str) -> RiskLevel:
        plan = self.plans.get(exposed)
        return plan.governance.risk if plan is not None else "unknown"

    def is_read_only(self, exposed: str) -> bool:
        """Whether the tool may be retried once on a transport error (readOnlyHint or config)."""
        plan = self.plans.get(exposed)
        return plan.read_only if plan is not None else False

    def plan(self, exposed: str) -> ToolPlan | None:
        return self.plans.get(exposed)


def _load_analyzers() -> tuple[Scanner | None, Callable[[Mapping[str, Any], str], Mapping[str, ArgKind]] | None, SqlClassifier | None, str | None]:
    # Imported here, not at module level: the analyzers are built alongside this engine, and a
    # missing analyzer must deny calls that need it rather than break every import of the policy.
    try:
        from checkrein.policy import analyzers as mod
    except ImportError as exc:  # pragma: no cover - the package itself always exists
        return None, None, None, f"checkrein.policy.analyzers cannot be imported: {exc}"
    scanner = getattr(mod, "scan_arguments", None)
    kinds = getattr(mod, "kinds_from_schema", None)
    sql = getattr(mod, "classify_sql", None)
    missing = None if scanner is not None else "checkrein.policy.analyzers.scan_arguments is not available"
    return scanner, kinds, sql, missing


def _policy_digest(config: Config, tools: Mapping[str, ToolDefinition]) -> str:
    return digest(
        {
            "policy": config.policy.model_dump(mode="json"),
            "identities": [{"name": i.name, "roles": list(i.roles)} for i in config.identities],
            "servers": [
                {"name": s.name, "level": s.security_level, "identities": list(s.identities)} for s in config.servers
            ],
            "tools": {name: d.digest for name, d in sorted(tools.items())},
        }
    )


def compile_policy(
    config: Config,
    tools: Mapping[str, ToolDefinition],
    *,
    scanner: Scanner | None = None,
    resolver: Resolver | None = None,
    schema_cache: MutableMapping[str, CompiledSchema] | None = None,
) -> CompiledPolicy:
    """Compile ``config`` against the pinned ``tools`` (exposed name -> definition).

    ``scanner`` replaces `scan_arguments` (tests, benchmarks); ``resolver`` is handed to the URL
    analyzer when ``[policy.urls] resolve_dns`` is on; ``schema_cache`` (digest of an inputSchema -> compiled
    schema) lets a reload reuse the schemas of unchanged tools. Never raises for a bad tool schema
    (calls to that tool are denied instead).
    """
    real_scanner, kinds_from_schema, classify_sql, missing = _load_analyzers()
    if scanner is not None:
        real_scanner, missing = scanner, None
    p = config.policy
    tables = GovernanceTables.build(config)
    cache: MutableMapping[str, CompiledSchema] = schema_cache if schema_cache is not None else {}
    kinds_cache: dict[str, dict[str, ArgKind]] = {}
    plans: dict[str, ToolPlan] = {}
    verdicts = VerdictCache()
    for exposed, definition in tools.items():
        g = govern_tool(tables, exposed, definition)
        # Keyed by the schema alone (not the whole definition): tools that differ only in name or
        # description share one compiled schema.
        try:
            key: str | None = digest(definition.input_schema)
        except (TypeError, ValueError):  # not JSON (NaN, odd types): compiled alone, and invalid
            key = None
        compiled = cache.get(key) if key is not None else None
        if compiled is None:
            compiled = compile_schema(definition.input_schema)
            if key is not None:
                cache[key] = compiled
        rule = g.rule
        arg_specs = rule.args if rule is not None else {}
        constraints = tuple(compile_constraint(k, c) for k, c in arg_specs.items())
        kinds: dict[str, ArgKind] = {}
        if kinds_from_schema is not None:
            # The tool's own words decide what an ambiguous `query` argument holds (SQL or a search).
            tool_text = " ".join(t for t in (definition.name, definition.title, definition.description) if t)
            kinds_key = f"{key}\n{tool_text}" if key is not None else None
            schema_kinds = kinds_cache.get(kinds_key) if kinds_key is not None else None
            if schema_kinds is None:
                schema_kinds = dict(kinds_from_schema(definition.input_schema, tool_text))
                if kinds_key is not None:
                    kinds_cache[kinds_key] = schema_kinds
            kinds.update(schema_kinds)
        for k, c in arg_specs.items():
            if c.kind is not None:
                kinds[pointer_of(parse_pointer(k))] = c.kind
        if p.template in ("production", "strict"):
            # These templates deny writes; a query argument is a write channel of its own, so
            # every query-kind argument without an explicit constraint must classify as read.
            configured = {pointer_of(parse_pointer(k)) for k in arg_specs}
            constraints += tuple(
                compile_constraint(ptr, ArgConstraint(read_only_sql=True))
                for ptr, kind in kinds.items()
                if kind == "query" and ptr not in configured and "*" not in ptr
            )
        enabled = frozenset(a for a in _ALL_ANALYZERS if g.finding_effects.get(a, "deny") != "off")
        roots = tuple(dict.fromkeys([*p.path_roots, *(r for c in arg_specs.values() for r in (c.roots or ()))]))
        hosts = tuple(dict.fromkeys([*p.urls.allowed_hosts, *(h for c in arg_specs.values() for h in (c.hosts or ()))]))
        scan = (
            ScanContext(
                kinds=kinds,
                path_roots=roots,
                allowed_hosts=hosts,
                commands=rule.commands if rule is not None else None,
                resolver=resolver if p.urls.resolve_dns else None,
                enabled=enabled,
                declared_keys=_declared_keys(definition.input_schema),
                verdicts=verdicts,
            )
            if enabled
            else None
        )
        read_only = rule.read_only if rule is not None and rule.read_only is not None else definition.read_only_hint
        plans[exposed] = ToolPlan(
            exposed=exposed,
            definition=definition,
            governance=g,
            schema=compiled,
            constraints=constraints,
            scan=scan,
            secret_pointers=tuple(ptr for ptr, kind in kinds.items() if kind == "secret"),
            read_only=read_only,
        )
    return CompiledPolicy(
        config=config,
        tools=dict(tools),
        digest=_policy_digest(config, tools),
        plans=plans,
        scanner=real_scanner,
        classify_sql=classify_sql,
        analyzers_missing=missing,
        tables=tables,
        resolver=resolver,
        verdicts=verdicts,
    )


def _error(policy: CompiledPolicy, degradation: str, reason: str, risk: RiskLevel = "unknown") -> Decision:
    policy.counters.increment(degradation)
    return Decision(
        "deny", "policy.error", (reason,), risk, error_code="policy.error", degraded=(degradation,)
    )


def _declared_keys(schema: Any) -> frozenset[str]:
    """The names under the schema's top-level ``properties`` (none for a schema without them)."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    return frozenset(k for k in props if isinstance(k, str)) if isinstance(props, Mapping) else frozenset()


def decide(policy: CompiledPolicy, call: ToolCall, session: SessionState, now: float) -> Decision:
    """Decide one call. Pure: the same inputs give the same Decision; never raises."""
    del session, now  # part of the contract for flow rules; no rule reads them yet
    try:
        d = _decide(policy, call)
        plan = policy.plans.get(call.exposed_name)
        if plan is not None and plan.secret_pointers and not set(plan.secret_pointers) <= set(d.redactions):
            # Arguments the config marks `kind = "secret"` are masked in every decision's audit.
            d = replace(d, redactions=tuple(dict.fromkeys((*d.redactions, *plan.secret_pointers))))
        return d
    except Exception as exc:  # noqa: BLE001 - fail closed: an internal error denies, visibly and counted
        return _error(policy, "policy.exception", f"the policy failed to decide ({type(exc).__name__}); the call is denied")


def _rejected(rule_id: str, reason: str, risk: RiskLevel, findings: tuple[Finding, ...] = ()) -> Decision:
    return Decision("deny", rule_id, (reason,), risk, findings, error_code="policy.arguments_rejected")


def _decide(policy: CompiledPolicy, call: ToolCall) -> Decision:
    p = policy.config.policy
    plan = policy.plans.get(call.exposed_name)
    risk: RiskLevel = plan.governance.risk if plan is not None else "unknown"

    problem = argument_problem(call.arguments, p.limits)
    if problem is not None:
        return _rejected("arguments.bounds", problem, risk, (Finding("bounds", "bounds", "", problem),))
    if call.kind != "tool":
        return decide_request(policy, call)
    if plan is None:
        return Decision(
            "deny",
            "tool.not_found",
            (f"{call.exposed_name} is not a known, pinned tool",),
            error_code="tool.not_found",
        )

    g = plan.governance
    if g.deny_glob is not None:
        return g.deny_glob
    who = identity_problem(g, call.identity)
    if who is not None:
        return who
    if g.base.effect != "allow":
        return g.base

    violation = plan.schema.check(call.arguments)
    if violation is not None:
        where = violation.pointer or "(arguments)"
        return _rejected(
            "arguments.schema",
            f"argument {where} {violation.message}",
            risk,
            (Finding("schema", "schema", violation.pointer, violation.message),),
        )
    for c in plan.constraints:
        bad = c.check(call.arguments, policy.classify_sql)
        if bad is not None:
            return _rejected(
                f"arguments.constraint:{c.pointer}",
                f"argument {c.pointer} {bad}",
                risk,
                (Finding("constraint", "constraint", c.pointer, bad),),
            )

    asks: list[str] = []
    ask_rule = ""
    findings: tuple[Finding, ...] = ()
    redactions: list[str] = list(plan.secret_pointers)
    scanned = False
    if plan.scan is not None:
        if policy.scanner is None:
            return _error(policy, "policy.analyzers_missing", policy.analyzers_missing or "analyzers are unavailable", risk)
        try:
            raw = tuple(policy.scanner(call.arguments, plan.scan))
        except Exception as exc:  # noqa: BLE001 - fail closed: a crashing analyzer denies
            return _error(policy, "policy.analyzer_failed", f"an argument analyzer failed ({type(exc).__name__}); the call is denied", risk)
        effects = g.finding_effects
        # Redactions come from every secret finding (even `off` or after a deny): the audit log
        # masks them whatever the effect.
        for f in raw:
            if f.analyzer == "secrets" and f.path not in redactions:
                redactions.append(f.path)
        findings = tuple(f for f in raw if effects.get(f.analyzer, "deny") != "off")
        scanned = "secrets" in plan.scan.enabled and not plan.secret_pointers and not any(f.analyzer == "scan" for f in raw)
        for f in findings:
            if effects.get(f.analyzer, "deny") == "deny":
                return Decision(
                    "deny",
                    f"finding:{f.analyzer}:{f.kind}",
                    (f"{f.analyzer} found {f.kind} at {f.path or '(arguments)'}" + (f": {f.message}" if f.message else ""),),
                    risk,
                    findings,
                    tuple(redactions),
                    error_code="policy.finding",
                    secrets_scanned=scanned,
                )
        for f in findings:
            if not ask_rule:
                ask_rule = f"finding:{f.analyzer}:{f.kind}"
            asks.append(f"{f.analyzer} found {f.kind} at {f.path or '(arguments)'}")

    approval = g.rule.approval if g.rule is not None else None
    if risk in ("high", "critical") and approval != "auto":
        asks.insert(0, f"{call.exposed_name} has {risk} risk")
        ask_rule = f"risk:{risk}"
    if approval == "ask":
        asks.insert(0, "the policy asks for approval before every call of this tool")
        ask_rule = "approval:ask"
    if asks:
        if approval == "deny":
            return Decision(
                "deny", "approval:deny", (*asks, "this tool is configured to deny instead of asking"), risk,
                findings, tuple(redactions), error_code="policy.denied", secrets_scanned=scanned,
            )
        return Decision("ask", ask_rule, tuple(asks), risk, findings, tuple(redactions), secrets_scanned=scanned)
    if redactions or findings or scanned:
        b = g.base  # `dataclasses.replace` of these three fields, spelled out (replace costs ~2 us)
        return Decision(b.effect, b.rule_id, b.reasons, b.risk, findings, tuple(redactions), b.error_code, b.degraded, scanned)
    return g.base


def governance_decision(policy: CompiledPolicy, identity: Identity, exposed: str) -> Decision:
    """What the policy does with any call of ``exposed`` by ``identity``, before looking at arguments:
    deny (unknown tool, deny glob, identity, template/default/unknown risk), ask (risk or
    ``approval = "ask"``, turned into deny by ``approval = "deny"``), or allow."""
    plan = policy.plans.get(exposed)
    if plan is None:
        return Decision("deny", "tool.not_found", (f"{exposed} is not a known, pinned tool",), error_code="tool.not_found")
    g = plan.governance
    if g.deny_glob is not None:
        return g.deny_glob
    who = identity_problem(g, identity)
    if who is not None:
        return who
    if g.base.effect != "allow":
        return g.base
    approval = g.rule.approval if g.rule is not None else None
    asks = approval == "ask" or (g.risk in ("high", "critical") and approval != "auto")
    if asks and approval == "deny":
        return Decision("deny", "approval:deny", (f"{exposed} needs approval and is configured to deny instead",), g.risk, error_code="policy.denied")
    if asks:
        rule = "approval:ask" if approval == "ask" else f"risk:{g.risk}"
        return Decision("ask", rule, (f"{exposed} needs approval ({rule})",), g.risk)
    return g.base


def may_see(policy: CompiledPolicy, identity: Identity, exposed: str) -> bool:
    """Whether ``identity`` may see ``exposed`` in tools/list: `governance_decision` is not deny.

    Argument checks are not considered (a visible tool can still deny a call for its arguments).
    """
    return governance_decision(policy, identity, exposed).effect != "deny"
