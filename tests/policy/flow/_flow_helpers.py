"""Shared builders for the flow tests: tools labelled through the real `compile_flow`."""

from __future__ import annotations

from typing import Any

from checkrein.catalog.model import ToolDefinition
from checkrein.config import Config
from checkrein.policy import compile_policy
from checkrein.policy.flow import FlowPlan, compile_flow


def plan_for(tools: dict[str, dict[str, Any] | None], policy: dict[str, Any] | None = None) -> FlowPlan:
    """A flow plan for tools of server ``s`` (name -> annotations), all allowed."""
    defs = {f"s__{n}": ToolDefinition("s", n, annotations=a) for n, a in tools.items()}
    base: dict[str, Any] = {"allow": ["s__*"], "tools": {"s__*": {"risk": "medium"}}}
    for k, v in (policy or {}).items():
        if k == "tools":
            base["tools"].update(v)
        else:
            base[k] = v
    return compile_flow(compile_policy(Config.model_validate({"policy": base}), defs))
