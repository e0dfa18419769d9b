"""The analyzers' public seam, used by `decide` (argument checks) and result inspection.

Every analyzer is pure, total and linear in its input: it takes values and returns findings, and
never raises on hostile input (an exception is still caught by `decide` and denies the call).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any, Protocol

from checkrein.config.policy import ArgKind
from checkrein.policy.decision import Finding

from .verdicts import VerdictCache

__all__ = ["KIND_MEMO_SIZE", "Analyzer", "Resolver", "ScanContext", "SecretSpan", "char_class"]

KIND_MEMO_SIZE = 1024
"""Pointers whose kind one `ScanContext` remembers (argument names are attacker-chosen: bounded)."""

Resolver = Callable[[str], Sequence[str]]
"""Host name -> IP address strings. Only used when `[policy.urls] resolve_dns = true`; tests pass a fake."""


def char_class(chars: Set[str]) -> re.Pattern[str]:
    """A regex matching exactly one of ``chars`` (a prefilter's trigger characters)."""
    return re.compile("[" + "".join(re.escape(c) for c in sorted(chars)) + "]")


@dataclass(frozen=True, slots=True)
class SecretSpan:
    start: int
    end: int
    kind: str


@dataclass(frozen=True)
class ScanContext:
    """What the analyzers know about one tool's arguments."""

    kinds: Mapping[str, ArgKind] = field(default_factory=dict)
    """JSON pointer of an argument -> what it is (from the tool's schema and the config)."""
    path_roots: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    commands: tuple[str, ...] | None = None
    """Command allowlist (first word) for a tool that runs commands; None = no allowlist."""
    resolver: Resolver | None = None
    enabled: frozenset[str] = frozenset({"paths", "urls", "shell", "sql", "secrets"})
    declared_keys: frozenset[str] = frozenset()
    """The top-level property names of the tool's own (pinned) input schema: as keys of the
    arguments they are the tool's words, not the client's, so `scan_arguments` does not scan them."""
    verdicts: VerdictCache | None = field(default=None, compare=False, repr=False)
    """The compiled policy's cache of verdicts (`checkrein.policy.analyzers.verdicts`); None = no cache."""
    kind_memo: dict[str, ArgKind | None] = field(default_factory=dict, init=False, compare=False, repr=False)
    """`kind_for(pointer, kinds)` per pointer seen (at most `KIND_MEMO_SIZE`); filled by `scan_arguments`."""


class Analyzer(Protocol):
    name: str

    def analyze(self, value: str, pointer: str, kind: ArgKind | None, ctx: ScanContext) -> list[Finding]:
        """Findings for one string value at JSON pointer ``pointer`` (raw; decoding is the analyzer's job
        or the caller's, see `checkrein.policy.analyzers.decode`)."""
        ...


# Implemented in this package (see __init__.py):
#   scan_arguments(arguments: Mapping[str, Any], ctx: ScanContext) -> list[Finding]
#   kinds_from_schema(input_schema: Mapping[str, Any]) -> dict[str, ArgKind]
#   find_secrets(text: str) -> list[SecretSpan]
#   redact_secrets(text: str, mask: str = "[REDACTED:{kind}]") -> tuple[str, list[SecretSpan]]
_ = Any
