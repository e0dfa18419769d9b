"""Connections to upstream MCP servers: stdio, legacy SSE and Streamable HTTP.

``UpstreamPool`` starts every configured server concurrently and keeps one long-lived session per
server (``McpUpstream``), restarting a crashed one on the next call with backoff. ``wire`` holds
the pure conversions (``tool_definition``, ``strip_identifying_meta``).
"""

from checkrein.errors import UpstreamRequestFailed
from checkrein.upstream.backoff import Backoff
from checkrein.upstream.base import ToolsChanged, Upstream, UpstreamInfo, UpstreamState
from checkrein.upstream.connection import LifecycleHook, McpUpstream
from checkrein.upstream.pool import UpstreamPool
from checkrein.upstream.session import Era, UpstreamSession
from checkrein.upstream.wire import IDENTIFYING_META_KEYS, strip_identifying_meta, tool_definition

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
