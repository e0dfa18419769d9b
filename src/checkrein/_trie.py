"""`trie_regex`: one regex for a set of literal words, factored as a trie; `WordFinder`: which of a
set of words occur in a text, and where, in one compiled Aho-Corasick pass.

Shared by the secrets analyzer (`policy/analyzers/secrets.py`) and the audit's built-in secret
prefilter (`audit/secrets.py`), which may not import each other. Python's `re` tries the
alternatives of a flat `a|b|c` one by one at every position; a trie costs one character test per
branch instead (~2.5x faster measured on tool-result text).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import ahocorasick_rs

__all__ = ["LiteralStarts", "TrieWordFinder", "WordFinder", "trie_regex"]


def trie_regex(words: Iterable[str]) -> str:
    """A regex matching, at each position, the longest of ``words`` that starts there."""
    trie: dict[str, Any] = {}
    for w in words:
        node = trie
        for c in w:
            node = node.setdefault(c, {})
        node[""] = {}

    def build(node: dict[str, Any]) -> str:
        branches = [re.escape(c) + build(child) for c, child in sorted(node.items()) if c]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if "" in node:  # a word ends here: prefer the longer words below, else stop
            return (body if len(branches) > 1 else "(?:" + body + ")") + "?"
        return body

    return build(trie)


class TrieWordFinder:
    """The set of ``words`` that occur in a text (as substrings), in one left-to-right regex pass
    instead of one substring search per word: the general finder, kept as `WordFinder`'s reference
    and for texts the compiled matcher cannot take (lone surrogates, which UTF-8 cannot encode).

    Exact: a zero-width lookahead tries the trie of every word at every position and captures the
    longest word starting there; every word that also starts there is a prefix of it, and every
    word inside a found word occurs too, so each found word brings its `_inside` closure (the
    words it contains). A word occurring at some position is therefore always reported."""

    def __init__(self, words: Iterable[str]) -> None:
        self.words = tuple(sorted({w for w in words if w}))
        self._regex = re.compile("(?=(" + trie_regex(self.words) + "))") if self.words else None
        self._inside = {w: frozenset(v for v in self.words if v in w) for w in self.words}

    def present(self, text: str) -> set[str]:
        """The words of this finder that occur in ``text`` (the same as ``{w for w in words if w in text}``)."""
        found: set[str] = set()
        if self._regex is None:
            return found
        inside = self._inside
        for hit in set(self._regex.findall(text)):
            found |= inside[hit]
        return found


class WordFinder:
    """The set of ``words`` that occur in a text (as substrings), by a compiled Aho-Corasick
    automaton (`ahocorasick_rs`, Rust): every occurrence of every word, overlapping, in one pass at
    ~5-12 ns per character where `TrieWordFinder`'s regex costs ~90-140.

    Exact: an overlapping standard search reports each (word, position) at which a word occurs,
    so the set of reported words is the set of words that occur. The automaton matches UTF-8
    bytes; a text with a lone surrogate (not encodable) goes to `TrieWordFinder` instead, built
    on first need (its closure of words inside words is quadratic in the number of words)."""

    DFA_MAX_WORDS = 2000
    """A DFA is ~2x faster to search than the NFA but slower to build: ~70 ms for 10,000 words."""

    def __init__(self, words: Iterable[str]) -> None:
        self.words = tuple(sorted({w for w in words if w}))
        self._general: TrieWordFinder | None = None
        implementation = ahocorasick_rs.Implementation.DFA if len(self.words) <= self.DFA_MAX_WORDS else None
        self._automaton = (
            ahocorasick_rs.AhoCorasick(self.words, implementation=implementation, store_patterns=True)
            if self.words
            else None
        )

    def present(self, text: str) -> set[str]:
        """The words of this finder that occur in ``text`` (the same as ``{w for w in words if w in text}``)."""
        if self._automaton is None:
            return set()
        try:
            return set(self._automaton.find_matches_as_strings(text, overlapping=True))
        except UnicodeEncodeError:  # a lone surrogate: the regex finder takes any str
            if self._general is None:
                self._general = TrieWordFinder(self.words)
            return self._general.present(text)

    def occurs(self, text: str) -> bool:
        """Whether one of the words occurs in ``text``."""
        if self._automaton is None:
            return False
        try:
            return bool(self._automaton.find_matches_as_indexes(text))
        except UnicodeEncodeError:
            return any(map(text.__contains__, self.words))

    def starts(self, text: str) -> list[int]:
        """Every position of ``text`` at which one of the words starts, ascending, each once."""
        if self._automaton is None:
            return []
        try:
            found = self._automaton.find_matches_as_indexes(text, overlapping=True)
        except UnicodeEncodeError:  # a lone surrogate: one substring search per word
            out: set[int] = set()
            for w in self.words:
                i = text.find(w)
                while i != -1:
                    out.add(i)
                    i = text.find(w, i + 1)
            return sorted(out)
        return sorted({start for _, start, _ in found})


class LiteralStarts:
    """``regex`` searched only where a match can start: for a regex each of whose matches in an
    ASCII text begins where one of ``stems`` (lowercase) begins in the lowercased text (such as a
    case-insensitive alternation of keywords). Python's `re` has no fast scan for a pattern that
    opens with `(?i)` or a lookbehind and tries it at every position (~0.3-0.5 us per character
    measured for the secrets analyzer's keyword regex); here one Aho-Corasick pass finds the
    candidate positions and the regex is tried only there. Lookbehinds still see the text before
    a candidate (`re.Pattern.match` with ``pos``). Text that is not ASCII is searched with the
    regex itself (case folding can match a non-ASCII character to an ASCII letter: `K`, `ſ`).

    Exact under that condition, and for a regex that never matches the empty string: the first
    candidate at or after ``pos`` where the regex matches is where `regex.search(text, pos)`
    matches, and the match is the same."""

    def __init__(self, regex: re.Pattern[str], stems: Iterable[str]) -> None:
        self.regex = regex
        self.stems = tuple(sorted(set(stems)))
        self._finder = WordFinder(self.stems)

    def searcher(self, text: str) -> Callable[[int], re.Match[str] | None]:
        """``pos -> regex.search(text, pos)``."""
        regex = self.regex
        if not text.isascii():
            return lambda pos: regex.search(text, pos)
        starts = self._finder.starts(text.lower())
        match = regex.match

        def search(pos: int) -> re.Match[str] | None:
            for i in range(bisect_left(starts, pos), len(starts)):
                m = match(text, starts[i])
                if m is not None:
                    return m
            return None

        return search

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """`regex.finditer(text)`."""
        if not text.isascii():
            yield from self.regex.finditer(text)
            return
        search = self.searcher(text)
        pos = 0
        while (m := search(pos)) is not None:
            yield m
            pos = m.end()
