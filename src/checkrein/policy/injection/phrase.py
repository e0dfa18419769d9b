"""`Phrase`: one regex signal behind cheap substring prefilters, with its weight."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["NeedleIndex", "Phrase", "View", "phrase"]

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

    def candidates(self, text: str, folded: str) -> list[Phrase]:
        """The phrases whose needles occur in their view."""
        in_text = {n for n in self._needles["text"] if n in text}
        in_folded = {n for n in self._needles["folded"] if n in folded}
        return [
            p
            for p in self.phrases
            if not (in_folded if p.view == "folded" else in_text).isdisjoint(p.needles)
        ]
