"""A TOML syntax error as a person can act on it: the line, the key, the lines shown, a fix.

tomllib says where it gave up (``Unclosed array (at line 9, column 1)``, or ``at end of
document``), which is often far below the mistake: an array or string left open on line 5 is
only noticed at the next table header. `syntax_problem` finds the line the unfinished value
starts on (the longest run of whole lines before the failure that parses on its own ends just
above it), names the key written there, and says in plain words what is usually missing.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass

from ._locate import HEADER, normalized_key

__all__ = ["SyntaxProblem", "syntax_problem"]

_AT = re.compile(r"\(at line (\d+), column (\d+)\)")
_KEY = re.compile(r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*=""")
_MAX_BACKTRACK = 400
"""Lines looked back over for the start of an unfinished value (configs are short)."""

_HINTS: tuple[tuple[str, str], ...] = (
    ("Unclosed array", "close the array with `]`, or put a `,` between two of its items"),
    ("Unclosed inline table", "close the inline table with `}`, or put a `,` between two of its entries"),
    ("Unterminated string", 'close the string with `"`'),
    ("Illegal character '\\n'", 'close the string with `"` on the line it starts on (or use a """multi-line""" string)'),
    ("Expected '=' after a key", "write `key = value`; quote a key that has spaces or other characters"),
    ("Cannot overwrite a value", "write each key once"),
    ("Cannot declare", "write each [table] header once"),
    ("Invalid value", "write a TOML value: strings in quotes, booleans as true or false"),
    ("Invalid statement", "write `key = value` or a `[table]` header"),
)


@dataclass(frozen=True, slots=True)
class SyntaxProblem:
    line: int | None
    """Where the mistake most likely is (the start of the unfinished value), 1-based."""
    key: str | None
    """The dotted key written at that line, with its table (``policy.allow``), when there is one."""
    message: str
    """tomllib's own words, what they usually mean, and the lines shown."""
    fix: str


def _parses(text: str) -> bool:
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return False
    return True


def _start_of_value(lines: list[str], failed_at: int) -> int:
    """The 1-based line the statement tomllib failed in starts on (``failed_at`` itself when the
    lines before it parse)."""
    for k in range(failed_at - 1, max(failed_at - 1 - _MAX_BACKTRACK, -1), -1):
        if _parses("\n".join(lines[:k]) + "\n"):
            # Line k+1 starts the statement; blank and comment lines are not a statement.
            start = k + 1
            while start < failed_at and (not lines[start - 1].strip() or lines[start - 1].lstrip().startswith("#")):
                start += 1
            return start
    return failed_at


def _opened(line: str) -> str | None:
    """The hint for what the value on ``line`` opens (an array, an inline table, a multi-line
    string), or ``None``."""
    value = line.partition("=")[2].lstrip()
    for quotes in ('"""', "'''"):
        if value.startswith(quotes):
            return f"close the multi-line string with `{quotes}`"
    for opener, prefix in (("[", "Unclosed array"), ("{", "Unclosed inline table")):
        if value.startswith(opener):
            return next(h for p, h in _HINTS if p == prefix)
    return None


def _key_at(lines: list[str], line: int) -> str | None:
    m = _KEY.match(lines[line - 1]) if 1 <= line <= len(lines) else None
    if m is None:
        return None
    key = normalized_key(re.sub(r"\s*\.\s*", ".", m.group(1)))
    for i in range(line - 1, -1, -1):
        header = HEADER.match(lines[i])
        if header:
            return f"{normalized_key(header.group(2))}.{key}"
    return key


def _shown(lines: list[str], numbers: list[int], caret: tuple[int, int] | None) -> str:
    width = len(str(max(numbers)))
    out: list[str] = []
    last = 0
    for n in sorted(set(numbers)):
        if last and n > last + 1:
            out.append(f"  {'':>{width}} | ...")
        out.append(f"  {n:>{width}} | {lines[n - 1]}" if n <= len(lines) else f"  {n:>{width}} | (end of file)")
        if caret is not None and caret[0] == n and n <= len(lines):
            out.append(f"  {'':>{width}} | {' ' * max(caret[1] - 1, 0)}^")
        last = n
    return "\n".join(out)


def syntax_problem(text: str, exc: tomllib.TOMLDecodeError) -> SyntaxProblem:
    """What `exc` (raised parsing ``text``) means, where, and under which key."""
    said = str(exc)
    lines = text.splitlines()
    m = _AT.search(said)
    if m:
        failed, column = int(m.group(1)), int(m.group(2))
    else:  # "(at end of document)"
        failed, column = len(lines) + 1, 0
    start = _start_of_value(lines, failed)
    key = _key_at(lines, start)
    hint = next((h for prefix, h in _HINTS if said.startswith(prefix)), None)
    if start != failed:
        # What the statement opened and never closed says more than where tomllib stumbled.
        hint = _opened(lines[start - 1]) or hint
    where = f"the value of `{key}`" if key else "the statement"
    words = said
    if start != failed:
        words += f": {where} starts at line {start} and is still open " + (f"at line {failed}" if m else "at the end of the file")
    wanted = (start - 1, start) if start == failed else (start, failed - 1, failed)
    numbers = [n for n in wanted if 1 <= n <= len(lines) + 1]
    shown = _shown(lines, numbers, (failed, column) if m else None) if numbers else ""
    hint = hint or "look for a missing quote, bracket or comma"
    fix = (f"In `{key}`, {hint}." if key else f"{hint[0].upper()}{hint[1:]} (line {start}).")
    return SyntaxProblem(start, key, words + (f"\n{shown}" if shown else ""), fix)
