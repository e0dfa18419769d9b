"""Read JSON the way people write it for Claude: tolerate comments, trailing commas and a BOM,
but say where each one is, so `lint` can report them and `import` never crashes on them.

Claude Code's own reader of `.mcp.json` is strict JSON; a file with comments may load in one
client and fail in another, which is why these are findings and not silently accepted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["JsonIssue", "JsonText", "key_line", "read_jsonc"]

IssueKind = Literal["bom", "comment", "trailing_comma", "duplicate_key", "syntax"]


@dataclass(frozen=True, slots=True)
class JsonIssue:
    kind: IssueKind
    line: int
    message: str


@dataclass(frozen=True, slots=True)
class JsonText:
    """The parsed value (``None`` when the text is not JSON even after the repairs) and the issues."""

    value: Any
    issues: tuple[JsonIssue, ...]
    text: str
    """The text as read (BOM removed), for locating keys."""


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _strip(text: str) -> tuple[str, list[JsonIssue]]:
    """Blank out comments and trailing commas outside strings, keeping every offset (and so
    every line number) where it was."""
    out = list(text)
    issues: list[JsonIssue] = []
    i, n = 0, len(text)
    in_str = False
    last_comma: int | None = None  # position of a comma followed so far only by whitespace/comments
    while i < n:
        c = text[i]
        if in_str:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_str = False
            i += 1
            continue
        if c == '"':
            in_str = True
            last_comma = None
            i += 1
            continue
        if c == "/" and i + 1 < n and text[i + 1] in "/*":
            start = i
            if text[i + 1] == "/":
                end = text.find("\n", i)
                end = n if end == -1 else end
            else:
                end = text.find("*/", i + 2)
                end = n if end == -1 else end + 2
            for j in range(start, end):
                if out[j] != "\n":
                    out[j] = " "
            issues.append(JsonIssue("comment", _line_of(text, start), "comment (JSON has no comments)"))
            i = end
            continue
        if c == ",":
            last_comma = i
        elif c in "}]":
            if last_comma is not None:
                out[last_comma] = " "
                issues.append(
                    JsonIssue("trailing_comma", _line_of(text, last_comma), "trailing comma (not valid JSON)")
                )
            last_comma = None
        elif not c.isspace():
            last_comma = None
        i += 1
    return "".join(out), issues


def read_jsonc(raw: str) -> JsonText:
    """Parse ``raw`` leniently. Never raises: a value that cannot be read is ``None`` with a
    ``syntax`` issue naming the line."""
    issues: list[JsonIssue] = []
    text = raw
    if text.startswith("\ufeff"):
        text = text[1:]
        issues.append(JsonIssue("bom", 1, "file starts with a UTF-8 byte order mark"))
    cleaned, found = _strip(text)
    issues.extend(found)

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in items:
            if k in out:
                issues.append(
                    JsonIssue("duplicate_key", key_line(text, [k]) or 1, f"duplicate key {k!r}: the last one wins")
                )
            out[k] = v
        return out

    try:
        value = json.loads(cleaned, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        issues.append(JsonIssue("syntax", exc.lineno, f"not valid JSON: {exc.msg}"))
        value = None
    except RecursionError:
        issues.append(JsonIssue("syntax", 1, "not valid JSON: nested too deeply"))
        value = None
    issues.sort(key=lambda x: x.line)
    return JsonText(value=value, issues=tuple(issues), text=text)


def key_line(text: str, path: list[str]) -> int | None:
    """Best-effort 1-based line of the key at ``path`` (object keys, outermost first).

    Each key is searched after the previous one, so ``["mcpServers", "github", "env"]`` finds the
    ``env`` of the ``github`` server. Returns the line of the deepest key found, ``None`` if none."""
    pos = 0
    line: int | None = None
    for key in path:
        m = re.compile(r'"' + re.escape(json.dumps(key)[1:-1]) + r'"\s*:').search(text, pos)
        if not m:
            return line
        pos = m.end()
        line = _line_of(text, m.start())
    return line
