"""Signals about how an instruction is carried rather than what it says.

Hidden regions (HTML comments, CSS-hidden elements), links that smuggle data out in their query
string, and imperative directives to move data to an outside party. Each returns `Signal`s; the
hidden regions are also handed back so the detector can score their content with more weight.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from checkrein._trie import trie_regex

from .phrase import WordFinder

__all__ = [
    "Signal",
    "action_signals",
    "encoded_regions",
    "exfil_link_signals",
    "has_long_token",
    "hidden_regions",
]


@dataclass(frozen=True, slots=True)
class Signal:
    kind: str
    weight: float
    pos: int
    evidence: str
    rule: str = ""
    """Which pattern produced it: two different patterns of one kind add up, repeats of one do not."""


_COMMENT_RE = re.compile(r"<!--(.{0,4000}?)-->", re.S)
_CSS_HIDDEN_RE = re.compile(
    r"<(\w{1,10})[^>]{0,300}?style\s*=\s*[\"'][^\"']{0,300}?(?:display\s*:\s*none|visibility\s*:\s*hidden|"
    r"font-size\s*:\s*0(?:px|pt|em)?\s*[;\"']|opacity\s*:\s*0(?:\.0+)?\s*[;\"']|color\s*:\s*(?:white|#fff\b|#ffffff|"
    r"transparent)|height\s*:\s*0|width\s*:\s*0|left\s*:\s*-\d{3,})[^>]{0,300}>(.{0,4000}?)</\1>",
    re.S,
)
_HIDDEN_ATTR_RE = re.compile(
    r"<(\w{1,10})[^>]{0,300}?\s(?:hidden|aria-hidden=[\"']true[\"'])[^>]{0,300}>(.{0,4000}?)</\1>", re.S
)


# Markdown reference-style comments, which renderers drop: `[//]: # (text)`, `[comment]: <> (text)`.
_MD_COMMENT_RE = re.compile(
    r"^[ \t]{0,3}\[(?://|comment|_|#)\]:[ \t]?(?:#|<>)[ \t]?(?:\((.{0,2000}?)\)|\"(.{0,2000}?)\")", re.M
)


def hidden_regions(text: str) -> list[tuple[int, str]]:
    """(position, inner text) of HTML and Markdown comments and elements hidden by CSS or the
    ``hidden`` attribute."""
    out: list[tuple[int, str]] = []
    if "<!--" in text:
        out.extend((m.start(), m.group(1)) for m in _COMMENT_RE.finditer(text))
    if "]:" in text:
        out.extend((m.start(), m.group(1) or m.group(2) or "") for m in _MD_COMMENT_RE.finditer(text))
    if "style" in text and "<" in text:
        out.extend((m.start(), m.group(2)) for m in _CSS_HIDDEN_RE.finditer(text))
    if "hidden" in text and "<" in text:
        out.extend((m.start(), m.group(2)) for m in _HIDDEN_ATTR_RE.finditer(text))
    return out


_BASE64_RE = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{32,8192}={0,2}(?![A-Za-z0-9+/=_-])")
_HEX_RE = re.compile(r"(?<![0-9A-Za-z])(?:[0-9a-fA-F]{2}){24,4096}(?![0-9A-Za-z])")
_MAX_ENCODED_RUNS = 16
_MAX_DECODED = 32_768


def _decoded_text(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    letters = sum(c.isalpha() or c.isspace() for c in text)
    return text if len(text) >= 16 and letters >= 0.8 * len(text) and " " in text else None


def has_long_token(text: str, n: int) -> bool:
    """Whether ``text`` has ``n`` consecutive characters none of which is whitespace (`str.split`
    and the regexes' `\\s` agree on what whitespace is)."""
    return len(text) >= n and max(map(len, text.split()), default=0) >= n


def encoded_regions(raw: str) -> list[tuple[int, str]]:
    """(position, decoded text) of base64 and hex runs that decode to prose: an instruction a
    person cannot read but a model can. Bounded: 16 runs, 32 KB of decoded text."""
    import base64
    import binascii

    out: list[tuple[int, str]] = []
    if not has_long_token(raw, 32):
        return out  # every run is at least 32 characters without a space
    budget = _MAX_DECODED
    runs = 0
    for regex in (_BASE64_RE, _HEX_RE):
        for m in regex.finditer(raw):
            runs += 1
            if runs > _MAX_ENCODED_RUNS or budget <= 0:
                return out
            run = m.group(0)
            try:
                if regex is _HEX_RE:
                    data = bytes.fromhex(run)
                else:
                    s = run.rstrip("=")
                    if len(s) % 4 == 1 or run.isalpha() or run.isdigit():
                        continue
                    padded = s + "=" * (-len(s) % 4)
                    data = (
                        base64.urlsafe_b64decode(padded)
                        if ("-" in s or "_" in s)
                        else base64.b64decode(padded, validate=True)
                    )
            except (ValueError, binascii.Error):
                continue
            text = _decoded_text(data[:budget])
            if text is not None:
                budget -= len(text)
                out.append((m.start(), text))
    return out


_MD_IMAGE_RE = re.compile(r"!\[[^\]\n]{0,200}\]\(\s*<?((?:https?:)?//[^\s)>]{1,2000})")
_HTML_IMAGE_RE = re.compile(r"<img\s[^>]{0,500}?src\s*=\s*[\"']?((?:https?:)?//[^\s\"'>]{1,2000})")
_MD_LINK_RE = re.compile(r"(?<!!)\[[^\]\n]{0,200}\]\(\s*<?((?:https?:)?//[^\s)>]{1,2000})")
# Placeholders an attacker asks the model to fill in: {data}, [SECRET], $VAR, <history>, %7Bx%7D
_PLACEHOLDER_RE = re.compile(
    r"\{[^{}\s]{1,60}\}|\[[a-z_ ]{2,40}\]|\$\{?[a-z_][a-z0-9_]{1,40}|<[a-z_ ]{2,40}>|%7b[^%\s]{1,60}%7d|"
    r"\b(?:insert|replace|your|the|user'?s?)[_ -]?(?:data|secret|password|history|conversation|summary|"
    r"email|info|information|key|token|code|message|content)s?\b"
)
_DATA_WORDS_RE = re.compile(
    r"(?:append|add|include|put|insert|encode|attach|embed|concatenate)\w*\s.{0,120}?\s(?:to|in|into|as)\s"
    r"(?:the\s|this\s)?(?:url|link|query|query\sstring|parameter|image\s(?:url|link)|address)",
    re.S,
)


def exfil_link_signals(text: str) -> list[Signal]:
    """Images (fetched automatically when rendered) and links whose URL carries data out."""
    out: list[Signal] = []
    if "](" in text or "<img" in text:
        for regex, is_image in ((_MD_IMAGE_RE, True), (_HTML_IMAGE_RE, True), (_MD_LINK_RE, False)):
            for m in regex.finditer(text):
                url = m.group(1)
                query = url.partition("?")[2]
                if not query:
                    continue
                if _PLACEHOLDER_RE.search(query):
                    out.append(
                        Signal("exfil_link", 1.0 if is_image else 0.8, m.start(), url[:80], "placeholder")
                    )
                elif is_image:
                    out.append(Signal("exfil_link", 0.4, m.start(), url[:80], "image_query"))
    if ("url" in text or "link" in text or "query" in text or "parameter" in text) and (
        m2 := _DATA_WORDS_RE.search(text)
    ):
        out.append(Signal("exfil_link", 0.6, m2.start(), m2.group()[:80], "data_into_url"))
    return out


_ACTION_VERBS = (
    "send forward email e-mail mail transfer wire pay post upload share delete remove invite grant change reset "
    "update book reserve create add schedule publish leak exfiltrate copy concatenate give provide move make"
).split()
# One trie instead of a 32-way alternation (~2.5x faster per character). The same matches: no verb
# is a prefix of another followed by a non-word character, so at most one verb fits between two
# word boundaries at any position (a property test holds it to the alternation).
_ACTION_VERB_RE = re.compile(r"\b(" + trie_regex(_ACTION_VERBS) + r")\b")
# The regex needs a verb as a substring: a text with none (one automaton pass) skips it. Exact.
_ANY_ACTION_VERB = WordFinder(_ACTION_VERBS)
# An imperative starts a sentence or follows one of these words ("please send", "then forward").
_LEAD_WORDS = ("please", "now", "then", "first", "also", "and", "immediately", "quickly", "todo", "todo:")
_EXTERNAL_RE = re.compile(
    r"[\w.+-]+@[\w-]+\.[\w.-]+|\b[a-z]{2}\d{2}(?:\s?[a-z0-9]{4}){2,7}(?:\s?[a-z0-9]{1,3})?\b|https?://\S+|\bwww\.\S+|"
    r"\b[\w-]+\.(?:com|net|org|io|ru|cn|xyz|info|biz|co)\b"
)
_SENSITIVE_RE = re.compile(
    r"password|passcode|security\scode|verification\scode|2fa|one[- ]time\scode|otp\b|api[\s_-]?key|"
    r"secret|credential|credit\scard|card\snumber|cvv|ssn|social\ssecurity|private\skey|token|"
    r"(?:all|every|the\sentire|the\scontents?\sof)\s(?:the\s|my\s|your\s|their\s)?(?:emails?|messages?|files?|"
    r"documents?|contacts?|conversations?|chat\shistory|history|data|inbox|transactions?|channels?)"
)


def action_signals(text: str) -> list[Signal]:
    """Imperatives that move data or money toward an outside address (weak alone: ordinary mail says
    "please send the invoice to billing@...", so these count only next to other signals)."""
    out: list[Signal] = []
    if not _ANY_ACTION_VERB.present(text):
        return out
    for m in _ACTION_VERB_RE.finditer(text):
        before = text[max(0, m.start() - 14) : m.start()].rstrip()
        if before and before[-1] not in ".!?:;\n" and not before.endswith(_LEAD_WORDS):
            continue
        tail = text[m.end() : m.end() + 160]
        external = _EXTERNAL_RE.search(tail) is not None
        sensitive = _SENSITIVE_RE.search(tail) is not None
        evidence = text[m.start() : m.end() + 70].strip()
        if external and sensitive:
            out.append(Signal("exfil_directive", 0.5, m.start(), evidence, "exfil"))
        elif external or sensitive:
            out.append(Signal("action_directive", 0.25, m.start(), evidence, "action"))
        if len(out) >= 64:
            break
    return out
