"""`knowledge`: a searchable knowledge base (SQLite FTS5, BM25, highlighted snippets).

The database is ``$CHECKREIN_KB_PATH`` (default ``<state dir>/knowledge.db``); `checkrein kb seed`
fills it with the seed documents.

    python -m checkrein.servers.knowledge [--http --port N]
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field, StrictInt

from ._base import BundledServer
from ._run import LOG_LEVEL, cannot_start, parse_server_args, serve
from .knowledge_store import (
    MAX_SOURCE_CHARS,
    MAX_TEXT_CHARS,
    KnowledgeBase,
    KnowledgeBaseUnavailable,
    kb_path,
)

__all__ = ["build_server", "main"]


class _Store:
    """One connection per worker thread: the SDK may run sync tools on different threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        KnowledgeBase(path).close()  # create the schema before serving

    def get(self) -> KnowledgeBase:
        kb: KnowledgeBase | None = getattr(self._local, "kb", None)
        if kb is None:
            kb = KnowledgeBase(self.path)
            self._local.kb = kb
        return kb


def build_server(path: Path) -> BundledServer:
    """The knowledge server over the SQLite file at ``path`` (created if missing); raises
    `KnowledgeBaseUnavailable` when that file cannot be opened as a knowledge base."""
    store = _Store(path)
    server = BundledServer(
        "knowledge",
        instructions="Search earlier notes, meetings and documents before answering from memory.",
        log_level=LOG_LEVEL,
    )

    @server.tool(annotations=ToolAnnotations(title="Search documents", read_only_hint=True, destructive_hint=False,
                                             idempotent_hint=True, open_world_hint=False))
    def search_documents(
        query: Annotated[str, Field(min_length=1, max_length=500, description="Words to look for.")],
        limit: Annotated[StrictInt, Field(ge=1, le=20, description="Maximum results, 1..20.")] = 5,
    ) -> dict[str, Any]:
        """Full-text search of the knowledge base, best matches first (BM25), with **highlighted** snippets."""
        hits = store.get().search(query, limit)
        return {
            "query": query,
            "count": len(hits),
            "results": [{"id": h.id, "source": h.source, "score": h.score, "snippet": h.snippet} for h in hits],
            "note": "" if hits else "no documents matched",
        }

    @server.tool(annotations=ToolAnnotations(title="Add document", read_only_hint=False, destructive_hint=False,
                                             idempotent_hint=True, open_world_hint=False))
    def add_document(
        source: Annotated[str, Field(min_length=1, max_length=MAX_SOURCE_CHARS, description="Where it came from.")],
        text: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS, description="The document text.")],
    ) -> dict[str, Any]:
        """Add a document to the knowledge base (an identical document is stored once)."""
        try:
            doc_id, added = store.get().add(source, text)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        return {"id": doc_id, "added": added}

    @server.tool(annotations=ToolAnnotations(title="List sources", read_only_hint=True, destructive_hint=False,
                                             idempotent_hint=True, open_world_hint=False))
    def list_sources() -> dict[str, Any]:
        """The sources in the knowledge base and how many documents each has."""
        rows = store.get().sources()
        return {"sources": [{"source": s, "documents": n} for s, n in rows], "total": sum(n for _, n in rows)}

    return server


def main(argv: list[str] | None = None) -> None:
    options = parse_server_args("knowledge", argv)
    path = kb_path()
    try:
        server = build_server(path)
    except KnowledgeBaseUnavailable as exc:
        cannot_start("knowledge", f"cannot open the knowledge base {path}", exc)
    serve(server, options, health=lambda: {"database": str(path)})


if __name__ == "__main__":
    main()
