"""Withhold only the flagged fields of a result, when that is enough.

A tool that returns JSON (an incident snapshot, a ticket, a record) often carries one untrusted
field (a user comment, an observation scraped from elsewhere) beside trusted facts. Withholding
the whole result to stop an injection in one field also throws the facts away. Here each string
that reads as an injection is replaced by a marker (a flagged key by a marker key): fields of
structured content, ``_meta``, resource links and annotations directly, and the strings inside a
text (or text blob) that is itself a JSON document. Then the WHOLE remaining result is checked
again; if any signal survives (an instruction split across fields or blocks, flagged prose that is
not JSON), the caller withholds the whole result. So no flagged text reaches the model either way.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from checkrein.policy.decision import Finding
from checkrein.policy.result_walk import JsonPath, Piece, Walk, pointer, rebuild

__all__ = ["WITHHELD_MARKER", "Scan", "unique_key", "withhold_flagged_fields"]

WITHHELD_MARKER = "[withheld by checkrein: this field contained instructions addressed to the AI]"

Detector = Callable[[str], list[Finding]]
Encoder = Callable[[Piece, str], str]
"""``(piece, new text) -> the JSON string at the piece's place`` (base64 for a blob)."""


@dataclass
class Scan:
    """Where injection signals were found: single pieces, whole units (signals split across the
    fields of one region) and the stream (split across adjacent texts), by walk index."""

    pieces: dict[int, list[Finding]] = field(default_factory=dict)
    units: dict[int, list[Finding]] = field(default_factory=dict)
    stream: list[Finding] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.pieces or self.units or self.stream)

    def findings(self) -> list[Finding]:
        out = [f for fs in self.pieces.values() for f in fs]
        out += [f for fs in self.units.values() for f in fs]
        return out + self.stream


def unique_key(new: str, siblings: Mapping[str, Any], taken: Mapping[str, str]) -> str:
    """``new``, suffixed when another member already has (or is renamed to) that name: two keys
    masked alike must not collapse into one and lose a value."""
    used = set(siblings) | set(taken.values())
    if new not in used:
        return new
    n = 2
    while f"{new} ({n})" in used:
        n += 1
    return f"{new} ({n})"


def _json_container(text: str) -> Any | None:
    s = text.lstrip()
    if not s.startswith(("{", "[")):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict | list) else None


def _scrub(value: Any, detect: Detector, base: str, withheld: list[str], depth: int = 0) -> Any:
    """``value`` (parsed from a text) with every flagged string and key replaced by the marker."""
    if depth > 64:
        raise ValueError("too deep")
    if isinstance(value, str):
        if detect(value):
            withheld.append(base)
            return WITHHELD_MARKER
        return value
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            ptr = f"{base}/{pointer((k,))[1:]}"
            name = k
            if detect(k):
                withheld.append(ptr)
                name = unique_key(WITHHELD_MARKER, out, {})
            out[name] = _scrub(v, detect, ptr, withheld, depth + 1)
        return out
    if isinstance(value, list):
        return [_scrub(v, detect, f"{base}/{i}", withheld, depth + 1) for i, v in enumerate(value)]
    return value


def withhold_flagged_fields(
    walk: Walk,
    value: Any,
    scan: Scan,
    detect: Detector,
    clean: Callable[[Any], bool],
    encode: Encoder,
) -> tuple[Any, tuple[str, ...]] | None:
    """``(value with every flagged field replaced by `WITHHELD_MARKER`, their pointers)``, or
    ``None`` when that does not leave a result that ``clean`` accepts (then withhold it all).

    Pointers inside a JSON text are the text's pointer followed by the pointer inside the document.
    """
    if scan.units or scan.stream:
        return None  # the signal is spread over fields or blocks: nothing single to cut
    values: dict[JsonPath, Any] = {}
    renames: dict[JsonPath, dict[str, str]] = {}
    withheld: list[str] = []
    for i in sorted(scan.pieces):
        piece = walk.pieces[i]
        ptr = pointer(piece.path)
        if piece.where in ("prose", "blob"):
            parsed = _json_container(piece.text)
            if parsed is None:
                return None  # flagged prose: there is no field to cut out
            inner: list[str] = []
            try:
                scrubbed = _scrub(parsed, detect, ptr, inner)
            except ValueError:
                return None
            if not inner:
                return None
            withheld += inner
            values[piece.path] = encode(piece, json.dumps(scrubbed, ensure_ascii=False))
        elif piece.where == "key":
            names = renames.setdefault(piece.path[:-1], {})
            parent = _parent(value, piece.path)
            key = piece.path[-1]
            assert isinstance(key, str)
            names[key] = unique_key(WITHHELD_MARKER, parent, names)
            withheld.append(ptr)
        else:
            values[piece.path] = WITHHELD_MARKER
            withheld.append(ptr)
    new = rebuild(value, values, renames)
    # The proof: nothing flagged may remain anywhere, alone, across fields or across blocks.
    if not withheld or not clean(new):
        return None
    return new, tuple(withheld)


def _parent(value: Any, path: JsonPath) -> Mapping[str, Any]:
    for step in path[:-1]:
        value = value[step]
    return value if isinstance(value, dict) else {}
