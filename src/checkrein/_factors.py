"""`required_factors`: literal strings one of which every match of a regex holds, derived from
`re`'s own parse of the pattern. Used by the injection detector's needles
(`checkrein.policy.injection.phrase`) and the analyzers' gated searches
(`checkrein.policy.analyzers.gated`); kept apart so that neither imports the other's package.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

__all__ = ["required_factors"]

_PARSER: Any = importlib.import_module("re._parser")  # `re`'s own parser (no stub: typed as Any)

_EXACT_MAX = 256
"""Strings a piece of a regex is spelled out as before only its factors are kept."""
_Strings = frozenset[str]
_Info = tuple[_Strings | None, _Strings | None]
"""(every string the piece matches, if few; strings one of which every match holds, if any)."""


def _space(c: str) -> str:
    return " " if c.isspace() else c


def _squeeze(s: str) -> str:
    while "  " in s:
        s = s.replace("  ", " ")
    return s


def _as_factors(strings: _Strings | None) -> _Strings | None:
    return strings if strings and "" not in strings else None


def _better(a: _Strings | None, b: _Strings | None) -> _Strings | None:
    """The more selective of two factor sets: longer shortest string, then longer strings on average."""
    if a is None or b is None:
        return a if b is None else b
    score_a = (min(map(len, a)), sum(map(len, a)) / len(a))
    return a if score_a >= (min(map(len, b)), sum(map(len, b)) / len(b)) else b


def _chars(items: Any) -> _Strings | None:
    """The characters a class (``[...]``, ``\\s``) matches, when it is a few literal ones."""
    out: set[str] = set()
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            out.add(_space(chr(av)))
        elif name == "CATEGORY" and str(av) == "CATEGORY_SPACE":
            out.add(" ")
        elif name == "RANGE" and av[1] - av[0] < 16:
            out.update(_space(chr(c)) for c in range(av[0], av[1] + 1))
        else:  # a negated class, \\w, \\d, a wide range
            return None
    return frozenset(out) if len(out) <= 16 else None


def _sequence(items: Any) -> _Info:
    """A concatenation: runs of spelled-out pieces multiplied out; the best factor set of any piece or run."""
    best: _Strings | None = None
    run: _Strings = frozenset({""})
    whole = True
    for op, av in items:
        exact, factors = _piece(str(op), av)
        if exact is not None and len(run) * len(exact) <= _EXACT_MAX:
            run = frozenset(_squeeze(a + b) for a in run for b in exact)
            continue
        whole = False
        best = _better(best, _as_factors(run))
        best = _better(best, factors if exact is None else _as_factors(exact))
        run = frozenset({""}) if exact is None else exact
    best = _better(best, _as_factors(run))
    return (run if whole else None), best


def _piece(name: str, av: Any) -> _Info:
    """One node of a parsed regex (`re._parser`), in the needle view (whitespace is one space)."""
    exact: _Strings | None
    if name == "LITERAL":
        exact = frozenset({_space(chr(av))})
        return exact, exact
    if name == "IN":
        exact = _chars(av)
        return exact, exact
    if name in {"AT", "ASSERT", "ASSERT_NOT"}:  # zero width: nothing of the match
        return frozenset({""}), None
    if name == "SUBPATTERN":
        _, add_flags, del_flags, sub = av
        return _sequence(sub) if not add_flags and not del_flags else (None, None)
    if name == "ATOMIC_GROUP":
        return _sequence(av)
    if name == "BRANCH":
        infos = [_sequence(sub) for sub in av[1]]
        exacts = [e for e, _ in infos if e is not None]
        exact = None
        if len(exacts) == len(infos) and sum(map(len, exacts)) <= _EXACT_MAX:
            exact = frozenset().union(*exacts)
        branch_factors = [f if e is None else _as_factors(e) for e, f in infos]
        if any(f is None for f in branch_factors):
            return exact, None
        return exact, frozenset().union(*(f for f in branch_factors if f is not None))
    if name in {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}:
        lo, hi, sub = av
        exact, factors = _sequence(sub)
        if exact is not None and exact <= {"", " "}:  # whitespace runs are one character
            return (frozenset({"", " "}) if lo == 0 or "" in exact else frozenset({" "})), None
        if exact is not None and hi <= 8 and len(exact) ** hi <= _EXACT_MAX:  # "#{2,4}": "##", "###", "####"
            power, powers = frozenset({""}), set[str]()
            for k in range(hi + 1):
                if k >= lo:
                    powers |= power
                power = frozenset(_squeeze(a + b) for a in power for b in exact)
            return frozenset(powers), _as_factors(frozenset(powers))
        if exact is not None and lo == 0 and hi == 1:
            return exact | {""}, None
        if lo >= 1:
            return None, factors if exact is None else _as_factors(exact)
        return None, None
    return None, None  # any character, a negated literal, a group reference


def required_factors(regex: re.Pattern[str]) -> frozenset[str] | None:
    """Strings of which every match of ``regex`` holds one, read in the needle view (each
    whitespace run one space), or ``None`` when it has none (the regex matches the empty string,
    or what it must hold is not literal). Derived from `re`'s parse of the pattern: a literal is
    itself, a class of a few characters those characters, concatenations are multiplied out while
    small, an alternation needs a factor in every branch, a repeat of at least one copy holds a
    copy's factor, and anything else (``.``, ``\\w``, a negated class) holds nothing known."""
    if regex.flags & (re.IGNORECASE | re.VERBOSE):
        return None
    exact, factors = _sequence(_PARSER.parse(regex.pattern, regex.flags & ~re.UNICODE))
    return _as_factors(exact) if exact is not None else factors
