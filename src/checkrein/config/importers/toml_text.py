"""Reading client TOML with located errors, and writing TOML by hand (the standard library
reads TOML but cannot write it).

Only what the importers and emitters need: basic strings with full escaping, keys, arrays of
strings and inline tables of strings. Every value goes through `toml_value`, so nothing a source
config contains (quotes, newlines, control characters) can break out of its string.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

from checkrein.errors import ConfigError

__all__ = ["read_toml", "toml_key", "toml_str", "toml_value"]


def read_toml(text: str, *, source: str) -> dict[str, Any]:
    """``text`` parsed as TOML (a leading BOM ignored); raises ``ConfigError`` naming ``source``
    and the line on malformed TOML."""
    try:
        return tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise ConfigError(f"malformed TOML: {exc}", file=source, line=int(m.group(1)) if m else None) from exc

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def toml_str(value: str) -> str:
    """A TOML basic string holding exactly ``value``."""
    out = []
    for ch in value:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_key(key: str) -> str:
    """A key as written in a table header or before ``=``: bare when TOML allows it, else quoted."""
    return key if _BARE_KEY.fullmatch(key) else toml_str(key)


def toml_value(value: object) -> str:
    """TOML text of a string, bool, int, finite float, sequence or string-keyed mapping.

    Raises ``TypeError`` for anything else and ``ValueError`` for NaN or infinity."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return toml_str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("TOML cannot hold NaN or infinity here")
        return repr(value)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{toml_key(str(k))} = {toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")
