"""`scan_arguments`: every string in a call's arguments, raw and decoded, through every enabled
analyzer, with RFC 6901 pointers. Object keys are scanned too (untyped), and a string that holds
a JSON object or array is parsed once and its strings scanned under the string's pointer.

Bounded: at most `MAX_DEPTH` levels, `MAX_STRINGS` strings, `MAX_SCAN_CHARS` characters per
string and `MAX_JSON_CHARS` characters of embedded JSON; past a bound the scan reports a `scan`
finding rather than passing the rest unchecked. (The engine's `[policy.limits]` normally rejects such arguments earlier.)

Fast path (the default): a value is decoded only when it holds a decoder's trigger (`%`, `\\`,
`&`, `+` or a non-ASCII character), and each analyzer runs only when its `may_find` prefilter
says it could report something for the value's kind; one `findall` over the value collects the
trigger characters of every prefilter at once (`TRIGGERS`) and feeds them all. A value that
decoding changes goes through every enabled analyzer. Each prefilter is a necessary condition of
its check, so the fast path reports exactly what the full path (``full=True``: decode and run
everything) reports; Hypothesis tests hold the two to that. Identical strings of one call are
analyzed once, and with ``ctx.verdicts`` (the compiled policy's `VerdictCache`) a string seen
in an earlier call with the same kind and analyzer context is not analyzed again. An untyped quiet
word (`QUIET_WORD`: `utf-8`, `finance`) is skipped before either lookup: `scan_value` returns
nothing for it, and one `fullmatch` costs less than a cache lookup and insert; the cache keeps the
quiet words it has seen in a bounded set (`VerdictCache.quiet`), so a repeat costs one lookup.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import replace
from typing import Any

from checkrein.config.policy import ArgKind
from checkrein.policy.decision import Finding

from . import paths, secrets, shell, sql, urls
from .api import KIND_MEMO_SIZE, Analyzer, ScanContext, char_class
from .decode import decoded_forms
from .schema import kind_for
from .verdicts import value_key

__all__ = ["ANALYZERS", "CHECKS", "FULL_CHECKS", "QUIET_WORD", "PREFILTERS", "CheckAnalyzer", "MAX_DEPTH", "MAX_JSON_CHARS", "MAX_SCAN_CHARS", "MAX_STRINGS", "TRIGGERS", "scan_arguments", "scan_value"]

MAX_DEPTH = 64
MAX_STRINGS = 20_000
MAX_JSON_CHARS = 262_144
MAX_SCAN_CHARS = 262_144
"""Characters of one string value the analyzers read (their cost is linear in it)."""

Check = Callable[[Sequence[str], str, ArgKind | None, ScanContext], list[Finding]]
CHECKS: Mapping[str, Check] = {
    "paths": paths.check_path,
    "urls": urls.check_url,
    "shell": shell.check_shell,
    "sql": sql.check_sql,
    "secrets": secrets.check_secrets,
}
"""Analyzer name -> check over (decoded forms, pointer, kind, ctx). Order is the report order."""
FULL_CHECKS: Mapping[str, Check] = {**CHECKS, "paths": paths.general_check_path}
"""`CHECKS` without the checks' own fast routes (what ``full=True`` runs: the reference)."""

Prefilter = Callable[[str, ArgKind | None, Set[str] | None], bool]
PREFILTERS: Mapping[str, Prefilter] = {
    "paths": paths.may_find,
    "urls": urls.may_find,
    "shell": shell.may_find,
    "sql": sql.may_find,
    "secrets": secrets.may_find,
}
"""Analyzer name -> `may_find(value, kind, triggers)`: False only when the check is certainly empty
for the undecoded value (the fast path's skip test)."""

TRIGGERS = paths.TRIGGERS | shell.TRIGGERS | sql.TRIGGERS | secrets.TRIGGERS
"""Every prefilter's trigger characters: one `findall` per value feeds all of them."""
_ANY_TRIGGER = char_class(TRIGGERS)

# A value without these characters is its only decoded form (see `decoded_forms`).
_DECODE_TRIGGER = re.compile(r"[%\\&+]")
# One short ASCII word of letters, optionally with a hyphenated part and a final number (`utf-8`,
# `latin-1`, `en-gb`): no analyzer can report it unless it starts with a boolean or clause keyword
# (`ortrue`, `limit`), or holds `select`, `metadata`, `true` or `false` (each `may_find` agrees;
# a Hypothesis test runs the full scan on strings generated from this pattern). Fewer than 12
# characters (a longer alphanumeric run may be base64).
QUIET_WORD = re.compile(
    r"(?i)(?!and|or|xor|group|having|procedure|limit|like|union)(?![a-z0-9-]*(?:select|metadata|true|false))"
    r"[a-z]{1,11}(?:-[a-z]{1,8})?(?:-?[0-9]{1,2})?"
)
_QUIET_WORD = QUIET_WORD
_QUIET_LEADS = ("and", "or", "xor", "group", "having", "procedure", "limit", "like", "union")


