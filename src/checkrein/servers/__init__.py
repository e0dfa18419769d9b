"""Bundled example MCP servers, each runnable as ``python -m checkrein.servers.NAME``
(stdio by default; ``--http --port N`` serves Streamable HTTP on ``/mcp`` with ``GET /health``):

    monitor     read-only incident monitor (incident 42 carries a prompt-injection fixture)
    sandbox     offline weather, files in one directory, a few allowlisted commands
    knowledge   SQLite FTS5 knowledge base (BM25, highlighted snippets); `checkrein kb seed`

Files go under ``$CHECKREIN_STATE_DIR`` (default ``./.checkrein/state``) unless a server's own
variable says otherwise (``CHECKREIN_MONITOR_AUDIT``, ``CHECKREIN_SANDBOX_DIR``, ``CHECKREIN_KB_PATH``).
This package stays import-light: importing it must not slow every server's start.
"""

__all__: list[str] = []
