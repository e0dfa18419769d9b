"""`Phrase`: one regex signal behind cheap substring prefilters, with its weight; `WordFinder`:
which of a set of literal words occur in a text, in one compiled Aho-Corasick pass."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import ahocorasick_rs

from checkrein._trie import trie_regex

__all__ = ["NeedleIndex", "Phrase", "TrieWordFinder", "View", "WordFinder", "phrase"]


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


View = Literal["text", "folded"]


@dataclass(frozen=True, slots=True)
class Phrase:
    kind: str
    weight: float
    needles: tuple[str, ...]
    """Lowercase substrings of which at least one must occur before the regex runs."""
    regex: re.Pattern[str]
    view: View = "folded"
    rule: str = ""


def phrase(
    kind: str, weight: float, needles: tuple[str, ...], pattern: str, view: View = "folded", rule: str = ""
) -> Phrase:
    return Phrase(kind, weight, needles, re.compile(pattern), view, rule=rule or f"{kind}:{pattern[:40]}")


class NeedleIndex:
    """Which phrases can match a text: each distinct needle is looked up once per view (a C-level
    substring search), and only phrases with a needle present run their regex."""

    def __init__(self, phrases: tuple[Phrase, ...]) -> None:
        self.phrases = phrases
        self._needles = {
            view: tuple(sorted({n for p in phrases if p.view == view for n in p.needles}))
            for view in ("text", "folded")
        }
        self._finders = {view: WordFinder(needles) for view, needles in self._needles.items()}
        self._owners: dict[View, dict[str, tuple[int, ...]]] = {"text": {}, "folded": {}}
        """Per view, needle -> the positions in `phrases` of the phrases that carry it."""
        for view, owners in self._owners.items():
            for n in self._needles[view]:
                owners[n] = tuple(i for i, p in enumerate(phrases) if p.view == view and n in p.needles)

    def candidates(self, text: str, folded: str) -> list[Phrase]:
        """The phrases whose needles occur in their view (one `WordFinder` pass per view), in
        `phrases` order: found through the needles present, not by asking every phrase (most
        texts hold none, or a few, of the needles)."""
        in_text = self._finders["text"].present(text)
        in_folded = self._finders["folded"].present(folded)
        if not in_text and not in_folded:
            return []
        owners_text, owners_folded = self._owners["text"], self._owners["folded"]
        at: set[int] = set()
        for n in in_text:
            at.update(owners_text[n])
        for n in in_folded:
            at.update(owners_folded[n])
        phrases = self.phrases
        return [phrases[i] for i in sorted(at)]
