"""Find the line of a key in a TOML file, for error messages (tomllib gives no positions)."""

from __future__ import annotations

import re
from collections.abc import Sequence

HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
"""A ``[table]`` or ``[[array]]`` header line (group 1: the brackets, group 2: the name)."""
_HEADER = HEADER


def normalized_key(name: str) -> str:
    """A header's dotted name with quotes and spaces around its parts removed."""
    return _norm(name)


def _norm(name: str) -> str:
    return ".".join(part.strip().strip('"').strip("'") for part in re.split(r"\.(?=(?:[^\"]*\"[^\"]*\")*[^\"]*$)", name))


def locate(text: str, loc: Sequence[str | int]) -> int | None:
    """Best-effort 1-based line of the value at ``loc`` (pydantic-style location) in TOML ``text``.

    Handles ``[table]``, ``[[array]]`` (by index), dotted headers and ``key = value`` lines. Returns
    ``None`` when the key cannot be found (for example, a missing required key: then the table's
    header line is returned if known).
    """
    lines = text.splitlines()
    headers: list[tuple[int, str, bool]] = []  # (line index, dotted name, is_array)
    for i, line in enumerate(lines):
        m = _HEADER.match(line)
        if m:
            headers.append((i, _norm(m.group(2)), m.group(1) == "[["))

    # Walk loc: consume table parts, array indexes; remember the section span.
    parts = [p for p in loc]
    start, end = 0, len(lines)
    prefix: list[str] = []
    idx = 0
    best: int | None = None
    while idx < len(parts):
        part = parts[idx]
        if isinstance(part, int):
            idx += 1
            continue
        candidate = ".".join([*prefix, part])
        nxt = parts[idx + 1] if idx + 1 < len(parts) else None
        matches = [h for h in headers if h[1] == candidate and start <= h[0] < end]
        if matches:
            if matches[0][2] and isinstance(nxt, int):
                if nxt < len(matches):
                    h = matches[nxt]
                else:
                    h = matches[-1]
                idx += 2
            else:
                h = matches[0]
                idx += 1
            later = [x[0] for x in headers if x[0] > h[0] and not x[1].startswith(candidate + ".")]
            start, end = h[0], (min(later) if later else len(lines))
            best = h[0] + 1
            prefix = [candidate]
            continue
        if any(h[1].startswith(candidate + ".") and start <= h[0] < end for h in headers):
            # An implicit table: only deeper headers name it (`[policy.tools."x"]` for `tools`).
            prefix = [candidate]
            idx += 1
            continue
        # A plain key inside the current section (or a dotted-key table header below it).
        key_re = re.compile(r"^\s*[\"']?" + re.escape(str(part)) + r"[\"']?\s*[=.]")
        for i in range(start, end):
            if key_re.match(lines[i]):
                return i + 1
        # Inline table key on some line of the section.
        inline_re = re.compile(r"[{,]\s*[\"']?" + re.escape(str(part)) + r"[\"']?\s*=")
        for i in range(start, end):
            if inline_re.search(lines[i]):
                return i + 1
        return best
    return best
