"""`required_factors`: literal strings one of which every match of a regex holds, derived from
`re`'s own parse of the pattern. Used by the injection detector's needles
(`checkrein.policy.injection.phrase`) and the analyzers' gated searches
(`checkrein.policy.analyzers.gated`); kept apart so that neither imports the other's package.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

__all__ = ["match_openings", "opens_with_assertion", "required_factors", "required_literal"]

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


_KEEP = 8
"""Required literals kept per piece (the longest), so alternations stay cheap to intersect."""


def _common_all(strings: _Strings) -> str:
    """The longest string inside every one of ``strings``, or ``""``."""
    ordered = sorted(strings, key=len)
    if not ordered or not ordered[0]:
        return ""
    shortest, rest = ordered[0], ordered[1:]
    for size in range(len(shortest), 0, -1):
        for start in range(len(shortest) - size + 1):
            piece = shortest[start : start + size]
            if all(piece in s for s in rest):
                return piece
    return ""


def _longest(strings: set[str]) -> _Strings:
    strings.discard("")
    return frozenset(sorted(strings, key=lambda s: (-len(s), s))[:_KEEP])


def _required_sequence(items: Any) -> _Strings:
    """Literals every match of a concatenation holds: what each piece requires, and the longest
    string common to every spelling of each run of spelled-out pieces."""
    out: set[str] = set()
    run: _Strings = frozenset({""})
    for op, av in items:
        exact, _ = _piece(str(op), av)
        if exact is not None and len(run) * len(exact) <= _EXACT_MAX:
            run = frozenset(_squeeze(a + b) for a in run for b in exact)
            continue
        out.add(_common_all(run))
        out |= _required_piece(str(op), av)
        run = frozenset({""}) if exact is None else exact
    out.add(_common_all(run))
    return _longest(out)


def _required_piece(name: str, av: Any) -> _Strings:
    if name == "SUBPATTERN":
        _, add_flags, del_flags, sub = av
        return _required_sequence(sub) if not add_flags and not del_flags else frozenset()
    if name == "ATOMIC_GROUP":
        return _required_sequence(av)
    if name == "BRANCH":
        shared: set[str] | None = None
        for sub in av[1]:
            mine = _required_sequence(sub)
            shared = set(mine) if shared is None else {_common_all(frozenset((a, b))) for a in shared for b in mine}
            shared.discard("")
            if not shared:
                return frozenset()
        return _longest(shared or set())
    if name in {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}:
        lo, _, sub = av
        return _required_sequence(sub) if lo >= 1 else frozenset()
    exact, _ = _piece(name, av)
    return frozenset({_common_all(exact)} - {""}) if exact is not None else frozenset()


def required_literal(regex: re.Pattern[str]) -> str:
    """The longest literal found that every match of ``regex`` holds, in the needle view (each
    whitespace run one space), or ``""``: where `required_factors` says "one of these", this says
    "this one, always". Sound by the same reading of `re`'s parse: a concatenation holds what each
    of its pieces holds, and the longest string common to all spellings of a spelled-out run; an
    alternation holds what is inside a required literal of every branch; a repeat of at least one
    copy holds what a copy holds; lookarounds and anything else hold nothing known."""
    if regex.flags & (re.IGNORECASE | re.VERBOSE):
        return ""
    found = _required_sequence(_PARSER.parse(regex.pattern, regex.flags & ~re.UNICODE))
    return max(found, key=lambda s: (len(s), s), default="")


def match_openings(regex: re.Pattern[str]) -> frozenset[str] | None:
    """Strings one of which every match of ``regex`` starts with (in the needle view: a
    whitespace run one space), or ``None`` when nothing is known: the run of spelled-out pieces
    the pattern opens with, past its zero-width assertions (``\\b``, lookarounds: they consume
    nothing, so the match still starts there). For `re`, which tries a pattern that opens with
    an assertion or an alternation at every position, these say where a match can begin."""
    if regex.flags & (re.IGNORECASE | re.VERBOSE):
        return None
    run: _Strings = frozenset({""})
    for op, av in _PARSER.parse(regex.pattern, regex.flags & ~re.UNICODE):
        exact, _ = _piece(str(op), av)
        if exact is None or len(run) * len(exact) > _EXACT_MAX:
            break
        run = frozenset(_squeeze(a + b) for a in run for b in exact)
    return run if run and "" not in run else None


def opens_with_assertion(regex: re.Pattern[str]) -> bool:
    """Whether ``regex`` opens with a zero-width assertion (``\\b``, ``^``, a lookaround), which
    keeps `re` from scanning for its first characters: it tries such a pattern at every position."""
    items = _PARSER.parse(regex.pattern, regex.flags & ~re.UNICODE)
    return bool(len(items)) and str(items[0][0]) in {"AT", "ASSERT", "ASSERT_NOT"}
