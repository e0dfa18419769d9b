"""A stdio MCP server whose `crash` tool kills the process (an upstream dying mid-run)."""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer

server: MCPServer = MCPServer("crashy", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Echo the text."""
    return text


@server.tool()
def crash() -> str:
    """Exit the server process at once."""
    os._exit(3)


if __name__ == "__main__":
    server.run("stdio")
