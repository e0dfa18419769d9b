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

import re
from dataclasses import dataclass
from typing import Literal

from checkrein._factors import required_factors, required_literal
from checkrein._trie import TrieWordFinder, WordFinder

__all__ = ["NeedleIndex", "Phrase", "TrieWordFinder", "View", "WordFinder", "phrase", "required_factors"]


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
    requires: str = ""
    """A literal every match holds (`required_literal`), looked for as the needles are, once one
    of them let the phrase through: a needle says where to look, this says what must be there
    (`your ` for a directive about "your answer", where a needle is any word for an answer)."""


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
    requires = required_literal(regex)
    if len(requires.strip()) < 2 or (needles and all(requires in n for n in needles)):
        requires = ""  # too common to tell anything, or inside every needle (so there when one is)
    return Phrase(kind, weight, needles, regex, view, rule=rule or f"{kind}:{pattern[:40]}", requires=requires)


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
        `WordFinder` pass per view), and those without needles, in `phrases` order, less those whose
        required literal (`Phrase.requires`) does not occur there: found through
        the needles present, not by asking every phrase (most texts hold none, or a few, of the
        needles). ``text`` and ``folded`` are `normalize` views, where every whitespace run is one
        space or one ``\\n``: read so, a regex's ``\\s`` is the space of a needle."""
        text, folded = text.replace("\n", " "), folded.replace("\n", " ")
        in_text = self._finders["text"].present(text)
        in_folded = self._finders["folded"].present(folded)
        if not in_text and not in_folded and not self._always:
            return []
        owners_text, owners_folded = self._owners["text"], self._owners["folded"]
        at: set[int] = set(self._always)
        for n in in_text:
            at.update(owners_text[n])
        for n in in_folded:
            at.update(owners_folded[n])
        phrases = self.phrases
        found = [phrases[i] for i in sorted(at)]
        return [p for p in found if not p.requires or p.requires in (folded if p.view == "folded" else text)]
