"""Tool governance, compiled once per tool: which rule applies, who may call, what risk it has.

Everything here runs at `compile_policy` time; `decide` only reads the resulting `ToolPlan`.

Rules, in the order a call meets them (the first that denies wins):

1. ``[policy] deny`` globs (``fnmatch`` syntax, case-sensitive, over the exposed name): deny.
2. The server's ``security_level``: ``high`` admits only authenticated identities whose name or one of
   whose roles is listed in that server's ``identities``; ``medium`` admits authenticated identities;
   ``low`` admits everyone (stdio callers are the local, authenticated user).
3. The tool's ``roles`` (from its `ToolRule`): when set, the identity's name or a role must be listed.
4. The base effect: an ``[policy] allow`` glob allows; else an explicit ``[policy] default`` (so
   ``default = "allow"`` allows every tool no deny glob matches, as documented for the key); else
   the template's effect for the tool's category (`checkrein.policy.templates`); else deny.
5. Risk: the tool's ``risk`` from `[policy.tools]`, else the template's risk for its category, else
   ``unknown``. An ``unknown``-risk tool never asks for approval on account of its risk: give it a
   ``risk``, or use a template, for risky tools to ask (`lint` says so for ``default = "allow"``).

Tool rules: the `ToolRule` of a tool merges every ``[policy.tools]`` key that matches it, the exact
name first, then globs from the most specific (longest pattern without wildcards) to the least
(ties: file order); each field comes from the most specific rule that sets it, and ``args`` and
``findings`` merge key by key the same way.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from checkrein.catalog.model import ToolDefinition
from checkrein.config import Config
from checkrein.config.gateway import SecurityLevel
from checkrein.config.policy import FindingEffect, PolicySettings, ToolRule

from .call import Identity
from .decision import Decision, RiskLevel
from .templates import TEMPLATES, Classification, Template, classify

__all__ = [
    "GlobSet",
    "GovernanceTables",
    "ToolGovernance",
    "effective_rule",
    "govern_other",
    "govern_tool",
    "identity_problem",
    "level_problem",
    "unmatched_patterns",
]


def _is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


class GlobSet:
    """Ordered globs compiled once; `first_match` returns the first pattern matching a name."""

    __slots__ = ("_compiled", "patterns")

    def __init__(self, patterns: tuple[str, ...]) -> None:
        self.patterns = patterns
        self._compiled = [(p, re.compile(fnmatch.translate(p))) for p in patterns]

    def first_match(self, name: str) -> str | None:
        for p, rx in self._compiled:
            if rx.match(name):
                return p
        return None


def _specificity(pattern: str) -> int:
    return len(pattern) - sum(pattern.count(c) for c in "*?[]")


def effective_rule(exposed: str, tools: Mapping[str, ToolRule], ordered_globs: list[tuple[str, re.Pattern[str]]]) -> ToolRule | None:
    """Merge the `[policy.tools]` rules matching ``exposed`` (see the module docstring)."""
    rules: list[ToolRule] = []
    exact = tools.get(exposed)
    if exact is not None:
        rules.append(exact)
    rules.extend(tools[p] for p, rx in ordered_globs if p != exposed and rx.match(exposed))
    if not rules:
        return None
    if len(rules) == 1:
        return rules[0]
    values: dict[str, Any] = {}
    fields_set: set[str] = set()
    for name in ToolRule.model_fields:
        if name in ("args", "findings"):
            merged: dict[str, Any] = {}
            for r in reversed(rules):
                merged.update(getattr(r, name))
            values[name] = merged
            if merged:
                fields_set.add(name)
            continue
        for r in rules:
            if name in r.model_fields_set:
                values[name] = getattr(r, name)
                fields_set.add(name)
                break
        else:
            values[name] = ToolRule.model_fields[name].get_default(call_default_factory=True)
    return ToolRule.model_construct(_fields_set=fields_set, **values)


def ordered_tool_globs(tools: Mapping[str, ToolRule]) -> list[tuple[str, re.Pattern[str]]]:
    keys = [k for k in tools if _is_glob(k)]
    order = {k: i for i, k in enumerate(keys)}
    keys.sort(key=lambda k: (-_specificity(k), order[k]))
    return [(k, re.compile(fnmatch.translate(k))) for k in keys]


@dataclass(frozen=True, slots=True)
class ToolGovernance:
    """The per-tool outcome of governance, minus the identity checks (done per call)."""

    server: str
    rule: ToolRule | None
    classification: Classification
    risk: RiskLevel
    named: bool
    level: SecurityLevel
    server_identities: frozenset[str]
    roles: frozenset[str]
    deny_glob: Decision | None
    """Set when a deny glob matches: returned before anything else."""
    base: Decision
    """The base decision (allow, or deny by template/default/unknown risk) when identities pass."""
    finding_effects: Mapping[str, FindingEffect] = field(default_factory=dict)


def unmatched_patterns(policy: PolicySettings, exposed_names: Iterable[str]) -> list[str]:
    """``allow``/``deny`` patterns and ``[policy.tools]`` keys that match none of ``exposed_names``
    (likely typos or stale rules), each prefixed with where it comes from."""
    names = list(exposed_names)
    out: list[str] = []
    for where, patterns in (("allow", policy.allow), ("deny", policy.deny), ("policy.tools", tuple(policy.tools))):
        for pattern in patterns:
            rx = re.compile(fnmatch.translate(pattern))
            if not any(rx.match(n) for n in names):
                out.append(f"{where}: {pattern}")
    return out


def level_problem(
    server: str, level: SecurityLevel, listed: frozenset[str], identity: Identity, risk: RiskLevel = "unknown"
) -> Decision | None:
    """A deny decision when ``identity`` may not use ``server`` at its ``security_level``."""
    if level == "high":
        if not identity.authenticated or (identity.user not in listed and listed.isdisjoint(identity.roles)):
            return Decision(
                "deny",
                f"identity.level:{server}",
                (f"server {server!r} has security level high and {identity.user!r} is not listed for it",),
                risk,
                error_code="policy.denied",
            )
    elif level == "medium" and not identity.authenticated:
        return Decision(
            "deny",
            f"identity.level:{server}",
            (f"server {server!r} has security level medium and the caller is not authenticated",),
            risk,
            error_code="policy.denied",
        )
    return None


def identity_problem(g: ToolGovernance, identity: Identity) -> Decision | None:
    """A deny decision when ``identity`` may not call the tool (server level or tool roles)."""
    if g.level != "low":
        problem = level_problem(g.server, g.level, g.server_identities, identity, g.risk)
        if problem is not None:
            return problem
    if g.roles and identity.user not in g.roles and g.roles.isdisjoint(identity.roles):
        return Decision(
            "deny",
            "identity.roles",
            (f"this tool needs one of the roles {sorted(g.roles)}; {identity.user!r} has {list(identity.roles)}",),
            g.risk,
            error_code="policy.denied",
        )
    return None


def _deny(rule_id: str, reason: str, risk: RiskLevel) -> Decision:
    return Decision("deny", rule_id, (reason,), risk, error_code="policy.denied")


def _finding_effects(p: PolicySettings, template: Template | None, rule: ToolRule | None) -> dict[str, FindingEffect]:
    effects: dict[str, FindingEffect] = {}
    if template is not None:
        effects.update(template.analyzers)
    effects.update(p.analyzers)
    if rule is not None:
        effects.update(rule.findings)
    return effects


@dataclass
class GovernanceTables:
    """What `govern_tool` needs from the config, built once per `compile_policy`."""

    config: Config
    allow: GlobSet
    deny: GlobSet
    tool_globs: list[tuple[str, re.Pattern[str]]]
    template: Template | None
    servers: dict[str, tuple[SecurityLevel, frozenset[str]]]

    @classmethod
    def build(cls, config: Config) -> GovernanceTables:
        p = config.policy
        return cls(
            config=config,
            allow=GlobSet(p.allow),
            deny=GlobSet(p.deny),
            tool_globs=ordered_tool_globs(p.tools),
            template=TEMPLATES[p.template] if p.template is not None else None,
            servers={s.name: (s.security_level, frozenset(s.identities)) for s in config.servers},
        )


def govern_tool(t: GovernanceTables, exposed: str, definition: ToolDefinition) -> ToolGovernance:
    """Compile governance for one tool (rules in the module docstring)."""
    p = t.config.policy
    rule = effective_rule(exposed, p.tools, t.tool_globs)
    cls = classify(definition.server, definition.name, definition.annotations, rule)
    cat_rule = t.template.categories[cls.template_key] if t.template is not None else None

    risk: RiskLevel = "unknown"
    if rule is not None and rule.risk is not None:
        risk = rule.risk
    elif cat_rule is not None:
        risk = cat_rule.risk

    allow_hit = t.allow.first_match(exposed)
    named = allow_hit is not None or exposed in p.tools
    deny_hit = t.deny.first_match(exposed)
    deny_glob = (
        _deny(f"deny:{deny_hit}", f"{exposed} matches deny rule {deny_hit!r}", risk) if deny_hit is not None else None
    )

    base: Decision
    effect: Literal["allow", "deny"]
    if allow_hit is not None:
        base = Decision("allow", f"allow:{allow_hit}", (f"{exposed} matches allow rule {allow_hit!r}",), risk)
    elif p.default is not None:
        effect = p.default
        if effect == "allow":
            base = Decision("allow", "default:allow", ("allowed by the policy default",), risk)
        else:
            base = _deny("default:deny", f"{exposed} is not allowed by any policy rule (default deny)", risk)
    elif t.template is not None and cat_rule is not None:
        rid = f"template:{t.template.name}:{cls.template_key}"
        what = cls.template_key.replace("_", " ")
        if cat_rule.effect == "allow":
            base = Decision("allow", rid, (f"template {t.template.name!r} allows {what} tools",), risk)
        else:
            base = _deny(rid, f"template {t.template.name!r} denies {what} tools ({exposed} is classified {what})", risk)
    else:
        base = _deny("default:deny", f"{exposed} is not allowed by any policy rule (default deny)", risk)
    level, idents = t.servers.get(definition.server, ("low", frozenset()))
    return ToolGovernance(
        server=definition.server,
        rule=rule,
        classification=cls,
        risk=risk,
        named=named,
        level=level,
        server_identities=idents,
        roles=frozenset(rule.roles) if rule is not None else frozenset(),
        deny_glob=deny_glob,
        base=base,
        finding_effects=_finding_effects(p, t.template, rule),
    )


def govern_other(t: GovernanceTables, name: str, server: str) -> ToolGovernance:
    """Governance for a resource, prompt or completion named ``name`` (its policy name).

    They are reads: every template allows them and their risk is low unless a `[policy.tools]`
    rule matching the name says otherwise. Deny and allow globs, ``[policy] default``, the
    server's security level, a matching rule's ``roles`` and its ``findings`` apply as for tools.
    """
    p = t.config.policy
    rule = effective_rule(name, p.tools, t.tool_globs)
    risk: RiskLevel = rule.risk if rule is not None and rule.risk is not None else "low"
    deny_hit = t.deny.first_match(name)
    deny_glob = _deny(f"deny:{deny_hit}", f"{name} matches deny rule {deny_hit!r}", risk) if deny_hit is not None else None
    allow_hit = t.allow.first_match(name)
    if allow_hit is not None:
        base = Decision("allow", f"allow:{allow_hit}", (f"{name} matches allow rule {allow_hit!r}",), risk)
    elif p.default == "deny" or (p.default is None and t.template is None):
        base = _deny("default:deny", f"{name} is not allowed by any policy rule (default deny)", risk)
    else:
        base = Decision("allow", "default:read", ("resources, prompts and completions are reads, allowed by the policy",), risk)
    level, idents = t.servers.get(server, ("low", frozenset()))
    return ToolGovernance(
        server=server,
        rule=rule,
        classification=classify(server, "read", {"readOnlyHint": True}, rule),
        risk=risk,
        named=allow_hit is not None,
        level=level,
        server_identities=idents,
        roles=frozenset(rule.roles) if rule is not None else frozenset(),
        deny_glob=deny_glob,
        base=base,
        finding_effects=_finding_effects(p, t.template, rule),
    )
