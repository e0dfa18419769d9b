"""Withhold only the flagged fields of a JSON result, when that is enough.

A tool that returns JSON (an incident snapshot, a ticket, a record) often carries one untrusted
field (a user comment, an observation scraped from elsewhere) beside trusted facts. Withholding
the whole result to stop an injection in one field also throws the facts away. Here each string
that reads as an injection is replaced by a marker, then the WHOLE remaining result is checked
again; if any signal survives (e.g. an instruction split across fields, or text that is not
JSON), the caller withholds the whole result. So no flagged text reaches the model either way.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from checkrein.policy.decision import Finding

__all__ = ["WITHHELD_MARKER", "withhold_flagged_fields"]

WITHHELD_MARKER = "[withheld by checkrein: this field contained instructions addressed to the AI]"

Detector = Callable[[str], list[Finding]]
MapStrings = Callable[[Any, Callable[[str, str], str], str], Any]


def _json_container(text: str) -> Any | None:
    s = text.lstrip()
    if not s.startswith(("{", "[")):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict | list) else None


def withhold_flagged_fields(
    texts: tuple[str, ...],
    structured: Any | None,
    detect: Detector,
    map_strings: MapStrings,
    structured_root: str,
) -> tuple[tuple[str, ...], Any | None, tuple[str, ...]] | None:
    """``(texts, structured, withheld pointers)`` with every flagged JSON string replaced by
    `WITHHELD_MARKER`, or ``None`` when that does not leave a clean result (then withhold it all).

    Pointers are ``/content/<i>/<json pointer>`` and ``<structured_root>/<json pointer>``.
    """
    withheld: list[str] = []

    def scrub(pointer: str, value: str) -> str:
        if detect(value):
            withheld.append(pointer)
            return WITHHELD_MARKER
        return value

    new_texts: list[str] = []
    for i, text in enumerate(texts):
        if not detect(text):
            new_texts.append(text)
            continue
        parsed = _json_container(text)
        if parsed is None:
            return None  # flagged prose: there is no field to cut out
        new_texts.append(json.dumps(map_strings(parsed, scrub, f"/content/{i}"), ensure_ascii=False))
    new_structured = map_strings(structured, scrub, structured_root) if structured is not None else None
    # The proof: nothing flagged may remain anywhere, alone or across fields.
    if any(detect(t) for t in new_texts):
        return None
    if new_structured is not None and detect(json.dumps(new_structured, ensure_ascii=False)):
        return None
    if not withheld:
        return None  # the signal was spread over fields; nothing single to cut
    return tuple(new_texts), new_structured, tuple(withheld)
