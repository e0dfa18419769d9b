"""`checkrein pin`: compare the running catalog with the lock and compute the new lock.

Pure: the CLI fetches the tool lists, this module says what changed and renders readable diffs.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .lock import PinnedTool
from .merge import Catalog

__all__ = ["PinPlan", "plan_pin", "render_plan"]


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

    @property
    def has_changes(self) -> bool:
        return bool(self.added or self.changed or self.removed)


def plan_pin(catalog: Catalog, lock: Mapping[str, PinnedTool] | None) -> PinPlan:
    """The lock that pins every tool of ``catalog`` as it is now.

    Pins of tools whose server is not in ``catalog.servers`` (it failed to start) are kept, so a
    flaky server does not silently lose its reviewed definitions.
    """
    old = dict(lock or {})
    current = {e.exposed: PinnedTool(e.digest, e.definition.pinned_fields(), e.server) for e in catalog}
    added = tuple(sorted(n for n in current if n not in old))
    changed = tuple(sorted(n for n in current if n in old and old[n].digest != current[n].digest))
    listed = set(catalog.servers)
    sep = catalog.separator
    removed: list[str] = []
    kept: list[str] = []
    new_lock = dict(current)
    for name in sorted(set(old) - set(current)):
        if old[name].server_of(name, sep) in listed:
            removed.append(name)
        else:
            kept.append(name)
            new_lock[name] = old[name]
    return PinPlan(added, changed, tuple(removed), tuple(kept), old, new_lock)


def _lines(definition: Mapping[str, Any] | None) -> list[str]:
    if definition is None:
        return []
    return json.dumps(definition, indent=2, sort_keys=True, ensure_ascii=False).splitlines(keepends=True)


def _diff(name: str, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> str:
    a = f"a/{name}" if before is not None else "/dev/null"
    b = f"b/{name}" if after is not None else "/dev/null"
    text = "".join(difflib.unified_diff(_lines(before), _lines(after), a, b, n=3))
    return text if text.endswith("\n") else text + "\n"


def render_plan(plan: PinPlan) -> str:
    """A unified diff per new, changed and removed tool, then a one-line summary."""
    parts: list[str] = []
    for name in plan.changed:
        parts.append(f"changed: {name}\n" + _diff(name, plan.old[name].definition, plan.new_lock[name].definition))
    for name in plan.added:
        parts.append(f"new: {name}\n" + _diff(name, None, plan.new_lock[name].definition))
    for name in plan.removed:
        parts.append(f"removed: {name}\n" + _diff(name, plan.old[name].definition, None))
    for name in plan.kept:
        parts.append(f"kept: {name} (its server did not start; the pin stays as it was)\n")
    parts.append(
        f"{len(plan.added)} new, {len(plan.changed)} changed, {len(plan.removed)} removed, "
        f"{len(plan.new_lock) - len(plan.added) - len(plan.changed) - len(plan.kept)} unchanged\n"
    )
    return "\n".join(parts)
