"""One catalog over every upstream: exposed names, skipped names, drift and review quarantine.

`build_catalog` is pure: upstream tool lists plus the pins in, a `Catalog` out. Whoever holds the
upstreams (the gate) decides when to rebuild it (start, refresh after list_changed), and hands in
the review of tool definitions (`ToolReview`; the gate passes the policy's tool-definition scan):
the catalog imports nothing of the policy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from checkrein.errors import ToolNotFound, ToolQuarantined

from .lock import PinnedTool
from .model import ToolDefinition, ToolStatus
from .namespace import Names

__all__ = ["MAX_TOOL_NAME", "Catalog", "CatalogEntry", "SkippedTool", "ToolReview", "build_catalog"]

ToolReview = Callable[[ToolDefinition, Sequence[str]], "str | None"]
"""(definition, names of the other tools its server lists) -> why it must not be trusted, or None."""

MAX_TOOL_NAME = 128
"""SEP-986: tool names are 1-128 characters; an exposed name must fit too."""


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One exposed tool. ``drift`` and ``flagged`` say why it is quarantined (both empty when
    ``status == "ok"``): a definition that differs from its pin, and the tool-definition review's
    finding (kept until an operator accepts the tool by name: `checkrein pin --accept`)."""

    exposed: str
    definition: ToolDefinition
    digest: str
    status: ToolStatus = "ok"
    drift: str = ""
    flagged: str = ""

    @property
    def reason(self) -> str:
        """Why the tool is quarantined, in one line (empty when it is not)."""
        if self.flagged:
            return f"{self.flagged} (not trusted until accepted: checkrein pin --accept {self.exposed})"
        return self.drift

    @property
    def server(self) -> str:
        return self.definition.server

    @property
    def tool(self) -> str:
        return self.definition.name


@dataclass(frozen=True, slots=True)
class SkippedTool:
    """An upstream tool checkrein does not expose at all, and why."""

    server: str
    tool: str
    reason: str


@dataclass(frozen=True)
class Catalog:
    """The merged catalog. Immutable: a refresh builds a new one."""

    entries: Mapping[str, CatalogEntry]
    skipped: tuple[SkippedTool, ...] = ()
    separator: str = "__"
    servers: tuple[str, ...] = ()
    """Servers whose tool lists went into this catalog (failed servers are absent)."""
    _ok: Mapping[str, ToolDefinition] = field(default_factory=dict, repr=False)

    def __iter__(self) -> Iterator[CatalogEntry]:
        return iter(self.entries.values())

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def ok_tools(self) -> Mapping[str, ToolDefinition]:
        """Exposed name -> definition of every tool that is not quarantined."""
        return self._ok

    @property
    def quarantined(self) -> tuple[CatalogEntry, ...]:
        return tuple(e for e in self.entries.values() if e.status == "quarantined")

    @property
    def flagged(self) -> tuple[CatalogEntry, ...]:
        """Entries the tool-definition review flagged (all quarantined)."""
        return tuple(e for e in self.entries.values() if e.flagged)

    def resolve(self, exposed: str) -> CatalogEntry:
        """The entry for ``exposed``. Raises ``ToolNotFound`` or ``ToolQuarantined`` (with the drift)."""
        entry = self.entries.get(exposed)
        if entry is None:
            raise ToolNotFound(f"no tool named {exposed!r}; call tools/list to see the tools you may use")
        if entry.status == "quarantined":
            raise ToolQuarantined(
                f"tool {exposed!r} is quarantined: {entry.reason}; an operator must review it with "
                "`checkrein pin` before it can be called"
            )
        return entry


def _drift(exposed: str, digest: str, pins: Mapping[str, PinnedTool] | None) -> str:
    if pins is None:
        return ""
    pin = pins.get(exposed)
    if pin is None:
        return "new tool, not in checkrein.lock"
    if pin.digest != digest:
        return f"definition changed since it was pinned (lock {pin.digest[:19]}, now {digest[:19]})"
    return ""