def _letters_quiet(text: str) -> bool:
    """`QUIET_WORD.fullmatch(text)` for an ASCII word of 1-11 letters (the caller checks that): the
    regex's lookaheads as string tests, ~3x cheaper (a Hypothesis test holds the two equal)."""
    low = text.lower()
    return not low.startswith(_QUIET_LEADS) and "true" not in low and "false" not in low and "select" not in low and "metadata" not in low


class _Overflow(Exception):
    def __init__(self, kind: str, pointer: str) -> None:
        super().__init__(kind)
        self.kind = kind
        self.pointer = pointer


def _escape(key: str) -> str:
    if "~" not in key and "/" not in key:
        return key
    return key.replace("~", "~0").replace("/", "~1")


def _embedded_json(text: str) -> Any:
    if text[:1] not in "[{" and text.lstrip()[:1] not in ("[", "{"):
        return None
    s = text.strip()
    if len(s) < 2 or len(s) > MAX_JSON_CHARS or s[0] not in "[{" or s[-1] not in "]}":
        return None
    try:
        return json.loads(s)
    except (ValueError, RecursionError):
        return None


def _collect(
    value: Any, pointer: str, depth: int, in_json: bool, out: list[tuple[str, str, bool]], declared: Set[str] = frozenset()
) -> None:
    """Append (pointer, string, is_key) for every string under ``value``, depth-first; raise
    `_Overflow` past `MAX_DEPTH` or `MAX_STRINGS` (``out`` then holds the strings before that point).
    ``declared``: keys of ``value`` itself (a mapping) not to collect (`ScanContext.declared_keys`)."""
    if depth > MAX_DEPTH:
        raise _Overflow("too_deep", pointer)
    if isinstance(value, str):
        _add(out, pointer, value, False)
        if not in_json:
            inner = _embedded_json(value)
            if isinstance(inner, dict | list):
                _collect(inner, pointer, depth + 1, True, out)
    elif isinstance(value, list | tuple):
        deeper = depth + 1
        for i, v in enumerate(value):
            # Numbers, booleans and null hold no string: skipped without a call (unless past the
            # depth bound, where the call reports `too_deep` as for any other value).
            if deeper <= MAX_DEPTH:
                if v is None or isinstance(v, int | float):
                    continue
                # A string `_embedded_json` cannot parse (it starts with neither a bracket nor a space)
                # is appended here: a call per string is a good part of the walk.
                if isinstance(v, str) and (in_json or ((head := v[:1]) != "[" and head != "{" and not head.isspace())):
                    if len(out) >= MAX_STRINGS:
                        raise _Overflow("too_many_strings", f"{pointer}/{i}")
                    out.append((f"{pointer}/{i}", v, False))  # `_collect` of a plain string, inlined
                    continue
            _collect(v, f"{pointer}/{i}", deeper, in_json, out)
    elif value is None or isinstance(value, int | float):
        return  # before the `Mapping` check, which is slow for a non-mapping
    elif isinstance(value, dict) or isinstance(value, Mapping):
        deeper = depth + 1
        for k, v in value.items():
            # Every key, identifiers too (`ghp_...`, `xp_cmdshell`, `metadata` are identifiers); a
            # quiet word is skipped in `scan_arguments`, a repeated key is a verdict-cache hit.
            scan_key = isinstance(k, str) and k != "" and k not in declared
            if not scan_key and deeper <= MAX_DEPTH and (v is None or isinstance(v, int | float)):
                continue
            name = k if type(k) is str else str(k)
            child = f"{pointer}/{name}" if "~" not in name and "/" not in name else f"{pointer}/{_escape(name)}"
            if scan_key:
                _add(out, child, k, True)
            if deeper <= MAX_DEPTH and isinstance(v, str) and (in_json or ((head := v[:1]) != "[" and head != "{" and not head.isspace())):
                if len(out) >= MAX_STRINGS:
                    raise _Overflow("too_many_strings", child)
                out.append((child, v, False))  # `_collect` of a plain string, inlined
                continue
            _collect(v, child, deeper, in_json, out)


def _add(out: list[tuple[str, str, bool]], pointer: str, text: str, is_key: bool) -> None:
    if len(out) >= MAX_STRINGS:
        raise _Overflow("too_many_strings", pointer)
    out.append((pointer, text, is_key))


