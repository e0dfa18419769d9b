"""Bounds on a call's arguments, checked before anything else looks at them.

`argument_problem` walks the arguments once, iteratively (no recursion, so no RecursionError on
hostile nesting), and stops as soon as a limit is crossed. It rejects: a top level that is not an
object; nesting deeper than ``max_depth``; more than ``max_strings`` strings (keys included); more
than ``max_args_bytes`` of estimated JSON (a lower bound of the compact encoding: UTF-8 string
bytes plus quotes, digits and punctuation); strings that are not valid Unicode text (lone
surrogates, which cannot be encoded as UTF-8); numbers that are NaN or infinite; and any value
JSON cannot hold (bytes, sets, objects). Work is linear in the input and stops at the first limit.
"""

from __future__ import annotations

import math
from typing import Any

from checkrein.config.policy import LimitSettings

__all__ = ["argument_problem"]

_SURROGATE = "a string is not valid Unicode text (lone surrogate)"


def _text_bytes(s: str) -> int:
    """UTF-8 length of ``s``; -1 when it holds a lone surrogate (not encodable)."""
    if s.isascii():  # the common case, checked in C without encoding
        return len(s)
    try:
        return len(s.encode("utf-8"))
    except UnicodeEncodeError:
        return -1


def _scalar_size(value: Any) -> int | str:
    """Estimated JSON size of a non-container value, or the reason it is not allowed."""
    if value is None or value is True or value is False:
        return 5
    if isinstance(value, int):
        # bit_length, not str(): str() of a huge int is slow (and capped by Python)
        return 1 + value.bit_length() * 30103 // 100000
    if isinstance(value, float):
        return 4 if math.isfinite(value) else "numbers must be finite (no NaN or Infinity)"
    return f"arguments hold a value JSON cannot represent ({type(value).__name__})"


def argument_problem(arguments: Any, limits: LimitSettings) -> str | None:
    """None when ``arguments`` is within bounds; else a short reason (safe to show the client)."""
    if not isinstance(arguments, dict):
        return f"arguments must be a JSON object, not {type(arguments).__name__}"
    max_depth, max_bytes, max_strings = limits.max_depth, limits.max_args_bytes, limits.max_strings
    size = 0
    strings = 0
    stack: list[tuple[Any, int]] = [(arguments, 1)]
    while stack:
        container, depth = stack.pop()
        if depth > max_depth:
            return f"arguments are nested deeper than {max_depth} levels"
        size += 2 + len(container)
        values: Any = container
        if isinstance(container, dict):
            for k in container:
                if not isinstance(k, str):
                    return "object keys must be strings"
                # `_text_bytes` inlined for the common ASCII key (a call per string is most of the walk).
                n = len(k) if k.isascii() else _text_bytes(k)
                if n < 0:
                    return "an object key is not valid Unicode text (lone surrogate)"
                size += n + 3
            strings += len(container)
            values = container.values()
        for v in values:
            if isinstance(v, str):
                strings += 1
                n = len(v) if v.isascii() else _text_bytes(v)
                if n < 0:
                    return _SURROGATE
                size += n + 2
            elif isinstance(v, dict | list):
                stack.append((v, depth + 1))
            elif v is None or v is True or v is False:
                size += 5  # `_scalar_size` inlined for the common scalars
            else:
                s = _scalar_size(v)
                if isinstance(s, str):
                    return s
                size += s
        if size > max_bytes:
            return f"arguments are larger than {max_bytes} bytes"
        if strings > max_strings:
            return f"arguments hold more than {max_strings} strings"
    return None
