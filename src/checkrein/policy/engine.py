"""The policy engine: `compile_policy` once per config/catalog, `decide` per call (pure, no I/O).

This is the minimal gateway-core version (default deny, allow/deny globs, visible-tools filter);
the policy-engine issue grows it behind the same signatures.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass

from checkrein.canonical import digest
from checkrein.catalog.model import ToolDefinition
from checkrein.config import Config

from .call import Identity, SessionState, ToolCall
from .decision import Decision, RiskLevel

__all__ = ["CompiledPolicy", "compile_policy", "decide", "may_see"]


@dataclass(frozen=True)
class CompiledPolicy:
    config: Config
    tools: Mapping[str, ToolDefinition]
    """Exposed name -> pinned definition (only tools that are not quarantined)."""
    digest: str

    def risk_of(self, exposed: str) -> RiskLevel:
        rule = self.config.policy.tools.get(exposed)
        if rule is not None and rule.risk is not None:
            return rule.risk
        for pattern, r in self.config.policy.tools.items():
            if r.risk is not None and fnmatch.fnmatchcase(exposed, pattern):
                return r.risk
        return "unknown"


def compile_policy(config: Config, tools: Mapping[str, ToolDefinition]) -> CompiledPolicy:
    return CompiledPolicy(
        config=config,
        tools=dict(tools),
        digest=digest(config.policy.model_dump(mode="json")),
    )


def _match(name: str, globs: tuple[str, ...]) -> str | None:
    for g in globs:
        if fnmatch.fnmatchcase(name, g):
            return g
    return None


def decide(policy: CompiledPolicy, call: ToolCall, session: SessionState, now: float) -> Decision:
    """Decide one call. Pure: same inputs, same Decision."""
    del session, now
    p = policy.config.policy
    name = call.exposed_name
    risk = policy.risk_of(name)
    hit = _match(name, p.deny)
    if hit is not None:
        return Decision("deny", f"deny:{hit}", (f"{name} matches deny rule {hit!r}",), risk, error_code="policy.denied")
    hit = _match(name, p.allow)
    if hit is not None:
        return Decision("allow", f"allow:{hit}", (f"{name} matches allow rule {hit!r}",), risk)
    if (p.default or "deny") == "allow":
        return Decision("allow", "default:allow", ("allowed by the default policy",), risk)
    return Decision(
        "deny",
        "default:deny",
        (f"{name} is not allowed by any policy rule (default deny)",),
        risk,
        error_code="policy.denied",
    )


def may_see(policy: CompiledPolicy, identity: Identity, exposed: str) -> bool:
    """Whether ``identity`` may see ``exposed`` in tools/list (it could be allowed to call it)."""
    probe = ToolCall(identity=identity, session_id="", trace_id="", span_id="", exposed_name=exposed, arguments={})
    return decide(policy, probe, SessionState(""), 0.0).effect != "deny"
