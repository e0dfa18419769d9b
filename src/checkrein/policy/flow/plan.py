"""`compile_flow`: every tool's flow labels and effects, once per compiled policy.

Effects, per tool, the first that is set: the tool's ``flow_effect`` (`[policy.tools]`), then
``[policy.flow] rule_of_two`` / ``provenance``, then the template's (``strict``: deny; every other
template, and none: ask).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from checkrein.config.policy import FlowEffect, FlowSettings, ToolRule
from checkrein.policy.engine import CompiledPolicy
from checkrein.policy.governance import ordered_tool_globs
from checkrein.policy.templates import Classification

from .labels import LabelReason, ToolFlow, kind_flow, tool_flow
from .rule import FlowLimits

__all__ = ["FlowPlan", "compile_flow", "template_flow_effect"]


def template_flow_effect(template: str | None) -> FlowEffect:
    """The flow rules' effect a template implies (``strict`` denies, the others ask)."""
    return "deny" if template == "strict" else "ask"


@dataclass(frozen=True)
class FlowPlan:
    """Flow labels per exposed tool, the limits, and the session settings of one policy."""

    policy_digest: str
    tools: Mapping[str, ToolFlow]
    settings: FlowSettings
    limits: FlowLimits
    default_effects: tuple[FlowEffect, FlowEffect] = ("ask", "ask")
    _kinds: dict[str, ToolFlow] = field(default_factory=dict)

    def for_call(self, exposed: str, kind: Literal["tool", "resource", "prompt"] = "tool") -> ToolFlow:
        """The labels of ``exposed``; a tool the plan does not know gets every label (conservative)."""
        if kind != "tool":
            return kind_flow(exposed, kind)
        found = self.tools.get(exposed)
        if found is not None:
            return found
        r2, prov = self.default_effects
        why = "not in the pinned catalog: treated as every label"
        return ToolFlow(
            exposed,
            LabelReason("untrusted", True, "default", why),
            LabelReason("private", True, "default", why),
            LabelReason("sink", True, "default", why),
            r2,
            prov,
        )


def compile_flow(policy: CompiledPolicy) -> FlowPlan:
    """Label every tool of ``policy`` (rules in `checkrein.policy.flow.labels`)."""
    p = policy.config.policy
    s = p.flow
    base = template_flow_effect(p.template)
    r2_default: FlowEffect = s.rule_of_two or base
    prov_default: FlowEffect = s.provenance or base
    tools: dict[str, ToolFlow] = {}
    for exposed, plan in policy.plans.items():
        g = plan.governance
        rule = g.rule
        r2, prov = r2_default, prov_default
        if rule is not None and rule.flow_effect is not None:
            r2 = prov = rule.flow_effect
        cls: Classification = g.classification
        tools[exposed] = tool_flow(
            exposed,
            plan.definition.name,
            plan.definition.annotations,
            cls,
            rule,
            rule_of_two=r2,
            provenance=prov,
            rule_key=_rule_key(exposed, p.tools),
        )
    limits = FlowLimits(s.min_value_chars, s.max_untrusted_bytes, s.max_trusted_bytes)
    return FlowPlan(policy.digest, tools, s, limits, (r2_default, prov_default))


def _rule_key(exposed: str, tools: Mapping[str, ToolRule]) -> str:
    """The `[policy.tools]` key that gave ``exposed`` its ``flow`` (for explanations)."""
    exact = tools.get(exposed)
    if exact is not None and exact.flow is not None:
        return exposed
    for key, rx in ordered_tool_globs(tools):
        if rx.match(exposed) and tools[key].flow is not None:
            return key
    return ""
