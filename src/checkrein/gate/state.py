"""`GateState`: the immutable snapshot every request is judged against.

The gate builds a new snapshot when something it depends on changes (start, a refreshed tool list,
a re-read lock, a reloaded policy) and swaps it in with one assignment. A request takes the snapshot
current when it enters and keeps it to the end, so it never sees half of a change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import mcp.types as types

from checkrein.catalog import Catalog, Names
from checkrein.config import Config
from checkrein.policy import CompiledPolicy
from checkrein.upstream.base import Upstream

__all__ = ["GateState"]


@dataclass(frozen=True, slots=True)
class GateState:
    config: Config
    catalog: Catalog
    policy: CompiledPolicy
    names: Names
    upstreams: Mapping[str, Upstream]
    tools: tuple[types.Tool, ...] = ()
    """The exposed `Tool` objects of every tool that is not quarantined, in catalog order."""
    timeouts: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))

    def timeout_of(self, server: str) -> float:
        return self.timeouts.get(server, 30.0)

    def is_read_only(self, exposed: str) -> bool:
        """Retry-safe: the policy's one answer (config rule for the tool, else its readOnlyHint).

        Anything that is not a pinned tool (a resource read, a listing) is a read."""
        plan = self.policy.plans.get(exposed)
        return True if plan is None else plan.read_only
