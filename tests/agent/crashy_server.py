"""A stdio MCP server whose `crash` tool kills the process (an upstream dying mid-run) and whose
`traceparent` tool shows the `_meta.traceparent` it received."""

from __future__ import annotations

import os

from mcp.server.mcpserver import Context, MCPServer

server: MCPServer = MCPServer("crashy", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Echo the text."""
    return text


@server.tool()
def traceparent(ctx: Context) -> str:
    """Return the `traceparent` the caller sent in this request's `_meta`."""
    meta = ctx.request_context.meta or {}
    return str(meta.get("traceparent", "none"))


@server.tool()
def crash() -> str:
    """Exit the server process at once."""
    os._exit(3)


if __name__ == "__main__":
    server.run("stdio")
