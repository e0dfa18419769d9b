"""Bounds on a call's arguments, checked before anything else looks at them.

`argument_problem` walks the arguments once, iteratively (no recursion, so no RecursionError on
hostile nesting), and stops as soon as a limit is crossed: the work is bounded by the limits, not
by the input. It rejects: a top level that is not an object; nesting deeper than ``max_depth``;
more than ``max_strings`` strings (keys included); more than ``max_args_bytes`` of estimated JSON
(a lower bound of the compact encoding: UTF-8 string bytes plus quotes, digits and punctuation);
strings that are not valid Unicode text (lone surrogates, which cannot be encoded as UTF-8);
numbers that are NaN or infinite; and any value JSON cannot hold (bytes, sets, objects).
"""

from __future__ import annotations

import math
from typing import Any

from checkrein.config.policy import LimitSettings

__all__ = ["argument_problem"]


def argument_problem(arguments: Any, limits: LimitSettings) -> str | None:
    """None when ``arguments`` is within bounds; else a short reason (safe to show the client)."""
    if not isinstance(arguments, dict):
        return f"arguments must be a JSON object, not {type(arguments).__name__}"
    max_depth, max_bytes, max_strings = limits.max_depth, limits.max_args_bytes, limits.max_strings
    size = 2
    strings = 0
    stack: list[tuple[Any, int]] = [(arguments, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            if depth > max_depth:
                return f"arguments are nested deeper than {max_depth} levels"
            size += 2 + len(value)
            for k, v in value.items():
                if not isinstance(k, str):
                    return "object keys must be strings"
                strings += 1
                try:
                    size += len(k.encode("utf-8")) + 3
                except UnicodeEncodeError:
                    return "an object key is not valid Unicode text (lone surrogate)"
                stack.append((v, depth + 1))
        elif isinstance(value, list):
            if depth > max_depth:
                return f"arguments are nested deeper than {max_depth} levels"
            size += 2 + len(value)
            stack.extend((v, depth + 1) for v in value)
        elif isinstance(value, str):
            strings += 1
            try:
                size += len(value.encode("utf-8")) + 2
            except UnicodeEncodeError:
                return "a string is not valid Unicode text (lone surrogate)"
        elif isinstance(value, bool) or value is None:
            size += 5
        elif isinstance(value, int):
            # bit_length, not str(): str() of a huge int is slow (and capped by Python)
            size += 1 + value.bit_length() * 30103 // 100000
        elif isinstance(value, float):
            if not math.isfinite(value):
                return "numbers must be finite (no NaN or Infinity)"
            size += 4
        else:
            return f"arguments hold a value JSON cannot represent ({type(value).__name__})"
        if size > max_bytes:
            return f"arguments are larger than {max_bytes} bytes"
        if strings > max_strings:
            return f"arguments hold more than {max_strings} strings"
    return None
