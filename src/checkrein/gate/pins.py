"""`Pins`: what the gate judges tool definitions against, and trust on first use.

The lock (`checkrein.lock`, read and written by `checkrein.catalog.lock`) holds one pin per exposed
tool. Each catalog build re-reads it (`settle`): without a lock, at the first start, every tool is
pinned and the lock written; with a lock, a ready server none of whose tools it holds (down at the
first pin, or added since) has its tools pinned the same way the first time it is seen. A tool the
description review flags is never pinned so. When the lock vanishes after start, the pins last
read stay in force. `lock_changed` is the one ``stat`` that tells whether someone (`checkrein
pin`) rewrote the lock since.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from checkrein.catalog import Names, PinnedTool, build_catalog, read_lock, write_lock
from checkrein.catalog.model import ToolDefinition
from checkrein.policy.analyzers.descriptions import review_tool

__all__ = ["Pins"]

log = logging.getLogger("checkrein.gate")

RecordLifecycle = Callable[[str, dict[str, Any]], Awaitable[None]]


class Pins:
    """The gate's pins between catalog builds (see the module docstring)."""

    def __init__(self) -> None:
        self.pins: dict[str, PinnedTool] | None = None
        """The pins of the last build (``None``: no lock yet, and none written)."""
        self.lock_written = False
        """True once trust on first use wrote the lock."""
        self._lock_mtime: int | None = None

    def lock_changed(self, lock_path: Path) -> bool:
        """Whether the lock was rewritten (or appeared, or vanished) since the last build."""
        return _mtime(lock_path) != self._lock_mtime

    async def settle(
        self,
        lock_path: Path,
        tools: dict[str, list[ToolDefinition]],
        names: Names,
        *,
        trust_on_first_use: bool,
        trust_new_servers: bool,
        record_lifecycle: RecordLifecycle,
    ) -> dict[str, PinnedTool] | None:
        """Read the lock, pin by trust on first use where allowed (writing the lock), and return
        the pins to build the catalog of ``tools`` against.

        ``trust_on_first_use``: without a lock, pin every tool and write it; ``trust_new_servers``
        (or ``trust_on_first_use``): with a lock, pin the tools of servers it has never pinned.
        Raises ``LockFileError`` when the lock exists but is invalid.
        """
        self._lock_mtime = _mtime(lock_path)
        pins = pins_before = read_lock(lock_path)
        first_seen: list[str] = []
        if trust_on_first_use or trust_new_servers:
            if pins is None and trust_on_first_use:
                first_seen = sorted(tools)
            elif pins is not None:
                known = {p.server_of(n, names.separator) for n, p in pins.items()}
                first_seen = [s for s in sorted(tools) if s not in known and tools[s]]
        if first_seen or (pins is None and trust_on_first_use):
            fresh = build_catalog({s: tools[s] for s in first_seen}, separator=names.separator, pins=None, names=names, review=review_tool)
            trusted = [e for e in fresh if e.status == "ok"]  # a flagged tool is never pinned by trust on first use
            if trusted or pins is None:
                new_pins = dict(pins or {})
                new_pins.update({e.exposed: PinnedTool(e.digest, e.definition.pinned_fields(), e.server) for e in trusted})
                write_lock(lock_path, new_pins)
                pins = new_pins
                self._lock_mtime = _mtime(lock_path)
                self.lock_written = True
                log.info("pinned %d tool(s) of %s in %s (trust on first use)", len(trusted), ", ".join(first_seen), lock_path)
                if pins_before is not None:  # at the very first start, `gateway.start` says `lock_written`
                    await record_lifecycle(
                        "pin.first_use",
                        {"lock": str(lock_path), "servers": first_seen, "tools": sorted(e.exposed for e in trusted)},
                    )
        if pins is None:
            # The lock vanished after start: keep judging drift against what was pinned then.
            # (No lock and no pins yet, without trust on first use: report everything as ok.)
            pins = self.pins
        self.pins = pins
        return pins


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None
