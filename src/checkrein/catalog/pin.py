"""`checkrein pin`: compare the running catalog with the lock and compute the new lock.

Pure: the CLI fetches the tool lists, this module says what changed, summarizes it (counts
first, names next, a unified diff per tool only on request) and renders it as JSON for scripts.
A tool the tool-definition review flagged is held back (not pinned; an existing pin stays as it
was) unless the operator accepts it by name, which records the accepted finding in the lock.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .lock import PinnedTool
from .merge import Catalog

__all__ = ["PinPlan", "plan_json", "plan_pin", "render_plan"]

_LISTED = 8
"""Names shown per line of the summary before `(+N more)`."""


@dataclass(frozen=True)
class PinPlan:
    """What `pin` would change. ``new_lock`` is the full lock to write."""

    added: tuple[str, ...]
    changed: tuple[str, ...]
    removed: tuple[str, ...]
    kept: tuple[str, ...]
    """Pins kept although the tool was not listed, because its server did not start."""
    old: Mapping[str, PinnedTool]
    new_lock: Mapping[str, PinnedTool]
    held: Mapping[str, str] = field(default_factory=dict)
    """Flagged tools not accepted: exposed name -> finding. Not pinned (an old pin is kept)."""
    accepted: Mapping[str, str] = field(default_factory=dict)
    """Flagged tools the operator accepts now: exposed name -> finding (recorded in the lock)."""
    servers: tuple[str, ...] = ()
    listed: int = 0
    """Tools the servers listed (the catalog's size)."""
    unchanged: int = 0
    """Tools pinned already, exactly as listed."""

    @property
    def has_changes(self) -> bool:
        return bool(self.added or self.changed or self.removed or self.accepted)

    @property
    def needs_review(self) -> bool:
        """Anything unpinned, drifted, removed or held back: what `pin --check` fails on."""
        return self.has_changes or bool(self.held)


def plan_pin(catalog: Catalog, lock: Mapping[str, PinnedTool] | None, accept: Collection[str] = ()) -> PinPlan:
    """The lock that pins every tool of ``catalog`` as it is now, except flagged tools not in
    ``accept`` (exposed names), which are held back.

    Pins of tools whose server is not in ``catalog.servers`` (it failed to start) are kept, so a
    flaky server does not silently lose its reviewed definitions. A held tool keeps its old pin.
    """
    old = dict(lock or {})
    current: dict[str, PinnedTool] = {}
    held: dict[str, str] = {}
    accepted: dict[str, str] = {}
    for e in catalog:
        pin = PinnedTool(e.digest, e.definition.pinned_fields(), e.server)
        previous = old.get(e.exposed)
        if e.flagged:
            if e.exposed not in accept:
                held[e.exposed] = e.flagged
                continue
            accepted[e.exposed] = e.flagged
            pin = replace(pin, accepted=e.flagged)
        elif previous is not None and previous.digest == e.digest and previous.accepted is not None:
            pin = replace(pin, accepted=previous.accepted)  # accepted before: the same definition stays accepted
        current[e.exposed] = pin
    added = tuple(sorted(n for n in current if n not in old))
    changed = tuple(sorted(n for n in current if n in old and old[n].digest != current[n].digest))
    listed = set(catalog.servers)
    sep = catalog.separator
    removed: list[str] = []
    kept: list[str] = []
    new_lock = dict(current)
    for name in sorted(set(old) - set(current)):
        if name in held:
            new_lock[name] = old[name]
        elif old[name].server_of(name, sep) in listed:
            removed.append(name)
        else:
            kept.append(name)
            new_lock[name] = old[name]
    fresh_accepts = {n: r for n, r in accepted.items() if n not in old or old[n].accepted is None or old[n].digest != current[n].digest}
    unchanged = len(current) - len(added) - len(changed)
    return PinPlan(added, changed, tuple(removed), tuple(kept), old, new_lock, held, fresh_accepts, catalog.servers, len(catalog), unchanged)


def _lines(definition: Mapping[str, Any] | None) -> list[str]:
    if definition is None:
        return []
    return json.dumps(definition, indent=2, sort_keys=True, ensure_ascii=False).splitlines(keepends=True)


def _diff(name: str, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> str:
    a = f"a/{name}" if before is not None else "/dev/null"
    b = f"b/{name}" if after is not None else "/dev/null"
    text = "".join(difflib.unified_diff(_lines(before), _lines(after), a, b, n=3))
    return text if text.endswith("\n") else text + "\n"


def _names(names: Collection[str]) -> str:
    shown = sorted(names)[:_LISTED]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f" (+{more} more)" if more > 0 else "")


def render_plan(plan: PinPlan, lock_name: str = "checkrein.lock", *, details: bool = False) -> str:
    """The summary (tools, servers, then one line per kind of change with the names), the tools
    held back with their findings, and with ``details`` a unified diff per new, changed and
    removed tool."""
    out = [f"{plan.listed} tool(s) from {len(plan.servers)} server(s) against {lock_name}:"]
    for label, names in (("new", plan.added), ("changed", plan.changed), ("removed", plan.removed)):
        out.append(f"  {label:<10}{len(names):>5}" + (f"  {_names(names)}" if names else ""))
    out.append(f"  {'unchanged':<10}{plan.unchanged:>5}")
    if plan.kept:
        out.append(f"  {'kept':<10}{len(plan.kept):>5}  {_names(plan.kept)} (server did not start; pins stay as they were)")
    if plan.accepted:
        out.append(f"  {'accepted':<10}{len(plan.accepted):>5}  {_names(plan.accepted)} (flagged, accepted by name)")
    if plan.held:
        out.append(f"  {'held back':<10}{len(plan.held):>5}  flagged by the tool-definition scan, not pinned (accept one with --accept NAME):")
        out.extend(f"    {name}: {why}" for name, why in sorted(plan.held.items()))
    if details:
        for name in plan.changed:
            out.append(f"\nchanged: {name}\n" + _diff(name, plan.old[name].definition, plan.new_lock[name].definition).rstrip("\n"))
        for name in plan.added:
            out.append(f"\nnew: {name}\n" + _diff(name, None, plan.new_lock[name].definition).rstrip("\n"))
        for name in plan.removed:
            out.append(f"\nremoved: {name}\n" + _diff(name, plan.old[name].definition, None).rstrip("\n"))
    elif plan.added or plan.changed or plan.removed:
        out.append("(run with --diff for a diff of every new, changed and removed tool)")
    return "\n".join(out) + "\n"


def plan_json(plan: PinPlan, lock: str, *, written: bool) -> dict[str, Any]:
    """The plan for scripts (`checkrein pin --json`): what changed, what is held and why."""
    return {
        "lock": lock,
        "servers": list(plan.servers),
        "tools": plan.listed,
        "new": list(plan.added),
        "changed": list(plan.changed),
        "removed": list(plan.removed),
        "kept": list(plan.kept),
        "unchanged": plan.unchanged,
        "held": dict(sorted(plan.held.items())),
        "accepted": dict(sorted(plan.accepted.items())),
        "up_to_date": not plan.needs_review,
        "written": written,
    }
