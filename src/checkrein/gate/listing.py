"""Listings (tools, resources, resource templates, prompts) as the caller may see them.

A listing is a request like any other (kind ``list``: audited, judged by the policy); its answer
comes from the catalog and the upstreams' cached lists, never from a fresh upstream request. An
item is shown only when the identity could use it: a tool `may_see` allows, a resource or prompt a
bare read of which the policy would not deny (so a resource whose URI the analyzers refuse is not
listed either). Names and URIs are in their exposed form.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mcp.types as types

from checkrein.policy import Identity, RequestKind, SessionState, ToolCall, decide, may_see

from .chain import GateResult
from .counters import Counters
from .state import GateState

__all__ = ["Listings", "LISTING_METHODS"]

log = logging.getLogger("checkrein.gate")

LISTING_METHODS = ("tools/list", "resources/list", "resources/templates/list", "prompts/list")


@dataclass
class Listings:
    counters: Counters
    ready: Any
    """``() -> set[str]``: the servers that are up (failed servers list nothing)."""

    async def __call__(self, state: GateState, call: ToolCall) -> GateResult:
        method, who = call.exposed_name, call.identity
        if method == "tools/list":
            return types.ListToolsResult(tools=[t for t in state.tools if self._sees(state, who, t.name)])
        if method == "resources/list":
            return types.ListResourcesResult(resources=await self.resources(state, who))
        if method == "resources/templates/list":
            return types.ListResourceTemplatesResult(resource_templates=await self.templates(state, who))
        if method == "prompts/list":
            return types.ListPromptsResult(prompts=await self.prompts(state, who))
        raise ValueError(f"not a listing method: {method!r}")

    def _sees(self, state: GateState, identity: Identity, name: str) -> bool:
        try:
            return may_see(state.policy, identity, name)
        except Exception:  # fail closed: a tool whose visibility cannot be decided is hidden
            self.counters.policy_errors += 1
            log.exception("may_see raised on %s", name)
            return False

    def _may_use(self, state: GateState, identity: Identity, kind: RequestKind, server: str, name: str, args: dict[str, Any]) -> bool:
        try:
            probe = ToolCall(identity, "", "", "", name, args, server, "", kind=kind)
            return decide(state.policy, probe, SessionState(""), 0.0).effect != "deny"
        except Exception:  # fail closed: an item whose visibility cannot be decided is hidden
            self.counters.policy_errors += 1
            log.exception("deciding the visibility of %s raised", name)
            return False

    async def _each(self, state: GateState, method: str) -> list[tuple[str, Sequence[Any]]]:
        out: list[tuple[str, Sequence[Any]]] = []
        for server in sorted(self.ready()):
            upstream = state.upstreams.get(server)
            fn = getattr(upstream, method, None) if upstream is not None else None
            if fn is None:
                continue
            try:
                out.append((server, await fn()))
            except Exception as exc:  # one server's failure hides its items, not everyone's
                log.warning("%s of %r failed: %s", method, server, exc, exc_info=True)
        return out

    async def resources(self, state: GateState, identity: Identity) -> list[types.Resource]:
        names = state.names
        out: list[types.Resource] = []
        for server, listed in await self._each(state, "list_resources"):
            for r in listed:
                uri = str(r.uri)
                if self._may_use(state, identity, "resource", server, names.policy_name(server, uri), {"uri": uri}):
                    out.append(r.model_copy(update={"uri": names.uri(server, uri)}))
        return out

    async def templates(self, state: GateState, identity: Identity) -> list[types.ResourceTemplate]:
        names = state.names
        out: list[types.ResourceTemplate] = []
        for server, listed in await self._each(state, "list_resource_templates"):
            for t in listed:
                named = names.policy_name(server, t.uri_template)
                if self._may_use(state, identity, "resource", server, named, {"uri": t.uri_template}):
                    out.append(t.model_copy(update={"uri_template": names.template(server, t.uri_template)}))
        return out

    async def prompts(self, state: GateState, identity: Identity) -> list[types.Prompt]:
        names = state.names
        out: list[types.Prompt] = []
        for server, listed in await self._each(state, "list_prompts"):
            for p in listed:
                exposed = names.name(server, p.name)
                if self._may_use(state, identity, "prompt", server, exposed, {}):
                    out.append(p.model_copy(update={"name": exposed}))
        return out
