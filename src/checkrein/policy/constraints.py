"""Per-argument constraints from `[policy.tools."<tool>".args."<name or /pointer>"]`, compiled once.

Each constraint applies to the value at its pointer (a bare name ``x`` means ``/x``); a missing value
is left to the schema's ``required``. Semantics, all strict:

- ``enum``: the value equals one of the listed values (``true`` never equals ``1``).
- ``minimum`` / ``maximum``: the value must be a number (not a boolean) within the range.
- ``max_length``: characters of a string, items of an array, keys of an object.
- ``pattern``: the WHOLE string must match (``re.fullmatch``: an allowlist, not a search). Config
  patterns are trusted, written by the operator; the input is bounded (strings longer than
  ``max_length``, or than 4096 characters when none is set, are denied before matching).
- ``roots``: a path string must stay inside one of the roots after normalization: no NUL, no ``~``
  prefix, no backslash, and ``..`` may not climb out. Relative paths are taken relative to the
  upstream's working directory, so a relative root (``data``) allows ``data/x`` and ``./data/x``;
  an absolute path must sit under an absolute root. (The `paths` analyzer checks decoded forms.)
- ``hosts``: a URL string must be ``http``/``https``, carry no credentials, and have a host equal
  to one listed (or under a ``*.example.com`` wildcard, which does not match the bare domain). The
  URL is read as a WHATWG client reads it (TAB/CR/LF deleted, a backslash ends the host) and hosts
  are compared after IDNA mapping, so no spelling reaches a host the check did not see.
- ``read_only_sql``: the SQL analyzer's `classify_sql` must say ``read``: no statement with a side
  effect (writes, DDL, `SELECT ... INTO`, nested DML, row locks, `nextval`, `set_config`, advisory
  locks, server functions, unbounded `generate_series`...), judged on the parsed tree; the reason
  names what was found.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from checkrein.config.policy import ArgConstraint

from .analyzers.sql import side_effect
from .analyzers.urls import host_allowed
from .schema import json_equal

__all__ = ["CompiledConstraint", "SqlClassifier", "compile_constraint", "parse_pointer"]

_PATTERN_MAX_INPUT = 4096
_MISSING = object()

SqlClassifier = Callable[[str], str]
"""`checkrein.policy.analyzers.classify_sql`: text -> ``read`` | ``write`` | ``ddl`` | ``unknown``."""


def parse_pointer(key: str) -> tuple[str, ...]:
    """Tokens of a config argument key: ``name`` -> (name,), ``/a/b~1c`` -> (a, b/c)."""
    if not key.startswith("/"):
        return (key,)
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in key[1:].split("/"))


def pointer_of(tokens: tuple[str, ...]) -> str:
    return "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in tokens)


def _lookup(arguments: Any, tokens: tuple[str, ...]) -> Any:
    cur = arguments
    for t in tokens:
        if isinstance(cur, dict):
            if t not in cur:
                return _MISSING
            cur = cur[t]
        elif isinstance(cur, list) and t.isdigit():
            i = int(t)
            if i >= len(cur):
                return _MISSING
            cur = cur[i]
        else:
            return _MISSING
    return cur


def _is_number(v: Any) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or isinstance(v, float)


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/") or root == "/"


def _path_problem(value: str, roots: tuple[str, ...]) -> str | None:
    if "\x00" in value:
        return "contains a NUL byte"
    if value.startswith("~"):
        return "starts with ~ (home directory expansion is not allowed)"
    if "\\" in value:
        return "contains a backslash (Windows path forms are not allowed)"
    norm = posixpath.normpath(value) if value else "."
    for root in roots:
        r = posixpath.normpath(root)
        if posixpath.isabs(norm) != posixpath.isabs(r):
            continue
        if posixpath.isabs(norm) or (norm != ".." and not norm.startswith("../")):
            if r == "." or _within(norm, r):
                return None
    return f"is outside the allowed roots {list(roots)}"


_TAB_NEWLINE = str.maketrans("", "", "\t\r\n")


def _url_problem(value: str, hosts: tuple[str, ...]) -> str | None:
    text = value.strip().translate(_TAB_NEWLINE)
    scheme = text.partition(":")[0].lower()
    if scheme in ("http", "https"):
        text = text.replace("\\", "/")  # special schemes: a backslash is a slash (WHATWG)
    try:
        parts = urlsplit(text)
        host = parts.hostname or ""
    except ValueError:
        return "is not a valid URL"
    if parts.scheme.lower() not in ("http", "https"):
        return "is not an http(s) URL"
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return "carries credentials"
    if not host or not host_allowed(host, hosts):
        return f"has host {host!r}, not one of the allowed hosts {list(hosts)}"
    return None


class CompiledConstraint:
    """One argument constraint with everything precomputed; `check` is pure."""

    __slots__ = ("_enum", "_enum_str", "_hi", "_lo", "_max_len", "_needs_string", "_pattern", "pointer", "spec", "tokens")

    def __init__(self, key: str, spec: ArgConstraint) -> None:
        self.tokens = parse_pointer(key)
        self.pointer = pointer_of(self.tokens)
        self.spec = spec
        self._pattern = re.compile(spec.pattern) if spec.pattern is not None else None
        self._enum = tuple(spec.enum) if spec.enum is not None else None
        # All-string enums (the usual case) are a set lookup; mixed ones use JSON equality.
        self._enum_str = (
            frozenset(e for e in spec.enum if isinstance(e, str))
            if spec.enum is not None and all(isinstance(e, str) for e in spec.enum)
            else None
        )
        self._lo, self._hi, self._max_len = spec.minimum, spec.maximum, spec.max_length
        self._needs_string = (
            self._pattern is not None or spec.roots is not None or spec.hosts is not None or spec.read_only_sql
        )

    def check(self, arguments: Any, classify_sql: SqlClassifier | None) -> str | None:
        """None when the value satisfies the constraint (or is absent); else why not.

        Raises ``RuntimeError`` when ``read_only_sql`` is set and no SQL classifier is available
        (the caller denies: fail closed).
        """
        tokens = self.tokens
        if len(tokens) == 1 and isinstance(arguments, dict):
            v = arguments.get(tokens[0], _MISSING)
        else:
            v = _lookup(arguments, tokens)
        if v is _MISSING:
            return None
        if self._enum_str is not None:
            if not (isinstance(v, str) and v in self._enum_str):
                return f"is not one of {list(self._enum or ())}"
        elif self._enum is not None and not any(json_equal(v, o) for o in self._enum):
            return f"is not one of {list(self._enum)}"
        lo, hi = self._lo, self._hi
        if lo is not None or hi is not None:
            if not _is_number(v):
                return "must be a number"
            if lo is not None and v < lo:
                return f"is less than the minimum {lo:g}"
            if hi is not None and v > hi:
                return f"is greater than the maximum {hi:g}"
        if self._max_len is not None and isinstance(v, str | list | dict) and len(v) > self._max_len:
            return f"is longer than {self._max_len}"
        if not self._needs_string:
            return None
        if not isinstance(v, str):
            return "must be a string"
        return self._check_text(v, classify_sql)

    def _check_text(self, text: str, classify_sql: SqlClassifier | None) -> str | None:
        c = self.spec
        if self._pattern is not None:
            if len(text) > (c.max_length if c.max_length is not None else _PATTERN_MAX_INPUT):
                return "is too long to check against the pattern"
            if self._pattern.fullmatch(text) is None:
                return f"does not match the pattern {self._pattern.pattern!r}"
        if c.roots is not None:
            problem = _path_problem(text, c.roots)
            if problem is not None:
                return problem
        if c.hosts is not None:
            problem = _url_problem(text, c.hosts)
            if problem is not None:
                return problem
        if c.read_only_sql:
            if classify_sql is None:
                raise RuntimeError("read_only_sql is configured but the SQL analyzer is not available")
            kind = classify_sql(text)
            if kind != "read":
                why = side_effect(text) if len(text) <= 65_536 else None
                return f"is not read-only SQL (classified {kind}{': ' + why if why else ''})"
        return None


def compile_constraint(key: str, spec: ArgConstraint) -> CompiledConstraint:
    return CompiledConstraint(key, spec)
