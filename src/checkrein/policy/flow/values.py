"""Values for provenance: how text is normalized, and which parts of an argument are traced.

Normalization (`normalize`): NFKC, case folded, every run of characters that are not letters or
digits becomes one space, and the result is padded with a space on each side. A value is then
"in" a text when its normalized form is a substring of the text's normalized form, so matches
respect word boundaries (``" mark black 2134 gmail com "`` is found in ``"... write to
mark.black-2134@gmail.com now"`` but ``" 13 "`` is not found in ``"2013"``), and punctuation and
case cannot hide a copied value (``US13 3000 ...`` vs ``us13-3000-...``). Codes (8+ letters and
digits, one a digit) are also compared with every space removed (`checkrein.policy.flow.rule`), so
regrouping (``GB29 NWBK 6016...`` vs ``GB29NWBK6016...``) cannot hide them either.

Which parts of an argument are traced (`candidates`), for each string (and large number) in it:

- the whole value, when it is long enough to mean something: at least ``min_chars`` letters and
  digits, and either two words or more, or a digit, ``@``, ``.``, ``/`` or ``:`` in it, or at
  least 10 letters and digits (a lone common word such as ``meeting`` is not traced);
- each atom inside it that steers where data goes: e-mail addresses, URLs and host names, IBANs
  and other long letter-digit codes, runs of 5+ digits (accounts, cards, phones), file names.

Numbers are traced when they have 5 or more digits (an account number sent as an integer).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import Any

__all__ = ["Candidate", "candidates", "leaves", "normalize", "useful"]

_NON_ALNUM = re.compile(r"[\W_]+", re.UNICODE)
_ATOMS = re.compile(
    r"""
      [\w.+-]+@[\w-]+(?:\.[\w-]+)+                      # e-mail address
    | (?:https?://|www\.)[^\s<>"'()\[\]{}]+             # URL
    | \b(?:[a-z0-9-]+\.)+(?:com|org|net|io|dev|app|co|uk|de|fr|info|biz|me|ai|xyz|us|eu)\b(?:/[^\s<>"']*)?  # host
    | \b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){10,30}\b          # IBAN
    | \b(?=[A-Za-z0-9-]*\d)(?=[A-Za-z0-9-]*[A-Za-z])[A-Za-z0-9-]{6,}\b   # letter-digit code
    | \d[\d ./-]{3,}\d                                  # long number (account, card, phone, date)
    | [\w-]+\.(?:txt|pdf|docx?|xlsx?|csv|json|md|pptx?|png|jpe?g|zip|sh|py|html?)\b  # file name
    """,
    re.VERBOSE | re.IGNORECASE,
)
_MAX_WHOLE_CHARS = 8192
"""Longer strings are traced by their atoms only."""

Candidate = tuple[str, str, str]
"""(JSON pointer of the argument, the value as sent (cut for messages), its normalized form)."""


# ASCII bytes -> themselves for letters and digits (lowercased), a space for everything else.
_ALNUM_OR_SPACE = bytes(
    (b | 0x20 if 0x41 <= b <= 0x5A else b) if chr(b).isascii() and chr(b).isalnum() else 0x20 for b in range(256)
)


def normalize(text: str) -> str:
    """The normalized, space-padded form of ``text`` (see the module docstring)."""
    if text.isascii():
        # NFKC leaves ASCII as it is and casefold lowercases it; `bytes.translate` and one split
        # do what the regex does (~15x faster on a 4 KB result; a test holds the two equal).
        core = b" ".join(text.encode("ascii").translate(_ALNUM_OR_SPACE).split()).decode("ascii")
        return f" {core} " if core else ""
    folded = unicodedata.normalize("NFKC", text).casefold()
    core = _NON_ALNUM.sub(" ", folded).strip()
    return f" {core} " if core else ""


def _alnum_count(norm: str) -> int:
    return len(norm) - norm.count(" ")


def useful(raw: str, norm: str, min_chars: int) -> bool:
    """Whether a whole value is specific enough to trace (see the module docstring)."""
    n = _alnum_count(norm)
    if n < min_chars:
        return False
    if norm.strip().count(" ") >= 1 or n >= 10:
        return True
    return any(c.isdigit() for c in raw) or any(c in raw for c in "@./:")


def _token(key: object) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def leaves(value: Any, pointer: str, depth: int = 0) -> Iterator[tuple[str, str]]:
    """(JSON pointer, text) of every string, and of every number of 5+ digits, in ``value``."""
    if depth > 64:
        return
    if isinstance(value, str):
        yield pointer, value
    elif isinstance(value, bool):
        return
    elif isinstance(value, int | float):
        text = repr(value) if isinstance(value, float) else str(value)
        if sum(c.isdigit() for c in text) >= 5:
            yield pointer, text
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, f"{pointer}/{_token(k)}", depth + 1)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from leaves(v, f"{pointer}/{i}", depth + 1)


def _shown(raw: str) -> str:
    return raw if len(raw) <= 120 else raw[:117] + "..."


def candidates(arguments: Any, min_chars: int) -> list[Candidate]:
    """Every traced part of ``arguments`` (deduplicated by pointer and normalized form)."""
    out: list[Candidate] = []
    seen: set[tuple[str, str]] = set()

    def add(pointer: str, raw: str, norm: str) -> None:
        if (pointer, norm) not in seen:
            seen.add((pointer, norm))
            out.append((pointer, _shown(raw), norm))

    for pointer, raw in leaves(arguments, ""):
        if len(raw) <= _MAX_WHOLE_CHARS:
            norm = normalize(raw)
            if norm and useful(raw, norm, min_chars):
                add(pointer, raw, norm)
        for m in _ATOMS.finditer(raw):
            atom = m.group().rstrip(".,;:!?")
            norm = normalize(atom)
            if norm and _alnum_count(norm) >= min_chars:
                add(pointer, atom, norm)
    return out
