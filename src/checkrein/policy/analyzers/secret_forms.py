"""Secrets in disguise, for `secrets.find_secrets`: the spellings a plain pattern pass misses.

- hidden: zero-width and other invisible characters inside a token (`ghp_\\u200bAbC...`), and a
  token split across adjacent string literals (`"sk-ant-" + "api03-..."`, `'AKIA' 'IOSF...'`):
  a joined form is scanned and its spans mapped back to the original text;
- encoded: a base64 or hex run whose decoding is text that holds a secret;
- headerless private keys: a base64 body of a DER private key (PKCS#1, PKCS#8, SEC 1) or an
  OpenSSH key with its `-----BEGIN` line cut off;
- AWS pairs: a 40-character secret access key next to its access key id, with no keyword.

Every pass is a single regex scan with bounded quantifiers, and the decoding work is capped, so
the cost stays linear in the text.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterator

from .api import SecretSpan

__all__ = ["aws_secret_pairs", "encoded_spans", "headerless_private_keys", "joined_forms"]

Finder = Callable[[str], list[SecretSpan]]

_INVISIBLE = frozenset("\u00ad\u034f\u061c\u115f\u1160\u180e\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\u3164\ufeff\uffa0")
# A quote, optional `+` / `.` / `..` / `||` / `&` joiner, and the same quote: two literals that
# a program concatenates (`"ab" + "cd"`, `'ab' 'cd'`, `"ab" . "cd"`, `'ab' || 'cd'`).
_JOIN = re.compile(r"([\"'`])[ \t]{0,8}(?:\+|\.{1,2}|\|\||&)?[ \t\r\n]{0,8}\1")
MAX_DECODED = 65_536
"""Characters of decoded base64/hex scanned per text."""
_MAX_RUNS = 64


# `_JOIN` is tried at every quote (~80 us per 4 KB of JSON). Every match is a quote, then only
# spaces and joiner characters, then the same quote: with those characters deleted and every
# other byte but the quotes made `x`, two equal quotes touch.
_JOIN_FILLER = b" \t\r\n+.|&"
_JOIN_MARKS = bytes(b if b in b"\"'`" else 0x78 for b in range(256))


def _may_join(text: str) -> bool:
    """False only when `_JOIN` cannot match in ``text``."""
    marks = text.encode("utf-8", "surrogatepass").translate(_JOIN_MARKS, _JOIN_FILLER)
    return b'""' in marks or b"''" in marks or b"``" in marks


def joined_forms(text: str) -> list[tuple[str, list[int]]]:
    """The text with invisible characters removed, and with adjacent string literals joined;
    each with the index in ``text`` of every character it keeps. Empty when neither applies."""
    out: list[tuple[str, list[int]]] = []
    if not text.isascii() and any(c in _INVISIBLE for c in text):
        keep = [i for i, c in enumerate(text) if c not in _INVISIBLE]
        out.append(("".join(text[i] for i in keep), keep))
    if ("\"" in text or "'" in text or "`" in text) and _may_join(text) and _JOIN.search(text) is not None:
        keep = []
        pos = 0
        for m in _JOIN.finditer(text):
            keep.extend(range(pos, m.start()))
            pos = m.end()
        keep.extend(range(pos, len(text)))
        out.append(("".join(text[i] for i in keep), keep))
    return out


def map_back(spans: list[SecretSpan], index: list[int]) -> list[SecretSpan]:
    """Spans of a joined form as spans of the original text (covering every piece)."""
    out: list[SecretSpan] = []
    for sp in spans:
        if sp.start < len(index) and sp.end >= 1:
            out.append(SecretSpan(index[sp.start], index[min(sp.end, len(index)) - 1] + 1, sp.kind))
    return out


_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{20,4096}={0,2}(?![A-Za-z0-9+/_\-=])")
# `_BASE64_RUN` and `_HEX_RUN` open with a lookbehind, so `re` tries them at every position
# (~75 and ~200 us per 4 KB of prose; a class-first `[...]{20}` is no faster in text made of
# letters). In ASCII text one `bytes.translate` marks their characters and `bytes.find` looks for
# 20 (24 hex digits) of them in a row: a base64 match can only start where such a run begins
# (the lookbehind holds nowhere else in it), and a hex match needs 24 hex digits in a row.
_B64_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-"
_B64_MARKS = bytes(0x61 if b in _B64_CHARS else 0x20 for b in range(256))
_HEX_MARKS = bytes(0x61 if b in b"0123456789abcdefABCDEF" else 0x20 for b in range(256))
_HEX_RUN = re.compile(r"(?<![0-9A-Za-z])(?:0x)?((?:[0-9a-fA-F]{2}){12,2048})(?![0-9A-Za-z])")
# What every `_HEX_RUN` match holds; a cheaper scan (no lookbehind at every position) to skip it.
_HEX_DIGITS_24 = re.compile(r"[0-9a-fA-F]{24}")


def _printable_text(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text or sum(c.isprintable() or c in "\n\r\t" for c in text) < 0.95 * len(text):
        return None
    return text


def _b64(run: str) -> bytes | None:
    s = run.rstrip("=")
    if len(s) % 4 == 1:
        return None
    padded = s + "=" * (-len(s) % 4)
    try:
        if "-" in s or "_" in s:
            return base64.urlsafe_b64decode(padded)
        return base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None


def _base64_runs(text: str) -> Iterator[re.Match[str]]:
    """`_BASE64_RUN.finditer(text)`, trying the regex only at the start of each run of 20 or more
    of its characters in ASCII text (a test holds the two equal)."""
    if not text.isascii():
        yield from _BASE64_RUN.finditer(text)
        return
    marks = text.encode("ascii").translate(_B64_MARKS)
    pos = 0
    while (start := marks.find(b"a" * 20, pos)) != -1:
        # `pos` is never inside a run (0, a match's end or a run's end), so `start` begins one.
        m = _BASE64_RUN.match(text, start)
        if m is not None:
            yield m
            pos = m.end()
        else:
            end = marks.find(b" ", start)
            pos = len(text) if end == -1 else end


def _may_hold_hex_run(text: str) -> bool:
    """False only when `_HEX_RUN` cannot match in ``text`` (it needs 24 hex digits in a row)."""
    if text.isascii():
        return b"a" * 24 in text.encode("ascii").translate(_HEX_MARKS)
    return _HEX_DIGITS_24.search(text) is not None


def encoded_spans(text: str, finder: Finder) -> list[SecretSpan]:
    """Base64 and hex runs whose decoding is text holding a secret: the whole run is the span,
    its kind `encoded_<kind>`. At most `MAX_DECODED` decoded characters and 64 runs are read."""
    out: list[SecretSpan] = []
    budget = MAX_DECODED
    runs = 0
    for regex, decode in ((_BASE64_RUN, _b64), (_HEX_RUN, None)):
        if decode is None and not _may_hold_hex_run(text):
            break
        for m in _base64_runs(text) if decode is not None else regex.finditer(text):
            runs += 1
            if runs > _MAX_RUNS or budget <= 0:
                return out
            raw = m.group(1) if decode is None else m.group(0)
            if decode is None:
                try:
                    data: bytes | None = bytes.fromhex(raw)
                except ValueError:
                    data = None
            else:
                if raw.isdigit() or raw.isalpha() and raw.islower():
                    continue  # a number or a word, not base64
                data = decode(raw)
            if not data:
                continue
            decoded = _printable_text(data[: budget * 4])
            if decoded is None:
                continue
            budget -= len(decoded)
            found = finder(decoded)
            if found:
                out.append(SecretSpan(m.start(), m.end(), f"encoded_{found[0].kind}"))
    return out


# DER private keys: an outer SEQUENCE, then version 0 (PKCS#1 RSA, PKCS#8) or 1 (SEC 1 EC key).
_KEY_BODY = re.compile(
    r"(?<![A-Za-z0-9+/])(?:MII[A-Za-z0-9+/]{5}|MH[A-Za-z0-9+/]{6}|MC[A-Za-z0-9+/]{6}|b3BlbnNzaC1rZXktdjE)"
    r"[A-Za-z0-9+/]{20,}(?:[ \t]{0,4}\r?\n[ \t]{0,4}[A-Za-z0-9+/]{16,}){0,200}={0,2}"
)
_OPENSSH_MAGIC = b"openssh-key-v1\x00"


def _der_private_key(data: bytes) -> bool:
    """Whether ``data`` opens like a DER private key: SEQUENCE { INTEGER 0|1, ... } with the
    INTEGER version where PKCS#1, PKCS#8 and SEC 1 put it (an X.509 certificate does not)."""
    if len(data) < 16 or data[0] != 0x30:
        return False
    n = data[1]
    header = 2 if n < 0x80 else 2 + (n & 0x7F)
    if header > 4:
        return False
    version = data[header : header + 3]
    if version == b"\x02\x01\x00":
        nxt = data[header + 3 : header + 4]
        return nxt in (b"\x02", b"\x30")  # PKCS#1 modulus, or PKCS#8 AlgorithmIdentifier
    return version == b"\x02\x01\x01" and data[header + 3 : header + 4] == b"\x04"  # SEC 1 privateKey


