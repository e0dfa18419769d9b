"""The knowledge base: FTS5 store, safe queries, and the server over stdio."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from checkrein.servers.knowledge_seed import SEED_DOCUMENTS, seed_knowledge_base
from checkrein.servers.knowledge_store import KnowledgeBase, fts_query

Connect = Callable[[str], AbstractAsyncContextManager[Client]]

HOSTILE = ['"', "NEAR(a b", "a OR", "*", "source:secret", "'; DROP TABLE documents; --", "a AND NOT b",
           "^x", "(((", "running\"shanghai", "-running", "{x}"]


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


@pytest.fixture
def kb(tmp_path: Path) -> KnowledgeBase:
    seed_knowledge_base(tmp_path / "kb.db")
    return KnowledgeBase(tmp_path / "kb.db")


def test_running_months_question_finds_the_shanghai_note_first(kb: KnowledgeBase) -> None:
    hits = kb.search("Which months are best for running in Shanghai?", 3)
    assert hits[0].source == "notes/running-in-shanghai.md"
    assert "**Shanghai**" in hits[0].snippet and "April" in hits[0].snippet
    assert hits[0].score >= hits[-1].score


def test_stemming_matches_other_word_forms(kb: KnowledgeBase) -> None:
    assert any(h.source == "notes/running-in-shanghai.md" for h in kb.search("runs", 5))


@pytest.mark.parametrize("query", HOSTILE)
def test_fts_syntax_in_queries_is_plain_text(kb: KnowledgeBase, query: str) -> None:
    kb.search(query, 5)  # must not raise sqlite3.OperationalError
    assert kb.count() == len(SEED_DOCUMENTS)


def test_fts_query_quotes_every_term() -> None:
    assert fts_query('NEAR("a" b) OR x') == '"near" OR "b" OR "x"'
    assert fts_query("!!! ???") is None


def test_nothing_found_is_an_empty_list(kb: KnowledgeBase) -> None:
    assert kb.search("quantum teleportation", 5) == []


def test_seeding_twice_adds_nothing(tmp_path: Path) -> None:
    assert seed_knowledge_base(tmp_path / "k.db") == (len(SEED_DOCUMENTS), len(SEED_DOCUMENTS))
    assert seed_knowledge_base(tmp_path / "k.db") == (0, len(SEED_DOCUMENTS))


def test_add_rejects_empty_and_oversized_text(kb: KnowledgeBase) -> None:
    with pytest.raises(ValueError):
        kb.add("s", "   ")
    with pytest.raises(ValueError):
        kb.add("s", "x" * 20_001)


@pytest.mark.anyio
async def test_server_searches_adds_and_lists(connect: Connect, state: dict[str, str]) -> None:
    seed_knowledge_base(Path(state["CHECKREIN_KB_PATH"]))
    with anyio.fail_after(30):
        async with connect("knowledge") as client:
            found = await client.call_tool("search_documents", {"query": "running Shanghai months", "limit": 2})
            added = await client.call_tool("add_document", {"source": "notes/tea.md", "text": "Oolong brews at 90 C."})
            again = await client.call_tool("add_document", {"source": "notes/tea.md", "text": "Oolong brews at 90 C."})
            tea = await client.call_tool("search_documents", {"query": "oolong"})
            nothing = await client.call_tool("search_documents", {"query": "zebra crossing"})
            hostile = await client.call_tool("search_documents", {"query": 'NEAR(" OR *'})
            sources = await client.call_tool("list_sources", {})
            bad_limit = await client.call_tool("search_documents", {"query": "x", "limit": 100})
    data = json.loads(_text(found))
    assert data["count"] == 2 and data["results"][0]["source"] == "notes/running-in-shanghai.md"
    assert json.loads(_text(added))["added"] is True and json.loads(_text(again))["added"] is False
    assert json.loads(_text(tea))["results"][0]["source"] == "notes/tea.md"
    assert json.loads(_text(nothing)) == {"query": "zebra crossing", "count": 0, "results": [],
                                          "note": "no documents matched"}
    assert not hostile.is_error
    listed = json.loads(_text(sources))
    assert listed["total"] == len(SEED_DOCUMENTS) + 1
    assert {"source": "notes/tea.md", "documents": 1} in listed["sources"]
    assert bad_limit.is_error
