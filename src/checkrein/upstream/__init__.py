"""Connections to upstream MCP servers: stdio, legacy SSE and Streamable HTTP.

``UpstreamPool`` starts every configured server concurrently and keeps one long-lived session per
server (``McpUpstream``), restarting a crashed one on the next call with backoff. ``wire`` holds
the pure conversions (``tool_definition``, ``strip_identifying_meta``); ``spawn`` starts stdio
servers, also ahead of the SDK's import (`checkrein serve` does). The names below are loaded on
first use, so importing ``checkrein.upstream.spawn`` does not import the MCP SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from checkrein._lazy import lazy_exports

__all__ = [
    "IDENTIFYING_META_KEYS",
    "Backoff",
    "Era",
    "LifecycleHook",
    "McpUpstream",
    "ToolsChanged",
    "Upstream",
    "UpstreamInfo",
    "UpstreamPool",
    "UpstreamRequestFailed",
    "UpstreamSession",
    "UpstreamState",
    "strip_identifying_meta",
    "tool_definition",
]

_LAZY = {
    "UpstreamRequestFailed": "checkrein.errors",
    "Backoff": "checkrein.upstream.backoff",
    "ToolsChanged": "checkrein.upstream.base",
    "Upstream": "checkrein.upstream.base",
    "UpstreamInfo": "checkrein.upstream.base",
    "UpstreamState": "checkrein.upstream.base",
    "LifecycleHook": "checkrein.upstream.connection",
    "McpUpstream": "checkrein.upstream.connection",
    "UpstreamPool": "checkrein.upstream.pool",
    "Era": "checkrein.upstream.session",
    "UpstreamSession": "checkrein.upstream.session",
    "IDENTIFYING_META_KEYS": "checkrein.upstream.wire",
    "strip_identifying_meta": "checkrein.upstream.wire",
    "tool_definition": "checkrein.upstream.wire",
}

if TYPE_CHECKING:
    from checkrein.errors import UpstreamRequestFailed
    from checkrein.upstream.backoff import Backoff
    from checkrein.upstream.base import ToolsChanged, Upstream, UpstreamInfo, UpstreamState
    from checkrein.upstream.connection import LifecycleHook, McpUpstream
    from checkrein.upstream.pool import UpstreamPool
    from checkrein.upstream.session import Era, UpstreamSession
    from checkrein.upstream.wire import IDENTIFYING_META_KEYS, strip_identifying_meta, tool_definition


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals(), __all__)
