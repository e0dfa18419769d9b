"""The knowledge base behind the `knowledge` server: SQLite FTS5 with the `porter unicode61`
tokenizer, BM25 ranking and highlighted snippets.

User text never reaches FTS5 as query syntax: `fts_query` keeps only word characters, drops
common English stop words, and quotes each term, so `"`, `*`, `NEAR(`, `OR`, `-` and column
filters are plain words. Terms are OR-ed and BM25 does the ranking.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ._run import state_dir

__all__ = [
    "MAX_SOURCE_CHARS",
    "MAX_TEXT_CHARS",
    "Hit",
    "KnowledgeBase",
    "KnowledgeBaseUnavailable",
    "fts_query",
    "kb_path",
]

MAX_SOURCE_CHARS = 200
MAX_TEXT_CHARS = 20_000
MAX_TERMS = 16

_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset(
    "a about after all also an and any are as at be been but by can could did do does for from had has have "
    "how i if in into is it its me my no not of on or our should so than that the their them then there these "
    "they this to was we were what when where which while who why will with would you your".split()
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    id INTEGER PRIMARY KEY,
    source TEXT NOT NULL,
    text TEXT NOT NULL,
    sha256 TEXT NOT NULL UNIQUE,
    added_at TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS documents_fts USING fts5(
    source, text, content='documents', content_rowid='id', tokenize='porter unicode61'
);
CREATE TRIGGER IF NOT EXISTS documents_ai AFTER INSERT ON documents BEGIN
    INSERT INTO documents_fts(rowid, source, text) VALUES (new.id, new.source, new.text);
END;
CREATE TRIGGER IF NOT EXISTS documents_ad AFTER DELETE ON documents BEGIN
    INSERT INTO documents_fts(documents_fts, rowid, source, text) VALUES ('delete', old.id, old.source, old.text);
END;
"""


def kb_path() -> Path:
    """``$CHECKREIN_KB_PATH``, else ``<state dir>/knowledge.db``."""
    raw = os.environ.get("CHECKREIN_KB_PATH")
    return Path(raw) if raw else state_dir() / "knowledge.db"


def fts_query(text: str) -> str | None:
    """A safe FTS5 MATCH expression for free text, or ``None`` when no searchable word is left. Pure."""
    words = [w.casefold() for w in _WORD.findall(text)]
    terms: list[str] = []
    for w in words:
        if w in _STOP or w in terms or len(w) > 64:
            continue
        terms.append(w)
    if not terms:
        # A query made only of stop words still deserves an answer.
        terms = list(dict.fromkeys(w for w in words if len(w) <= 64))
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms[:MAX_TERMS])


@dataclass(frozen=True)
class Hit:
    id: int
    source: str
    snippet: str
    score: float
    """BM25 relevance, higher is better (SQLite's bm25() negated)."""


class KnowledgeBaseUnavailable(RuntimeError):
    """The database file cannot be created or opened (missing directory, not a SQLite file, a
    directory, no FTS5); the message says which and is safe to print."""


class KnowledgeBase:
    """One SQLite file. Not thread-safe: use one instance per thread."""

    def __init__(self, path: Path) -> None:
        """Open (or create) the database at ``path``; raises `KnowledgeBaseUnavailable`."""
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path)
        except (OSError, sqlite3.Error) as exc:
            raise KnowledgeBaseUnavailable(getattr(exc, "strerror", None) or str(exc)) from None
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            self._db.close()
            raise KnowledgeBaseUnavailable(str(exc)) from None

    def close(self) -> None:
        self._db.close()

    def add(self, source: str, text: str) -> tuple[int, bool]:
        """Store a document; returns ``(id, added)`` where ``added`` is False for an exact duplicate.

        Raises ``ValueError`` for an empty or oversized source or text.
        """
        source, text = source.strip(), text.strip()
        if not source or len(source) > MAX_SOURCE_CHARS:
            raise ValueError(f"source must be 1..{MAX_SOURCE_CHARS} characters")
        if not text or len(text) > MAX_TEXT_CHARS:
            raise ValueError(f"text must be 1..{MAX_TEXT_CHARS} characters")
        digest = hashlib.sha256(f"{source}\x00{text}".encode()).hexdigest()
        with self._db:
            row = self._db.execute("SELECT id FROM documents WHERE sha256 = ?", (digest,)).fetchone()
            if row is not None:
                return int(row[0]), False
            now = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
            cur = self._db.execute(
                "INSERT INTO documents(source, text, sha256, added_at) VALUES (?, ?, ?, ?)",
                (source, text, digest, now),
            )
        return int(cur.lastrowid or 0), True

    def add_many(self, documents: Iterable[tuple[str, str]]) -> int:
        """Add ``(source, text)`` pairs; returns how many were new."""
        return sum(1 for source, text in documents if self.add(source, text)[1])

    def search(self, query: str, limit: int = 5) -> list[Hit]:
        """The best ``limit`` documents for ``query`` by BM25, with ``**highlighted**`` snippets."""
        match = fts_query(query)
        if match is None:
            return []
        rows = self._db.execute(
            "SELECT rowid, source, snippet(documents_fts, 1, '**', '**', ' … ', 24), bm25(documents_fts) "
            "FROM documents_fts WHERE documents_fts MATCH ? ORDER BY bm25(documents_fts) LIMIT ?",
            (match, max(1, min(limit, 50))),
        ).fetchall()
        return [Hit(int(r[0]), str(r[1]), str(r[2]), round(-float(r[3]), 4)) for r in rows]

    def sources(self) -> list[tuple[str, int]]:
        """``(source, number of documents)`` sorted by source."""
        rows = self._db.execute("SELECT source, count(*) FROM documents GROUP BY source ORDER BY source").fetchall()
        return [(str(r[0]), int(r[1])) for r in rows]

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM documents").fetchone()[0])
