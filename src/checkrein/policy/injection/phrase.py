"""`Phrase`: one regex signal behind cheap substring prefilters, with its weight."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["Phrase", "View", "phrase"]

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