def scan_value(value: str, pointer: str, kind: ArgKind | None, ctx: ScanContext, *, full: bool = False) -> list[Finding]:
    """Findings of every enabled analyzer for one string (raw and decoded forms).

    Only the first `MAX_SCAN_CHARS` characters are analyzed; a longer value also yields a
    `scan/value_too_long` finding, so the unanalyzed tail fails closed under the default policy.
    ``full`` skips the fast path (module docstring); the findings are the same either way."""
    findings: list[Finding] = []
    if len(value) > MAX_SCAN_CHARS:
        findings.append(
            Finding("scan", "value_too_long", pointer, f"only the first {MAX_SCAN_CHARS} characters of {len(value)} were analyzed", "", "medium")
        )
        value = value[:MAX_SCAN_CHARS]
    if full or not value.isascii() or _DECODE_TRIGGER.search(value) is not None:
        forms = decoded_forms(value)
        full = full or len(forms) > 1
    elif kind is None and len(value) < 12 and (_letters_quiet(value) if value.isalpha() else _QUIET_WORD.fullmatch(value) is not None):
        return findings
    else:
        forms = [value]
    # One pass over the value finds the trigger characters of every prefilter at once.
    triggers = None if full else frozenset(_ANY_TRIGGER.findall(value))
    for name, check in (FULL_CHECKS if full else CHECKS).items():
        if name in ctx.enabled and (full or PREFILTERS[name](value, kind, triggers)):
            findings.extend(check(forms, pointer, kind, ctx))
    return findings


def scan_arguments(arguments: Mapping[str, Any], ctx: ScanContext, *, full: bool = False) -> list[Finding]:
    """Deduplicated findings (by analyzer, kind and pointer) for every string in ``arguments``.

    A value's kind comes from ``ctx.kinds`` (see `kind_for`); keys and unknown values are untyped
    and get only the analyzers' high-confidence checks. ``full`` skips the fast path and the
    verdict cache (see the module docstring; the findings are the same). Pure; raises only on
    programming errors (the engine denies the call if it does)."""
    findings: list[Finding] = []
    seen: set[tuple[str, str, str]] = set()
    memo: dict[tuple[str, ArgKind | None], Sequence[Finding]] = {}
    strings: list[tuple[str, str, bool]] = []
    overflow: _Overflow | None = None
    try:
        _collect(arguments, "", 0, False, strings, ctx.declared_keys)
    except _Overflow as exc:
        overflow = exc
    cache = ctx.verdicts if not full and ctx.resolver is None else None
    scope = cache.scope((ctx.path_roots, ctx.allowed_hosts, ctx.commands, ctx.enabled)) if cache is not None else None
    kinds, kind_memo = ctx.kinds, ctx.kind_memo
    for pointer, text, is_key in strings:
        if is_key:
            kind: ArgKind | None = None
        elif pointer in kind_memo:
            kind = kind_memo[pointer]
        else:
            kind = kind_for(pointer, kinds)
            if len(kind_memo) < KIND_MEMO_SIZE:
                kind_memo[pointer] = kind
        if kind is None and not full:
            # `scan_value` returns nothing for a quiet word: cheaper to test than to look up or store,
            # and a word the policy has already seen quiet is one set lookup (no lock, no LRU).
            if cache is not None and text in cache.quiet:
                continue
            if len(text) < 12 and text.isascii():
                if text.isalpha():
                    # Cheaper to test again than to remember (the set's lock) for a word of letters.
                    if _letters_quiet(text):
                        continue
                elif _QUIET_WORD.fullmatch(text) is not None:
                    if cache is not None:
                        cache.remember_quiet(text)
                    continue
        known = memo.get((text, kind))
        if known is None:
            if cache is not None and scope is not None:
                key = (scope, kind, value_key(text))
                known = cache.get(key)
                if known is None:
                    known = tuple(scan_value(text, pointer, kind, ctx))
                    # A value declared a secret, or holding one, is not kept (the key is the value).
                    if kind != "secret" and not any(f.analyzer == "secrets" for f in known):
                        cache.put(key, known)
            else:
                known = scan_value(text, pointer, kind, ctx, full=full)
            memo[(text, kind)] = known
        for f in known:
            if f.path != pointer:
                f = replace(f, path=pointer)
            key3 = (f.analyzer, f.kind, f.path)
            if key3 not in seen:
                seen.add(key3)
                findings.append(f)
    if overflow is not None:
        findings.append(Finding("scan", overflow.kind, overflow.pointer, f"argument scan stopped: {overflow.kind.replace('_', ' ')}", ""))
    return findings


class CheckAnalyzer:
    """One analyzer behind the `Analyzer` protocol: decodes the value, then runs its check."""

    def __init__(self, name: str, check: Check) -> None:
        self.name = name
        self._check = check

    def analyze(self, value: str, pointer: str, kind: ArgKind | None, ctx: ScanContext) -> list[Finding]:
        return self._check(decoded_forms(value), pointer, kind, ctx)


ANALYZERS: Mapping[str, Analyzer] = {name: CheckAnalyzer(name, check) for name, check in CHECKS.items()}
"""The built-in analyzers by name (`paths`, `urls`, `shell`, `sql`, `secrets`)."""
