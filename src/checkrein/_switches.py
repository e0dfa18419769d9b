"""checkrein's process switches: environment variables that pick an implementation for comparison
or for a platform without it (docs/architecture.md). `checkrein serve` refuses a value it does not
know, naming the variable and the values it takes, instead of running with its default."""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["SWITCHES", "switch", "switch_problems"]

SWITCHES: dict[str, tuple[str, ...]] = {
    "CHECKREIN_FAST_PATH": ("on", "off"),
    "CHECKREIN_EVENT_LOOP": ("uvloop", "asyncio"),
    "CHECKREIN_HTTP_PARSER": ("auto", "h11", "httptools"),
}
"""Each switch and the values it takes (case and surrounding blanks ignored; unset or empty is the
default, the first value)."""


def switch(name: str, environ: Mapping[str, str] | None = None) -> str:
    """The value switch ``name`` is set to, normalized (case and surrounding blanks dropped), or its
    default when it is unset, empty or a value it does not take (`serve` refuses those first). Every
    reader of a switch calls this, so what `serve` accepts is what the readers do."""
    values = SWITCHES[name]
    value = (os.environ if environ is None else environ).get(name, "").strip().lower()
    return value if value in values else values[0]


def switch_problems(environ: Mapping[str, str] | None = None) -> list[str]:
    """One message per switch set to a value it does not take, all of them at once."""
    env = os.environ if environ is None else environ
    problems = []
    for name, values in SWITCHES.items():
        value = env.get(name, "").strip().lower()
        if value and value not in values:
            problems.append(
                f"{name}={env[name]!r} is not a value it takes ({', '.join(values)}; unset is {values[0]})"
            )
    return problems
