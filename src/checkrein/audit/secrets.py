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

from checkrein._trie import trie_regex

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
# A cheap pre-filter: every pattern above contains one of these fragments (case-insensitively), and
# most strings in tool arguments contain none. Substring tests on the lowercased text are far faster
# than a case-insensitive regex alternation.
_FRAGMENTS = (
    "private key", "akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa", "ghp_", "gho_", "ghu_",
    "ghs_", "ghr_", "github_pat_", "glpat-", "xox", "sk-", "k_live", "k_test", "aiza", "eyj", "bearer",
    "://", "pass", "pwd", "secret", "token", "key", "auth", "credential",
)


_HINT = re.compile(trie_regex(_FRAGMENTS))


def _hint(lowered: str) -> bool:
    return _HINT.search(lowered) is not None


def builtin_may_match(document: str) -> bool:
    """False only when no string inside the JSON ``document`` can hold a built-in pattern: every
    pattern contains one of the fragments, and JSON escaping leaves those fragments intact (they
    hold no quote, backslash or control character). One test per event instead of one per string."""
    return _HINT.search(document.lower()) is not None


def find_builtin_secrets(text: str) -> list[BuiltinSpan]:
    """Spans of secret-looking values in ``text`` (sorted, possibly overlapping). Total: never raises
    for any ``str``."""
    if not _hint(text.lower()):
        return []
    spans: list[BuiltinSpan] = []
    for kind, rx, group in _COMPILED:
        for m in rx.finditer(text):
            start, end = m.span(group)
            if end > start:
                spans.append(BuiltinSpan(start, end, kind))
    spans.sort(key=lambda s: (s.start, -s.end))
    return spans
