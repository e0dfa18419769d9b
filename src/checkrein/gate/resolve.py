"""The catalog step's one job: which server, and which of its own names, a request is about.

- tools: the pinned catalog (unknown -> `ToolNotFound`, drifted -> `ToolQuarantined`);
- prompts: ``<prefix><sep><name>``, or for a passthrough server (``prefix = ""``) the server whose
  listing has that name;
- resources (read, subscribe, unsubscribe): ``checkrein://<prefix>/<uri>``, or for passthrough
  servers the one whose listing has the URI, else whose resource template matches it, else the only
  passthrough server that serves resources;
- completions: their ``ref`` (a prompt, or a resource template) the same way;
- listings: nothing to resolve.

A name two passthrough servers could both own is refused (`ToolNotFound` naming both), never
guessed. The resolved call carries the server, the upstream's own name (``tool``), and as
``exposed_name`` what policy globs and the audit call it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import Any

from checkrein.catalog import CatalogEntry
from checkrein.errors import ToolNotFound
from checkrein.policy import ToolCall

from .state import GateState

__all__ = ["resolve", "template_matches"]

Unavailable = Callable[[str, str], str | None]


async def resolve(state: GateState, call: ToolCall, unavailable: Unavailable) -> tuple[ToolCall, CatalogEntry | None]:
    """The call with ``server``, ``tool`` and its policy name filled in, and its catalog entry
    (tools only). Raises ``ToolNotFound`` or ``ToolQuarantined``."""
    kind = call.kind
    if kind == "list":
        return call, None
    if kind == "tool":
        try:
            entry = state.catalog.resolve(call.exposed_name)
        except ToolNotFound as exc:
            split = state.names.split_name(call.exposed_name)
            why = unavailable(split[0], call.exposed_name) if split is not None else None
            raise ToolNotFound(why or exc.message) from None
        resolved = ToolCall(
            call.identity, call.session_id, call.trace_id, call.span_id, call.exposed_name, call.arguments,
            entry.server, entry.tool, call.parent_span_id, call.kind, call.model, call.session_given, call.task,
        )  # fmt: skip
        return resolved, entry
    if kind == "prompt":
        server, original = await _prompt(state, call.exposed_name, unavailable)
        return replace(call, server=server, tool=original), None
    if kind in ("resource", "subscribe", "unsubscribe"):
        server, original = await _resource(state, call.exposed_name, unavailable)
        named = state.names.policy_name(server, original)
        return replace(call, server=server, tool=original, exposed_name=named, arguments={"uri": original}), None
    if kind == "completion":
        return await _completion(state, call, unavailable), None
    raise ToolNotFound(f"checkrein does not serve {kind} requests")


def _ready(state: GateState, server: str, name: str, unavailable: Unavailable) -> None:
    if server not in state.upstreams:
        raise ToolNotFound(f"no server is exposed under the name in {name!r}")
    why = unavailable(server, name)
    if why is not None:
        raise ToolNotFound(why)


def _one(name: str, owners: Sequence[str], what: str) -> str:
    if len(owners) == 1:
        return owners[0]
    if not owners:
        raise ToolNotFound(f"no {what} named {name!r}; list them to see what you may use")
    both = ", ".join(repr(s) for s in owners)
    raise ToolNotFound(f"{what} {name!r} is served by several servers ({both}); give them a `prefix` in [[servers]]")


async def _prompt(state: GateState, name: str, unavailable: Unavailable) -> tuple[str, str]:
    split = state.names.split_name(name)
    if split is not None and (split[0] in state.upstreams or not state.names.passthrough):
        _ready(state, split[0], name, unavailable)
        return split
    owners = [s for s in _live_passthrough(state, unavailable) if any(p.name == name for p in await _prompts(state, s))]
    return _one(name, owners, "prompt"), name


async def _resource(state: GateState, uri: str, unavailable: Unavailable) -> tuple[str, str]:
    split = state.names.split_uri(uri)
    if split is not None and (split[0] in state.upstreams or not state.names.passthrough):
        _ready(state, split[0], uri, unavailable)
        return split
    live = _live_passthrough(state, unavailable)
    owners = [s for s in live if any(str(r.uri) == uri for r in await _resources(state, s))]
    if not owners:
        owners = [s for s in live if any(template_matches(t.uri_template, uri) for t in await _templates(state, s))]
    if not owners and len(live) == 1:
        owners = live
    return _one(uri, owners, "resource"), uri


async def _completion(state: GateState, call: ToolCall, unavailable: Unavailable) -> ToolCall:
    ref = call.arguments.get("ref")
    if not isinstance(ref, dict):
        raise ToolNotFound("a completion needs a `ref` (a prompt or a resource template)")
    if ref.get("type") == "ref/prompt":
        server, original = await _prompt(state, str(ref.get("name", "")), unavailable)
        named = state.names.name(server, original)
        new_ref: dict[str, Any] = {**ref, "name": original}
    else:
        exposed = str(ref.get("uri", ""))
        split = state.names.split_uri(exposed)
        if split is not None and (split[0] in state.upstreams or not state.names.passthrough):
            _ready(state, split[0], exposed, unavailable)
            server, original = split
        else:
            live = _live_passthrough(state, unavailable)
            owners = [s for s in live if any(t.uri_template == exposed for t in await _templates(state, s))]
            server, original = _one(exposed, owners, "resource template"), exposed
        named = state.names.policy_name(server, original)
        new_ref = {**ref, "uri": original}
    return replace(call, server=server, tool=original, exposed_name=named, arguments={**call.arguments, "ref": new_ref})


def _live_passthrough(state: GateState, unavailable: Unavailable) -> list[str]:
    return [s for s in state.names.passthrough if s in state.upstreams and unavailable(s, "") is None]


async def _prompts(state: GateState, server: str) -> list[Any]:
    return list(await _call(state, server, "list_prompts"))


async def _resources(state: GateState, server: str) -> list[Any]:
    return list(await _call(state, server, "list_resources"))


async def _templates(state: GateState, server: str) -> list[Any]:
    return list(await _call(state, server, "list_resource_templates"))


async def _call(state: GateState, server: str, method: str) -> Sequence[Any]:
    fn: Callable[[], Awaitable[Sequence[Any]]] | None = getattr(state.upstreams[server], method, None)
    if fn is None:
        return ()
    return await fn()


@lru_cache(maxsize=1024)
def _template_regex(template: str) -> re.Pattern[str]:
    out = []
    pos = 0
    for m in re.finditer(r"\{([+#./;?&]?)([^}]*)\}", template):
        out.append(re.escape(template[pos : m.start()]))
        op = m.group(1)
        if op in ("+", "#"):
            out.append(".*")
        elif op in ("?", "&"):
            out.append(r"(?:[?&][^#]*)?")
        else:
            out.append("[^/?#]*")
        pos = m.end()
    out.append(re.escape(template[pos:]))
    return re.compile("".join(out))


def template_matches(template: str, uri: str) -> bool:
    """Whether ``uri`` could come from the RFC 6570 URI ``template`` (the usual operators)."""
    return _template_regex(template).fullmatch(uri) is not None
