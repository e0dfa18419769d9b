"""`AnyMatch`: whether a regex matches anywhere in a text, asked of its top-level branches one by
one and only when one of a branch's literal factors occurs.

Python's `re` has no fast scan for a pattern that opens with `\\b`, a lookbehind or an
alternation, and tries it at every position (~0.1-0.8 ms per 4 KB of text each, measured on the
SQL and shell analyzers' patterns). A branch's factors (`required_factors`: strings one of which
each of its matches holds) are looked for in one Aho-Corasick pass, and a branch none of whose
factors occurs cannot match. Exact for the question asked (does the pattern match somewhere):
the pattern matches iff one of its branches does. Factors are read with every whitespace run as
one space, so a gate is exact on text without a whitespace character other than a lone space
(`normalize_sql` output) or on patterns whose factors hold no space (`AnyMatch` checks that when
``spaced`` is False). A branch that passes its factors and opens with a zero-width assertion
(``\b``) is tried only where one of its openings (`match_openings`) begins (`LiteralStarts`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from checkrein._factors import match_openings, opens_with_assertion, required_factors
from checkrein._trie import LiteralStarts, WordFinder

__all__ = ["AnyMatch", "top_branches"]


def top_branches(pattern: str) -> list[str]:
    """``pattern`` split at its top-level ``|`` (outside groups and classes)."""
    out: list[str] = []
    depth, in_class, i, start = 0, False, 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                i += 1
            if pattern[i + 1 : i + 2] == "]":
                i += 1  # a `]` first in a class is literal
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            out.append(pattern[start:i])
            start = i + 1
        i += 1
    out.append(pattern[start:])
    return out


class AnyMatch:
    """``any(regex.search(text) is not None)`` over several regexes' branches, sharing one factor
    pass per text: `search(text)` gives a `Probe`, and ``probe(i)`` answers for ``regexes[i]``.

    ``spaced``: the texts asked about have no whitespace but single spaces (else every factor
    must be free of whitespace, checked here, since a factor's space stands for any run)."""

    def __init__(self, regexes: Iterable[re.Pattern[str]], *, spaced: bool = False) -> None:
        self.regexes = tuple(regexes)
        self.branches: tuple[tuple[tuple[re.Pattern[str], frozenset[str] | None], ...], ...] = tuple(
            tuple((b, required_factors(b)) for b in (re.compile(t, rx.flags) for t in top_branches(rx.pattern))) for rx in self.regexes
        )
        if not spaced:
            self.branches = tuple(
                tuple((b, None if f is None or any(" " in x for x in f) else f) for b, f in branches) for branches in self.branches
            )
        self._finder = WordFinder({x for branches in self.branches for _, f in branches if f for x in f})
        self.starts: tuple[tuple[LiteralStarts | None, ...], ...] = tuple(
            tuple(_starts(b, spaced) for b, _ in branches) for branches in self.branches
        )

    def search(self, text: str) -> Probe:
        return Probe(self, text)


class Probe:
    """The regexes of one `AnyMatch`, asked of one text (the factor pass runs once, on first need)."""

    __slots__ = ("_gate", "_present", "_text")

    def __init__(self, gate: AnyMatch, text: str) -> None:
        self._gate = gate
        self._text = text
        self._present: set[str] | None = None

    def __call__(self, index: int) -> bool:
        """Whether ``regexes[index]`` matches somewhere in the text."""
        text = self._text
        for (branch, factors), starts in zip(self._gate.branches[index], self._gate.starts[index], strict=True):
            if factors is not None:
                if self._present is None:
                    self._present = self._gate._finder.present(text)
                if self._present.isdisjoint(factors):
                    continue
            if (branch.search(text) if starts is None else starts.searcher(text)(0)) is not None:
                return True
        return False


def _starts(branch: re.Pattern[str], spaced: bool) -> LiteralStarts | None:
    """A `LiteralStarts` for a branch that opens with a zero-width assertion (which `re` tries at
    every position) and whose matches start with one of a few strings of two characters or more
    (cut to eight characters, each kept only when no shorter one opens it; without a space unless
    ``spaced``). (Searching the branch without its ``\\b`` and testing the boundary by hand was
    measured slower: `re` does not scan ahead for an alternation such as ``(?:or|and)`` either.)"""
    openings = match_openings(branch) if opens_with_assertion(branch) else None
    if openings is None:
        return None
    stems = {o.lower()[:8] for o in openings}  # a prefix of an opening opens the match too
    stems = {o for o in stems if not any(o != t and o.startswith(t) for t in stems)}
    if min(map(len, stems)) < 2 or len(stems) > 64 or (not spaced and any(" " in o for o in stems)):
        return None
    return LiteralStarts(branch, stems)
