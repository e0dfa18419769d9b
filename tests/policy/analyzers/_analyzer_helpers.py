"""Helpers for the analyzer tests: small, hand-written payloads (never the shared corpora)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checkrein.config.policy import ArgKind
from checkrein.policy.analyzers import ScanContext, scan_arguments
from checkrein.policy.decision import Finding


def scan_one(value: Any, kind: ArgKind | None = None, **ctx: Any) -> list[Finding]:
    """Findings for ``value`` as the argument ``/v`` of the given kind."""
    kinds: Mapping[str, ArgKind] = {"/v": kind} if kind else {}
    return scan_arguments({"v": value}, ScanContext(kinds=kinds, **ctx))


def kinds_of(findings: list[Finding], analyzer: str | None = None) -> set[str]:
    return {f.kind for f in findings if analyzer is None or f.analyzer == analyzer}
