"""`checkrein lint`: find the mistakes in Claude, Codex and Harbor configs and in checkrein's own.

    lint_file(path, kind=None, env=None, harbor_version=None) -> LintResult
    lint_text(text, path=..., kind=..., ...) -> LintResult
    RULES: rule id -> Rule(id, severity, title, fix)

Each finding names its rule, severity, location (file:line) and a fix. Bad input never raises:
an unreadable, oversized or unparseable file is itself a finding.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checkrein.config._syntax import syntax_problem
from checkrein.config.importers import MAX_CONFIG_BYTES, ConfigKind, detect_kind
from checkrein.errors import ConfigError

from .checkrein import lint_checkrein
from .claude import lint_claude
from .codex import lint_codex
from .common import check_env_refs
from .harbor import lint_harbor_judge, lint_harbor_task
from .model import RULES, LintFinding, Report, Rule, Severity

__all__ = ["RULES", "LintFinding", "LintResult", "Rule", "Severity", "lint_file", "lint_text"]


@dataclass(frozen=True, slots=True)
class LintResult:
    file: str
    kind: ConfigKind | None
    """``None`` when the file could not be read or its kind not told."""
    findings: tuple[LintFinding, ...]

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.severity == "error")

    @property
    def warnings(self) -> int:
        return sum(1 for f in self.findings if f.severity == "warning")


def _sorted(report: Report) -> tuple[LintFinding, ...]:
    return tuple(sorted(report.findings, key=lambda f: (f.file != report.file, f.file, f.line or 0, f.rule)))


def _toml_or_report(report: Report, body: str) -> dict[str, Any] | None:
    """``body`` parsed as TOML, or ``None`` after a ``file.syntax`` finding showing the line."""
    try:
        return tomllib.loads(body)
    except tomllib.TOMLDecodeError as exc:
        found = syntax_problem(body, exc)
        where = f"`{found.key}`: " if found.key else ""
        report.add("file.syntax", found.line, f"{where}not valid TOML: {found.message}", found.fix)
        return None


def lint_text(
    text: str,
    *,
    path: str,
    kind: ConfigKind | None = None,
    env: Mapping[str, str] | None = None,
    harbor_version: str | None = None,
) -> LintResult:
    """Lint ``text`` as read from ``path`` (used for locations and, for Harbor tasks, to find the
    compose file beside it). ``env`` defaults to ``os.environ``."""
    report = Report(path)
    if kind is None:
        try:
            kind = detect_kind(path, text)
        except ConfigError as exc:
            # A TOML file that does not parse cannot be told apart: its syntax error is the news.
            if _toml_or_report(report, text.removeprefix("\ufeff")) is not None:
                report.add("file.syntax", None, exc.detail, "Pass --format claude|codex|harbor|harbor-judge|checkrein.")
            return LintResult(path, None, _sorted(report))
    environ = os.environ if env is None else env
    check_env_refs(report, text, environ)
    if kind == "claude":
        lint_claude(report, text)
        return LintResult(path, kind, _sorted(report))
    body = text
    if body.startswith("\ufeff"):
        report.add("file.bom", 1, "file starts with a UTF-8 byte order mark")
        body = body[1:]
    data = _toml_or_report(report, body)
    if data is None:
        return LintResult(path, kind, _sorted(report))
    if kind == "codex":
        lint_codex(report, body, data, environ)
    elif kind == "harbor":
        lint_harbor_task(report, body, data, path=Path(path), harbor_version=harbor_version)
    elif kind == "harbor-judge":
        lint_harbor_judge(report, body, data)
    else:
        lint_checkrein(report, body, data, environ)
    return LintResult(path, kind, _sorted(report))


def lint_file(
    path: str | Path,
    *,
    kind: ConfigKind | None = None,
    env: Mapping[str, str] | None = None,
    harbor_version: str | None = None,
    max_bytes: int = MAX_CONFIG_BYTES,
) -> LintResult:
    """Lint the file at ``path`` (a Harbor task directory means its `task.toml`); reads at most
    ``max_bytes`` (a larger file is one finding)."""
    p = Path(path)
    if p.is_dir() and (p / "task.toml").is_file():
        p = p / "task.toml"
    report = Report(str(p))
    try:
        with p.open("rb") as fh:
            raw = fh.read(max_bytes + 1)
    except OSError as exc:
        report.add("file.syntax", None, f"cannot read: {exc.strerror}", "Check the path and its permissions.")
        return LintResult(str(p), kind, _sorted(report))
    if len(raw) > max_bytes:
        report.add("file.too-large", None, f"larger than {max_bytes} bytes; not read")
        return LintResult(str(p), kind, _sorted(report))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        report.add("file.not-utf8", raw[: exc.start].count(b"\n") + 1, "not valid UTF-8")
        return LintResult(str(p), kind, _sorted(report))
    return lint_text(text, path=str(p), kind=kind, env=env, harbor_version=harbor_version)
