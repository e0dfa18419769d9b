"""Checks every config kind shares: unset environment references and inline secrets."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from checkrein.config.importers.secrets import SecretMover

from .model import Report

__all__ = ["check_env_refs", "check_inline_secrets", "string_list", "string_map"]

_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}")


def string_map(value: object) -> dict[str, str]:
    """The string-valued entries of ``value`` if it is a mapping, else ``{}`` (shape errors are
    reported by the format's own rules)."""
    if not isinstance(value, Mapping):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, str)}


def string_list(value: object) -> list[str]:
    """The string items of ``value`` if it is a list, else ``[]``."""
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def check_env_refs(report: Report, text: str, env: Mapping[str, str]) -> None:
    """``env.unset`` for each ``${VAR}`` without a default whose VAR is not in ``env``.
    Comment lines are skipped: a reference in a comment is documentation, not configuration."""
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.lstrip()
        if stripped.startswith(("#", "//")):
            continue
        for m in _REF.finditer(line):
            if m.group(2) is None and m.group(1) not in env:
                report.add("env.unset", lineno, f"${{{m.group(1)}}} is not set in this environment")


def check_inline_secrets(
    report: Report,
    server: str,
    *,
    line: Callable[[str], int | None],
    env: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    args: Sequence[str] | None = None,
    url: str | None = None,
) -> None:
    """``secret.inline`` for every value `checkrein import` would move to a ``${VAR}``.

    ``line(field)`` locates ``env``/``headers``/``args``/``url`` of this server in the file."""
    moved: list[tuple[str, str]] = []
    mover = SecretMover(lambda _s, where, var: moved.append((where, var)))
    for k, v in (env or {}).items():
        mover.env(server, k, v)
    for k, v in (headers or {}).items():
        mover.header(server, k, v)
    if args:
        mover.args(server, list(args))
    if url:
        mover.url(server, url)
    for where, var in moved:
        field = where.split(".", 1)[0].split("[", 1)[0]
        report.add(
            "secret.inline",
            line(field),
            f"server {server!r}: {where} holds a literal secret",
            f"Replace it with ${{{var}}} and set {var} in the environment (`checkrein import` does this).",
        )
