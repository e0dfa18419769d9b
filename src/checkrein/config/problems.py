"""Every problem of a config that does not load, each with its key, its line and a fix.

pydantic reports a list of errors; `problems_of` turns each into a `ConfigError` that names the
key (``servers[0].comand``), its line in the TOML text, and, for a mistyped key or value, the
closest known one (``did you mean `command`?``). `close_matches` serves other typo hints too
(tool names in `checkrein policy check`).
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NoReturn

from pydantic import BaseModel, ValidationError

from checkrein.errors import ConfigError

from ._locate import locate
from .env import Location

__all__ = ["close_matches", "did_you_mean", "explained", "key_string", "problems_of", "raise_problems"]


def close_matches(word: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` of ``candidates`` close to ``word`` (a typo, a missing letter, other case), the
    best first, and only those about as close as the best one."""
    pool = list(dict.fromkeys(candidates))

    def score(candidate: str) -> float:
        return max(difflib.SequenceMatcher(None, word, candidate).ratio(),
                   difflib.SequenceMatcher(None, word.lower(), candidate.lower()).ratio())

    scored = sorted(((score(c), c) for c in pool), key=lambda sc: -sc[0])
    if not scored or scored[0][0] < 0.6:
        return []
    best = scored[0][0]
    return [c for s, c in scored[:n] if s >= 0.6 and s >= best - 0.05]


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`` (did you mean `x`?)`` or ``(did you mean `x` or `y`?)``, or the empty string."""
    found = close_matches(word, candidates)
    if not found:
        return ""
    return " (did you mean " + " or ".join(f"`{f}`" for f in found) + "?)"


def key_string(loc: Sequence[str | int]) -> str:
    """``("servers", 0, "env", "A")`` -> ``servers[0].env.A``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out


def _unwrap(annotation: Any) -> Any:
    """The model (or mapping/sequence item) type inside ``X | None``, ``tuple[X, ...]``,
    ``dict[str, X]``."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        return inner[0] if len(inner) == 1 else annotation
    return annotation


def _model_at(root: type[BaseModel], loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The model class whose fields the key at ``loc`` belongs to (``None`` when it is not one)."""
    current: Any = root
    for part in loc:
        current = _unwrap(current)
        origin = typing.get_origin(current)
        if origin in (tuple, list) and isinstance(part, int):
            current = typing.get_args(current)[0]
            continue
        if origin is dict and isinstance(part, str):
            current = typing.get_args(current)[1]
            continue
        if isinstance(current, type) and issubclass(current, BaseModel) and isinstance(part, str):
            field = current.model_fields.get(part)
            if field is None:
                return None
            current = field.annotation
            continue
        return None
    current = _unwrap(current)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _clean_loc(loc: Sequence[str | int]) -> Location:
    # pydantic adds validator and union-variant names to the location; they are not config keys.
    return tuple(p for p in loc if not (isinstance(p, str) and (p.startswith(("function-", "literal[")))))


def _describe(root: type[BaseModel], err: Mapping[str, Any], loc: Location) -> tuple[str, str | None]:
    """(message, fix) for one pydantic error at ``loc``."""
    kind = err["type"]
    key = key_string(loc)
    if kind == "extra_forbidden" and loc:
        parent = _model_at(root, loc[:-1])
        known = [k for k, f in parent.model_fields.items() if not f.exclude] if parent is not None else []
        name = str(loc[-1])
        hint = did_you_mean(name, known)
        where = f"[{key_string(loc[:-1])}]" if loc[:-1] else "the top level"
        if hint:
            best = close_matches(name, known)[0]
            return f"unknown key `{name}`{hint}", f"Rename `{name}` to `{best}`."
        return (
            f"unknown key `{name}` (not part of checkrein's config)",
            f"Remove `{name}`; the keys of {where} are: {', '.join(known)}." if known else f"Remove `{name}`.",
        )
    if kind == "missing":
        return f"`{key}` is required and missing", f"Add `{loc[-1]}` here (see examples/checkrein.toml)."
    message = str(err["msg"]).removeprefix("Value error, ")
    if kind == "literal_error":
        options = re.findall(r"'([^']*)'", str((err.get("ctx") or {}).get("expected", "")))
        value = err.get("input")
        hint = did_you_mean(value, options) if isinstance(value, str) else ""
        fix = f"Use one of: {', '.join(options)}." if options else None
        return f"{value!r} is not allowed here: {message[0].lower()}{message[1:]}{hint}", fix
    return message, None


def problems_of(
    exc: ValidationError, *, root: type[BaseModel], file: str | None, text: str,
    written: Mapping[Location, str] | None = None, empty: Mapping[Location, tuple[str, ...]] | None = None,
) -> list[ConfigError]:
    """One located `ConfigError` per error in ``exc`` (validating ``root``), in file order.

    ``written``/``empty`` (from `resolve_references`) let a message say that the bad value came
    from a variable, and which one was empty."""
    out: list[ConfigError] = []
    for err in exc.errors():
        loc = _clean_loc(err["loc"])
        message, fix = _describe(root, err, loc)
        for where, was in (written or {}).items():
            if where[: len(loc)] == loc and loc:
                gone = (empty or {}).get(where)
                message += f" (written as {was!r}" + (f"; {', '.join(gone)} is set but empty)" if gone else ")")
                if gone and fix is None:
                    fix = f"Give {' and '.join(gone)} a value in the environment, or change `{key_string(loc)}`."
                break
        line = locate(text, loc) if text else None
        out.append(ConfigError(message, file=file, line=line, key=key_string(loc) or None, fix=fix))
    return out


def raise_problems(problems: Sequence[ConfigError], *, file: str | None, code: str | None = None) -> NoReturn:
    """Raise the problem itself when there is one, else one `ConfigError` listing them all in
    file order (each also in its ``problems``); ``code`` is the combined error's code."""
    ordered = sorted(problems, key=lambda p: (p.line is None, p.line or 0))
    if len(ordered) == 1:
        raise ordered[0]
    if not ordered:
        raise ConfigError("the config does not validate", file=file, code=code)
    listing = "\n".join(f"  {p}" for p in ordered)
    error = ConfigError(f"{len(ordered)} problems:\n{listing}", file=file, code=code, problems=ordered)
    error.line, error.key = ordered[0].line, ordered[0].key
    raise error


def explained(error: ConfigError) -> str:
    """``error`` for a person: each problem on its line (file:line, key, what), each followed by
    its fix when it has one."""
    def one(p: ConfigError, indent: str) -> str:
        return f"{indent}{p}" + (f"\n{indent}  fix: {p.fix}" if p.fix else "")

    if not error.problems:
        return one(error, "")
    head = f"{error.file}: " if error.file else ""
    return f"{head}{len(error.problems)} problems:\n" + "\n".join(one(p, "  ") for p in error.problems)