def headerless_private_keys(text: str) -> list[SecretSpan]:
    """Private key bodies without their `-----BEGIN ... PRIVATE KEY-----` line."""
    out: list[SecretSpan] = []
    if "MI" not in text and "MH" not in text and "MC" not in text and "b3BlbnNzaC1" not in text:
        return out
    for m in _KEY_BODY.finditer(text):
        body = re.sub(r"\s+", "", m.group(0))
        data = _b64(body[: (min(len(body), 96) // 4) * 4])
        if data is None:
            continue
        if data.startswith(_OPENSSH_MAGIC) or _der_private_key(data):
            out.append(SecretSpan(m.start(), m.end(), "private_key"))
        if len(out) >= _MAX_RUNS:
            break
    return out


_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_NEAR = 240


def aws_secret_pairs(text: str, spans: list[SecretSpan], entropy: Callable[[str], float]) -> list[SecretSpan]:
    """A 40-character secret access key within a few lines of an AWS access key id (as in an IAM
    credentials CSV, `aws configure` output or a pasted pair), with no keyword to announce it."""
    out: list[SecretSpan] = []
    ids = [sp for sp in spans if sp.kind == "aws_access_key"]
    for key_id in ids[:16]:
        lo, hi = max(0, key_id.start - _NEAR), min(len(text), key_id.end + _NEAR)
        for m in _AWS_SECRET.finditer(text, lo, hi):
            value = m.group(0)
            if value.isalnum() and (value.isdigit() or all(c in "0123456789abcdefABCDEF" for c in value)):
                continue  # a hash or a number
            if not any(c.isupper() for c in value) or not any(c.islower() for c in value) or entropy(value) < 4.0:
                continue
            out.append(SecretSpan(m.start(), m.end(), "aws_secret_key"))
    return out
