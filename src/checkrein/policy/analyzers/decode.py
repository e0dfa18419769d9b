"""Bounded decoding of argument strings into the forms an attacker may rely on a consumer to decode.

`decoded_forms(value)` returns the raw value first, then the result of each decoding round, each
round applying, in order: percent decoding (including double encoding over rounds, `%uXXXX`, and
lenient overlong UTF-8 such as `%c0%ae` / `%e0%80%ae`), backslash escapes (`\\uXXXX`, `\\xXX`,
`\\n` ...), HTML entities (named and numeric) and Unicode NFKC (fullwidth and other compatibility
characters). Work is bounded: at most `MAX_ROUNDS` rounds and every form is cut to
`MAX_FORM_CHARS`. Each step is a single left-to-right pass, so decoding is linear in the input.
"""

from __future__ import annotations

import html
import re
import unicodedata

__all__ = ["MAX_FORM_CHARS", "MAX_ROUNDS", "decode_once", "decoded_forms", "percent_decode", "unescape_backslashes"]

MAX_ROUNDS = 4
"""Enough for three stacked encodings plus one round to observe the fixed point."""
MAX_FORM_CHARS = 262_144
"""Longest form produced (NFKC can expand a character up to 18-fold; the cut keeps work bounded)."""

_HEX = frozenset("0123456789abcdefABCDEF")
# Only escapes that change meaning for a consumer; `\b`, `\f`... would turn `..\boot.ini` into noise.
_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "0": "\x00", "/": "/", "\\": "\\", "'": "'", '"': '"'}


def _is_hex(s: str) -> bool:
    return bool(s) and all(c in _HEX for c in s)


def _decode_bytes(buf: bytes) -> str:
    """Lenient UTF-8: valid sequences decode normally; overlong forms (which strict decoders reject but
    some servers accept) decode to the code point they spell; other bytes map to their Latin-1 char."""
    out: list[str] = []
    i, n = 0, len(buf)
    while i < n:
        b = buf[i]
        if b < 0x80:
            out.append(chr(b))
            i += 1
            continue
        need = 1 if 0xC0 <= b <= 0xDF else 2 if 0xE0 <= b <= 0xEF else 3 if 0xF0 <= b <= 0xF7 else 0
        if need and i + need <= n - 1:
            cont = buf[i + 1 : i + 1 + need]
            cp = b & (0x1F if need == 1 else 0x0F if need == 2 else 0x07)
            for c in cont:
                cp = (cp << 6) | (c & 0x3F)
            valid_cont = all(c & 0xC0 == 0x80 for c in cont)
            # Lead bytes C0/C1 and E0 80..9F are overlong by construction: accept them even with a
            # malformed continuation byte (`%c0%2e`), as the IIS-era decoders the payloads target did.
            overlong_lead = b in (0xC0, 0xC1) or (b == 0xE0 and cont[0] < 0xA0) or (b == 0xF0 and cont[0] < 0x90)
            if valid_cont or overlong_lead:
                if 0xD800 <= cp <= 0xDFFF or cp > 0x10FFFF:
                    out.append("\ufffd")
                else:
                    out.append(chr(cp))
                i += 1 + need
                continue
        out.append(chr(b))
        i += 1
    return "".join(out)


_PERCENT = re.compile(r"(?:%[0-9A-Fa-f]{2})+|%[uU][0-9A-Fa-f]{4}")


def _percent_run(m: re.Match[str]) -> str:
    run = m.group(0)
    if run[1] in "uU":
        cp = int(run[2:], 16)
        return "\ufffd" if 0xD800 <= cp <= 0xDFFF else chr(cp)
    data = bytes.fromhex(run.replace("%", ""))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return _decode_bytes(data)


def percent_decode(text: str) -> str:
    """One pass of `%XX` and `%uXXXX` decoding; byte runs go through the lenient UTF-8 decoder."""
    if "%" not in text:
        return text
    return _PERCENT.sub(_percent_run, text)


def _looks_like_windows_path(text: str) -> bool:
    # `C:\new\temp` or `\\server\share`: backslashes are separators there, not escapes.
    return (len(text) > 2 and text[1] == ":" and text[2] == "\\" and text[0].isalpha()) or text.startswith("\\\\")


_ESCAPE = re.compile(r"""\\(?:u\{([0-9A-Fa-f]{1,6})\}|[uU]([0-9A-Fa-f]{4})|[xX]([0-9A-Fa-f]{2})|([nrt0/\\'"]))""")


def _escape(m: re.Match[str]) -> str:
    hexdigits = m.group(1) or m.group(2) or m.group(3)
    if hexdigits is not None:
        cp = int(hexdigits, 16)
        return "\ufffd" if cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF else chr(cp)
    return _SIMPLE_ESCAPES[m.group(4)]


def unescape_backslashes(text: str) -> str:
    """One pass of C/JSON/JS-style escapes: `\\uXXXX`, `\\u{X..}`, `\\xXX`, `\\n`, `\\t`, `\\0` ...

    Unknown escapes are kept verbatim. Strings that look like Windows paths are returned unchanged.
    """
    if "\\" not in text or _looks_like_windows_path(text):
        return text
    return _ESCAPE.sub(_escape, text)


def _html_unescape(text: str) -> str:
    if "&" not in text:
        return text
    return html.unescape(text)


def _nfkc(text: str) -> str:
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", text)


_STEPS = (percent_decode, unescape_backslashes, _html_unescape, _nfkc)


def decode_once(text: str) -> str:
    """One decoding round (percent, backslash escapes, HTML entities, NFKC), cut to `MAX_FORM_CHARS`."""
    for step in _STEPS:
        text = step(text)[:MAX_FORM_CHARS]
    return text


def decoded_forms(value: str) -> list[str]:
    """The raw value, then the result of every decoding step that changed something, over at most
    `MAX_ROUNDS` rounds, then the form with `+` read as a space when the value uses `+` instead of spaces.

    The first element is always the raw value (cut to `MAX_FORM_CHARS`). Never raises.
    """
    raw = value[:MAX_FORM_CHARS]
    forms = [raw]
    current = raw
    for _ in range(MAX_ROUNDS):
        before = current
        for step in _STEPS:
            # Every intermediate result is a form: a later step may destroy what an earlier one
            # revealed (`%5cetc` -> `\etc` -> ESC-tc would hide `..\etc`).
            nxt = step(current)[:MAX_FORM_CHARS]
            if nxt != current:
                forms.append(nxt)
                current = nxt
        if current == before:
            break
    if "+" in current and " " not in current:
        # Form-encoded payloads (`'+or+1=1--`) use `+` for spaces.
        forms.append(current.replace("+", " "))
    return forms
