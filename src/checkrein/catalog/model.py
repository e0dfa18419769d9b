"""Tool definitions as checkrein pins them, and exposed (namespaced) names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from checkrein.canonical import digest

__all__ = ["ToolDefinition", "ToolStatus", "exposed_name", "split_exposed_name"]

ToolStatus = Literal["ok", "quarantined"]


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """One upstream tool as reviewed: the fields that change what a model sees or sends."""

    server: str
    name: str
    description: str | None = None
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    title: str | None = None
    execution: dict[str, Any] | None = None
    """Task support (``{"taskSupport": ...}``), as the upstream declared it."""
    icons: tuple[dict[str, Any], ...] | None = None
    meta: dict[str, Any] | None = None
    """The tool's ``_meta``, without the keys by which an upstream names itself."""

    def pinned_fields(self) -> dict[str, Any]:
        """The fields the pin digest covers: everything a client is shown (the wire names of the
        MCP `Tool` object). Optional fields are present only when set, so a tool without them
        has the digest it had before they were known."""
        out: dict[str, Any] = {"name": self.name, "inputSchema": self.input_schema}
        if self.title is not None:
            out["title"] = self.title
        if self.description is not None:
            out["description"] = self.description
        if self.output_schema is not None:
            out["outputSchema"] = self.output_schema
        if self.annotations:
            out["annotations"] = self.annotations
        if self.execution:
            out["execution"] = self.execution
        if self.icons:
            out["icons"] = list(self.icons)
        if self.meta:
            out["_meta"] = self.meta
        return out

    @property
    def digest(self) -> str:
        return digest(self.pinned_fields())

    @property
    def read_only_hint(self) -> bool:
        return bool((self.annotations or {}).get("readOnlyHint", False))


def exposed_name(server: str, tool: str, separator: str = "__") -> str:
    return f"{server}{separator}{tool}"


def split_exposed_name(name: str, separator: str = "__") -> tuple[str, str]:
    """Split at the first separator (server names never contain it). Raises ``ValueError``."""
    server, sep, tool = name.partition(separator)
    if not sep or not server or not tool:
        raise ValueError(f"{name!r} is not of the form <server>{separator}<tool>")
    return server, tool
