"""`${VAR}` references: resolved once, when a config is loaded, in every string value of it.

    ${VAR}             the variable's value (set but empty is the empty string)
    ${VAR:-default}    ``default`` when VAR is unset or empty (as in a POSIX shell)
    $${                a literal ``${`` (no variable is read)

`resolve_references` is the only place checkrein reads its own environment for a config: the
loader calls it on the parsed TOML before validation, so every section (servers, headers, tokens,
``[policy]`` roots, webhook headers...) sees the same values. It returns the locations of the
strings it changed with the text as written, so whatever must not hold a secret (ledger, audit
digests, emitted configs) can use the reference instead of the value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ENV_REFERENCE", "Location", "Resolution", "UnsetVariable", "resolve_references", "written_form"]

ENV_REFERENCE = re.compile(r"\$(\$)?\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
"""A reference (group 2: the name, group 3: the default); group 1 set means the ``$${`` escape."""

Location = tuple[str | int, ...]
"""Where a value sits, as pydantic spells it: ``("servers", 0, "env", "TOKEN")``."""


@dataclass(frozen=True, slots=True)
class UnsetVariable:
    location: Location
    variable: str


@dataclass(slots=True)
class Resolution:
    data: dict[str, Any]
    """The mapping with every reference replaced (a copy; the input is not changed)."""
    written: dict[Location, str] = field(default_factory=dict)
    """Location -> the string as written, for every string a reference changed."""
    empty: dict[Location, tuple[str, ...]] = field(default_factory=dict)
    """Location -> the variables that were set but empty there (for error messages)."""
    unset: list[UnsetVariable] = field(default_factory=list)
    """References to unset variables without a default (left as written in ``data``)."""


def _expand(value: str, environ: Mapping[str, str], out: Resolution, where: Location) -> str:
    missing: list[str] = []
    empty: list[str] = []

    def sub(m: re.Match[str]) -> str:
        escaped, name, default = m.group(1), m.group(2), m.group(3)
        if escaped:
            return m.group(0)[1:]
        found = environ.get(name)
        if found:
            return found
        if default is not None:
            return default
        if found is None:
            missing.append(name)
            return m.group(0)
        empty.append(name)
        return found

    result = ENV_REFERENCE.sub(sub, value)
    if missing:
        out.unset.extend(UnsetVariable(where, name) for name in missing)
        return value
    if empty:
        out.empty[where] = tuple(empty)
    return result


def resolve_references(data: Mapping[str, Any], environ: Mapping[str, str]) -> Resolution:
    """Replace every reference in every string value of ``data`` (keys are left as they are)."""
    out = Resolution({})

    def walk(value: Any, where: Location) -> Any:
        if isinstance(value, str):
            if "${" not in value:
                return value
            new = _expand(value, environ, out, where)
            if new != value:
                out.written[where] = value
            return new
        if isinstance(value, Mapping):
            return {k: walk(v, (*where, k)) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, (*where, i)) for i, v in enumerate(value)]
        return value

    out.data = {k: walk(v, (k,)) for k, v in data.items()}
    return out


def written_form(dumped: dict[str, Any], written: Mapping[Location, str]) -> dict[str, Any]:
    """``dumped`` (a JSON-mode dump of the resolved config) with each string at a location in
    ``written`` put back as written. Values that are no longer strings (a ``timeout_s`` read from
    a variable) keep their value: they hold no secret and have no reference to show."""
    for where, text in written.items():
        node: Any = dumped
        for part in where[:-1]:
            try:
                node = node[part]
            except (KeyError, IndexError, TypeError):
                node = None
                break
        last = where[-1]
        if node is None:
            continue
        try:
            if isinstance(node[last], str):
                node[last] = text
        except (KeyError, IndexError, TypeError):
            continue
    return dumped
