"""One normalization pass over a tool result before any injection signal looks at it.

The detector never matches the raw text: it matches `Views` built once per text, so that case,
width, escapes, invisible characters and look-alike letters cannot hide a phrase. Everything here
is linear in the input (C-level `str` methods and regexes without nested quantifiers).
"""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass

__all__ = ["Hidden", "Views", "normalize"]

# Zero-width and other default-ignorable characters that render as nothing.
_INVISIBLE = (
    "\u00ad\u034f\u115f\u1160\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\u3164\ufeff\uffa0"
)
# Bidirectional controls: they reorder what a human sees without changing what a model reads.
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_INVISIBLE_RE = re.compile(f"[{_INVISIBLE}]")
_BIDI_RE = re.compile(f"[{_BIDI}]")
_ZW_INSIDE_WORD_RE = re.compile(f"[A-Za-z][{_INVISIBLE}]+[A-Za-z]")
_DELETE = dict.fromkeys(map(ord, _INVISIBLE + _BIDI))
# Unicode tag characters (U+E0000-U+E007F) mirror ASCII and are invisible: "ASCII smuggling".
_TAG_RUN_RE = re.compile("[\U000e0000-\U000e007f]+")
_FLAG_BASE = "\U0001f3f4"  # black flag: tag sequences after it are subdivision flags (e.g. Scotland)

_ESCAPE_RE = re.compile(r"\\u([0-9a-fA-F]{4})|\\U([0-9a-fA-F]{8})|\\x([0-9a-fA-F]{2})|\\([nrt])")
_CONTROL_ESCAPES = {"n": "\n", "r": "\n", "t": " "}
# Only runs that need a change match (a lone space is left alone), so ordinary text costs no substitutions.
_SPACES_RE = re.compile(r"[^\S\n]{2,}|[^\S\n ]")
_NEWLINES_RE = re.compile(r" ?\n\s+| \n")
# The ASCII whitespace other than space and newline (`\s` of a `str` pattern: `str.isspace`).
_ODD_ASCII_SPACES = "\t\r\x0b\x0c\x1c\x1d\x1e\x1f"
_ODD_TO_SPACE = str.maketrans(dict.fromkeys(_ODD_ASCII_SPACES, " "))


def _collapse(s: str) -> str:
    """`_SPACES_RE` then `_NEWLINES_RE` substitutions, skipped when they cannot match (exact).

    In ASCII text `_SPACES_RE` matches only a double space or an odd whitespace character; after
    it, the only whitespace left is space and newline, so `_NEWLINES_RE` needs ` \n`, `\n\n` or
    `\n ` (a test holds this to the two substitutions on every kind of text)."""
    if not s.isascii():
        return _NEWLINES_RE.sub("\n", _SPACES_RE.sub(" ", s))
    # ASCII, by C-level replaces (code and indented text have runs to collapse on every line):
    # `_SPACES_RE` turns each odd whitespace character and each run of two or more into one space,
    # which is mapping the odd ones to spaces and halving runs of spaces until none is left.
    if any(c in s for c in _ODD_ASCII_SPACES):  # eight memchr-speed substring tests instead of a class regex
        s = s.translate(_ODD_TO_SPACE)
    while "  " in s:
        s = s.replace("  ", " ")
    # `_NEWLINES_RE` then turns each run of spaces and newlines holding a newline into one newline:
    # the fixpoint of dropping a space beside a newline and merging two newlines (runs never merge).
    while "\n" in s and (" \n" in s or "\n " in s or "\n\n" in s):  # one memchr when there is no newline
        s = s.replace(" \n", "\n").replace("\n ", "\n").replace("\n\n", "\n")
    return s


# Latin look-alikes (Cyrillic, Greek, IPA) and leetspeak, applied only to the `folded` view that
# English phrases are matched against; other languages are matched on `text`, which keeps its script.
_FOLD = str.maketrans(
    {
        "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
        "с": "c", "т": "t", "у": "y", "х": "x", "і": "i", "ї": "i", "ј": "j", "ѕ": "s", "ԁ": "d",
        "ԛ": "q", "ԝ": "w", "ɡ": "g", "ɑ": "a", "ɩ": "i", "ο": "o", "α": "a", "ι": "i", "ν": "v",
        "κ": "k", "τ": "t", "ρ": "p", "ε": "e", "υ": "u", "χ": "x", "η": "n", "ς": "s",
        "0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s",
        "|": "l", "€": "e",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Hidden:
    """Invisible content found in the raw text (counts, and what tag characters spelled)."""

    invisible: int = 0
    invisible_in_words: int = 0
    bidi: int = 0
    tag_text: str = ""


@dataclass(frozen=True, slots=True)
class Views:
    """The normalized forms of one text.

    ``text``: escapes decoded, HTML entities unescaped, NFKC, casefolded, invisible characters
    removed, runs of spaces collapsed to one space and runs of line breaks to one ``\\n``.
    ``folded``: ``text`` with look-alike letters and leetspeak mapped to ASCII letters.
    """

    text: str
    folded: str
    hidden: Hidden


def _decode_escapes(s: str) -> str:
    """Decode ``\\uXXXX``-style escapes (JSON and YAML results spell non-ASCII text that way)."""

    def one(m: re.Match[str]) -> str:
        code = m.group(1) or m.group(2) or m.group(3)
        if code is None:
            return _CONTROL_ESCAPES[m.group(4)]
        return chr(int(code, 16))

    out = _ESCAPE_RE.sub(one, s)
    # JSON spells astral characters as surrogate pairs; join them back.
    return out.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _tag_text(raw: str) -> str:
    parts: list[str] = []
    for m in _TAG_RUN_RE.finditer(raw):
        if m.start() > 0 and raw[m.start() - 1] == _FLAG_BASE:
            continue
        decoded = "".join(chr(ord(c) - 0xE0000) for c in m.group() if 0x20 <= ord(c) - 0xE0000 < 0x7F)
        if decoded.strip():
            parts.append(decoded)
    return " ".join(parts)


def normalize(raw: str) -> Views:
    """Build the views of ``raw`` in a bounded number of linear passes."""
    s = raw
    if "\\" in s:
        s = _decode_escapes(s)
    if "&" in s:
        s = html.unescape(s)
    invisible = in_words = bidi = 0
    tags = ""
    if not s.isascii():  # ASCII text has no invisible, bidi or tag characters: skip those passes
        invisible = len(_INVISIBLE_RE.findall(s))
        in_words = len(_ZW_INSIDE_WORD_RE.findall(s)) if invisible else 0
        bidi = len(_BIDI_RE.findall(s))
        if _TAG_RUN_RE.search(s):
            tags = _tag_text(s)
            s = _TAG_RUN_RE.sub("", s)
        if invisible or bidi:
            s = s.translate(_DELETE)
    s = _collapse(unicodedata.normalize("NFKC", s).casefold())
    return Views(text=s, folded=s.translate(_FOLD), hidden=Hidden(invisible, in_words, bidi, tags))
