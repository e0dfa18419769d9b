"""`Phrase`: one regex signal behind cheap substring prefilters, with its weight; `WordFinder`:
which of a set of literal words occur in a text, in one compiled Aho-Corasick pass.

The prefilter must never find less than the regex: every string a phrase's regex matches in its
view must hold one of the phrase's needles in the view the needles are looked for in. Needles are
looked for with each ``\\n`` read as a space (`NeedleIndex.candidates`): in the `normalize` views
every whitespace run is one space or one ``\\n``, so a regex's ``\\s`` or ``\\s+`` is one space
there, as in the needles. And `phrase` adds to the hand-written needles the literal factors it
derives from the regex itself (`required_factors`) that no hand-written needle is inside, so an
alternative the hand-written needles forgot still has one; a regex without such factors has no
needles and always runs.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import Any, Literal

from checkrein._trie import TrieWordFinder, WordFinder

__all__ = ["NeedleIndex", "Phrase", "TrieWordFinder", "View", "WordFinder", "phrase", "required_factors"]

_PARSER: Any = importlib.import_module("re._parser")  # `re`'s own parser (no stub: typed as Any)


View = Literal["text", "folded"]


@dataclass(frozen=True, slots=True)
class Phrase:
    kind: str
    weight: float
    needles: tuple[str, ...]
    """Lowercase substrings of which at least one must occur (each newline read as a space) before
    the regex runs; none: the regex runs on every text."""
    regex: re.Pattern[str]
    view: View = "folded"
    rule: str = ""


def phrase(
    kind: str, weight: float, needles: tuple[str, ...], pattern: str, view: View = "folded", rule: str = ""
) -> Phrase:
    """A `Phrase` whose needles are ``needles`` plus each factor `required_factors` derives from
    ``pattern`` that none of ``needles`` is inside (no needles at all when it derives none), less
    each needle another one is inside (the shorter one occurs wherever the longer does)."""
    regex = re.compile(pattern)
    factors = required_factors(regex)
    if factors is None:
        needles = ()
    else:
        needles += tuple(sorted(f for f in factors if not any(n in f for n in needles)))
        needles = tuple(n for n in dict.fromkeys(needles) if not any(m in n and m != n for m in needles))
    return Phrase(kind, weight, needles, regex, view, rule=rule or f"{kind}:{pattern[:40]}")


_EXACT_MAX = 256
"""Strings a piece of a regex is spelled out as before only its factors are kept."""
_Strings = frozenset[str]
_Info = tuple[_Strings | None, _Strings | None]
"""(every string the piece matches, if few; strings one of which every match holds, if any)."""


def _space(c: str) -> str:
    return " " if c.isspace() else c


def _squeeze(s: str) -> str:
    while "  " in s:
        s = s.replace("  ", " ")
    return s


def _as_factors(strings: _Strings | None) -> _Strings | None:
    return strings if strings and "" not in strings else None


def _better(a: _Strings | None, b: _Strings | None) -> _Strings | None:
    """The more selective of two factor sets: longer shortest string, then longer strings on average."""
    if a is None or b is None:
        return a if b is None else b
    score_a = (min(map(len, a)), sum(map(len, a)) / len(a))
    return a if score_a >= (min(map(len, b)), sum(map(len, b)) / len(b)) else b


def _chars(items: Any) -> _Strings | None:
    """The characters a class (``[...]``, ``\\s``) matches, when it is a few literal ones."""
    out: set[str] = set()
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            out.add(_space(chr(av)))
        elif name == "CATEGORY" and str(av) == "CATEGORY_SPACE":
            out.add(" ")
        elif name == "RANGE" and av[1] - av[0] < 16:
            out.update(_space(chr(c)) for c in range(av[0], av[1] + 1))
        else:  # a negated class, \\w, \\d, a wide range
            return None
    return frozenset(out) if len(out) <= 16 else None


def _sequence(items: Any) -> _Info:
    """A concatenation: runs of spelled-out pieces multiplied out; the best factor set of any piece or run."""
    best: _Strings | None = None
    run: _Strings = frozenset({""})
    whole = True
    for op, av in items:
        exact, factors = _piece(str(op), av)
        if exact is not None and len(run) * len(exact) <= _EXACT_MAX:
            run = frozenset(_squeeze(a + b) for a in run for b in exact)
            continue
        whole = False
        best = _better(best, _as_factors(run))
        best = _better(best, factors if exact is None else _as_factors(exact))
        run = frozenset({""}) if exact is None else exact
    best = _better(best, _as_factors(run))
    return (run if whole else None), best


def _piece(name: str, av: Any) -> _Info:
    """One node of a parsed regex (`re._parser`), in the needle view (whitespace is one space)."""
    exact: _Strings | None
    if name == "LITERAL":
        exact = frozenset({_space(chr(av))})
        return exact, exact
    if name == "IN":
        exact = _chars(av)
        return exact, exact
    if name in {"AT", "ASSERT", "ASSERT_NOT"}:  # zero width: nothing of the match
        return frozenset({""}), None
    if name == "SUBPATTERN":
        _, add_flags, del_flags, sub = av
        return _sequence(sub) if not add_flags and not del_flags else (None, None)
    if name == "ATOMIC_GROUP":
        return _sequence(av)
    if name == "BRANCH":
        infos = [_sequence(sub) for sub in av[1]]
        exacts = [e for e, _ in infos if e is not None]
        exact = None
        if len(exacts) == len(infos) and sum(map(len, exacts)) <= _EXACT_MAX:
            exact = frozenset().union(*exacts)
        branch_factors = [f if e is None else _as_factors(e) for e, f in infos]
        if any(f is None for f in branch_factors):
            return exact, None
        return exact, frozenset().union(*(f for f in branch_factors if f is not None))
    if name in {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}:
        lo, hi, sub = av
        exact, factors = _sequence(sub)
        if exact is not None and exact <= {"", " "}:  # whitespace runs are one character
            return (frozenset({"", " "}) if lo == 0 or "" in exact else frozenset({" "})), None
        if exact is not None and hi <= 8 and len(exact) ** hi <= _EXACT_MAX:  # "#{2,4}": "##", "###", "####"
            power, powers = frozenset({""}), set[str]()
            for k in range(hi + 1):
                if k >= lo:
                    powers |= power
                power = frozenset(_squeeze(a + b) for a in power for b in exact)
            return frozenset(powers), _as_factors(frozenset(powers))
        if exact is not None and lo == 0 and hi == 1:
            return exact | {""}, None
        if lo >= 1:
            return None, factors if exact is None else _as_factors(exact)
        return None, None
    return None, None  # any character, a negated literal, a group reference


def required_factors(regex: re.Pattern[str]) -> frozenset[str] | None:
    """Strings of which every match of ``regex`` holds one, read in the needle view (each
    whitespace run one space), or ``None`` when it has none (the regex matches the empty string,
    or what it must hold is not literal). Derived from `re`'s parse of the pattern: a literal is
    itself, a class of a few characters those characters, concatenations are multiplied out while
    small, an alternation needs a factor in every branch, a repeat of at least one copy holds a
    copy's factor, and anything else (``.``, ``\\w``, a negated class) holds nothing known."""
    if regex.flags & (re.IGNORECASE | re.VERBOSE):
        return None
    exact, factors = _sequence(_PARSER.parse(regex.pattern, regex.flags & ~re.UNICODE))
    return _as_factors(exact) if exact is not None else factors


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
        self._always = tuple(i for i, p in enumerate(phrases) if not p.needles)
        """The phrases without needles: they run on every text."""
        self._owners: dict[View, dict[str, tuple[int, ...]]] = {"text": {}, "folded": {}}
        """Per view, needle -> the positions in `phrases` of the phrases that carry it."""
        for view, owners in self._owners.items():
            for n in self._needles[view]:
                owners[n] = tuple(i for i, p in enumerate(phrases) if p.view == view and n in p.needles)

    def candidates(self, text: str, folded: str) -> list[Phrase]:
        """The phrases whose needles occur in their view with each ``\\n`` read as a space (one
        `WordFinder` pass per view), and those without needles, in `phrases` order: found through
        the needles present, not by asking every phrase (most texts hold none, or a few, of the
        needles). ``text`` and ``folded`` are `normalize` views, where every whitespace run is one
        space or one ``\\n``: read so, a regex's ``\\s`` is the space of a needle."""
        in_text = self._finders["text"].present(text.replace("\n", " "))
        in_folded = self._finders["folded"].present(folded.replace("\n", " "))
        if not in_text and not in_folded and not self._always:
            return []
        owners_text, owners_folded = self._owners["text"], self._owners["folded"]
        at: set[int] = set(self._always)
        for n in in_text:
            at.update(owners_text[n])
        for n in in_folded:
            at.update(owners_folded[n])
        phrases = self.phrases
        return [phrases[i] for i in sorted(at)]
