"""The secret-finder seam of the audit trail, and a built-in pattern set behind it.

The policy engine's secrets analyzer (`checkrein.policy.analyzers.find_secrets`) is the preferred
finder; the gate factory passes it to `open_audit_trail`. The audit package may not import
`policy`, so the seam is structural: any callable ``str -> list[object with start, end, kind]``
fits, including `SecretSpan`. Until a finder is injected, `find_builtin_secrets` is used.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from checkrein._trie import LiteralStarts, WordFinder

__all__ = ["BuiltinSpan", "SecretFinder", "SecretLike", "builtin_may_match", "find_builtin_secrets"]


class SecretLike(Protocol):
    """Structural twin of `checkrein.policy.analyzers.SecretSpan`: ``text[start:end]`` is secret."""

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...

    @property
    def kind(self) -> str: ...


SecretFinder = Callable[[str], Sequence[SecretLike]]
"""``text -> spans of secret values``. Must be total: the trail treats an exception as a failure to
redact and masks the whole string instead of writing it."""


@dataclass(frozen=True, slots=True)
class BuiltinSpan:
    start: int
    end: int
    kind: str


# Each entry: (kind, pattern, group whose span is the secret; 0 = whole match).
_PATTERNS: tuple[tuple[str, str, int], ...] = (
    ("private_key", r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----(?:[\s\S]*?-----END[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----|[\s\S]*)", 0),
    ("aws_access_key", r"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}(?![A-Z0-9])", 0),
    ("github_token", r"(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})", 0),
    ("gitlab_token", r"\bglpat-[A-Za-z0-9_-]{20,}\b", 0),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b", 0),
    ("openai_key", r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}\b", 0),
    ("stripe_key", r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}\b", 0),
    ("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}\b", 0),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*", 0),
    ("bearer_token", r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{12,}=*)", 1),
    ("url_password", r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^/\s:@\"']{0,256}:([^/\s@\"']{1,256})@", 1),
    (
        "assignment",
        r"(?i)(?:password|passwd|pwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key"
        r"|private[_-]?key|client[_-]?secret|auth|credentials?)[\"']?\s{0,3}[=:]\s{0,3}"
        r"[\"']?([^\s&\"',;}{\]\[]{1,512})",
        1,
    ),
    ("aws_secret_key", r"(?i)aws.{0,20}?(?:secret|key).{0,20}?[\"'=:\s]([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])", 1),
)

_COMPILED = tuple((kind, re.compile(pat), group) for kind, pat, group in _PATTERNS)

# Per pattern (by kind): the lowercase literals its matches start with (`None`: not at a literal),
# and fragments one of which each of its matches holds, case-insensitively. A pattern runs only
# when one of its fragments occurs (one Aho-Corasick pass over the lowercased text finds them
# all), and in ASCII text it is tried only where one of its starts begins (`LiteralStarts`):
# Python's `re` tries a pattern that opens with `\b`, a lookbehind or `(?i)` at every position
# (~150 us per 4 KB each, measured, and ~900 for the `assignment` alternation). Text that is not
# ASCII runs every pattern when any fragment occurs, as before (case folding can turn `ſ` into
# an `s` the lowercased text does not show). Tests check the starts and fragments against the
# patterns.
_SHAPES: dict[str, tuple[tuple[str, ...] | None, tuple[str, ...]]] = {
    "private_key": (("-----begin",), ("private key",)),
    "aws_access_key": (("akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa"),) * 2,
    "github_token": (("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),) * 2,
    "gitlab_token": (("glpat-",),) * 2,
    "slack_token": (("xox",),) * 2,
    "openai_key": (("sk-",),) * 2,
    "stripe_key": (("rk_live", "rk_test", "sk_live", "sk_test"), ("k_live", "k_test")),
    "google_api_key": (("aiza",),) * 2,
    "jwt": (("eyj",),) * 2,
    "bearer_token": (("bearer",),) * 2,
    "url_password": (None, ("://",)),
    "assignment": (
        ("pass", "pwd", "secret", "token", "api", "access", "private", "client", "auth", "credential"),
        ("pass", "pwd", "secret", "token", "key", "auth", "credential"),
    ),
    "aws_secret_key": (("aws",), ("secret", "key")),
}
_SEARCHES: tuple[tuple[str, re.Pattern[str], LiteralStarts | None, int], ...] = tuple(
    (kind, rx, LiteralStarts(rx, starts) if (starts := _SHAPES[kind][0]) else None, group) for kind, rx, group in _COMPILED
)
_FRAGMENTS = tuple(sorted({f for _, fragments in _SHAPES.values() for f in fragments}))
"""Every pattern holds one of these (case-insensitively); most strings in tool arguments hold none."""
_BY_FRAGMENT: dict[str, tuple[int, ...]] = {
    f: tuple(i for i, (kind, *_) in enumerate(_COMPILED) if f in _SHAPES[kind][1]) for f in _FRAGMENTS
}
_HINT = WordFinder(_FRAGMENTS)


def builtin_may_match(document: str) -> bool:
    """False only when no string inside the JSON ``document`` can hold a built-in pattern: every
    pattern contains one of the fragments, and JSON escaping leaves those fragments intact (they
    hold no quote, backslash or control character). One test per event instead of one per string."""
    return bool(_HINT.present(document.lower()))


def find_builtin_secrets(text: str) -> list[BuiltinSpan]:
    """Spans of secret-looking values in ``text`` (sorted, possibly overlapping). Total: never raises
    for any ``str``."""
    found = _HINT.present(text.lower())
    if not found:
        return []
    ascii_text = text.isascii()
    if ascii_text:
        indexes = sorted({i for f in found for i in _BY_FRAGMENT[f]})
    else:
        indexes = list(range(len(_SEARCHES)))
    spans: list[BuiltinSpan] = []
    for i in indexes:
        kind, rx, starts, group = _SEARCHES[i]
        for m in starts.finditer(text) if starts is not None and ascii_text else rx.finditer(text):
            start, end = m.span(group)
            if end > start:
                spans.append(BuiltinSpan(start, end, kind))
    spans.sort(key=lambda s: (s.start, -s.end))
    return spans