def _review(
    review: ToolReview | None,
    tool: ToolDefinition,
    exposed: str,
    digest: str,
    pins: Mapping[str, PinnedTool] | None,
    server_tools: Sequence[ToolDefinition],
) -> str:
    if review is None:
        return ""
    pin = pins.get(exposed) if pins is not None else None
    if pin is not None and pin.digest == digest and pin.accepted is not None:
        return ""  # an operator accepted this exact definition
    try:
        return review(tool, [t.name for t in server_tools if t.name != tool.name]) or ""
    except Exception as exc:  # noqa: BLE001 - fail closed: a definition nobody could review is not trusted
        return f"the tool-definition review failed ({type(exc).__name__})"


def build_catalog(
    tools_by_server: Mapping[str, Sequence[ToolDefinition]],
    *,
    separator: str = "__",
    pins: Mapping[str, PinnedTool] | None = None,
    names: Names | None = None,
    review: ToolReview | None = None,
) -> Catalog:
    """Merge upstream tool lists into one catalog.

    ``names`` gives each server's prefix (default: its name, joined with ``separator``). A name
    that two servers would expose (both with ``prefix = ""``, say) is exposed by neither: both
    are skipped with a reason naming the two servers, since picking one would be silent shadowing.

    ``pins`` is the lock file's content, or ``None`` when there is no lock yet (trust on first use:
    every tool is ``ok``). With pins, a tool that is new or whose digest differs is quarantined.
    Tools whose names SEP-986 forbids, whose exposed name would exceed 128 characters, or that
    repeat a name already listed by the same server are skipped and reported in ``skipped``.

    ``review`` judges every definition that is not pinned with an accepted finding: a tool it
    flags is quarantined with the finding (``flagged``), pins or not, so trust on first use never
    trusts it. A review that raises flags the tool too (fail closed).
    """
    # Imported here: importing `mcp` costs a second or more, and `checkrein.catalog` is imported by
    # every command (through the policy), most of which never build a catalog.
    from mcp.shared.tool_name_validation import TOOL_NAME_REGEX, validate_tool_name

    naming = names if names is not None else Names(separator)
    entries: dict[str, CatalogEntry] = {}
    skipped: list[SkippedTool] = []
    clashes: dict[str, set[str]] = {}
    for server in sorted(tools_by_server):
        for tool in tools_by_server[server]:
            check = validate_tool_name(tool.name)
            if not check.is_valid or not TOOL_NAME_REGEX.fullmatch(tool.name):
                why = "; ".join(w for w in check.warnings if "SEP" not in w) or "invalid characters"
                skipped.append(SkippedTool(server, tool.name, f"tool name not allowed by the MCP spec: {why}"))
                continue
            name = naming.name(server, tool.name)
            if len(name) > MAX_TOOL_NAME:
                skipped.append(
                    SkippedTool(server, tool.name, f"exposed name {name[:40]}... is longer than {MAX_TOOL_NAME}")
                )
                continue
            if name in entries:
                first = entries[name].server
                if first == server:
                    skipped.append(SkippedTool(server, tool.name, "the server lists this tool name twice"))
                else:
                    clashes.setdefault(name, {first}).add(server)
                continue
            d = tool.digest
            drift = _drift(name, d, pins)
            flagged = _review(review, tool, name, d, pins, tools_by_server[server])
            entries[name] = CatalogEntry(name, tool, d, "quarantined" if drift or flagged else "ok", drift, flagged)
    for name, servers in sorted(clashes.items()):
        entry = entries.pop(name)
        both = ", ".join(repr(s) for s in sorted(servers))
        why = f"servers {both} all expose a tool named {name!r}; give one of them a `prefix` in [[servers]]"
        skipped.extend(SkippedTool(s, entry.tool, why) for s in sorted(servers))
    ok = {n: e.definition for n, e in entries.items() if e.status == "ok"}
    return Catalog(entries, tuple(skipped), separator, tuple(sorted(tools_by_server)), ok)
