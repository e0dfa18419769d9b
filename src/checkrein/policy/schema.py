"""Strict checks of a call's arguments against the tool's own ``inputSchema``, compiled once.

`compile_schema` picks the dialect from ``$schema`` (draft-07 or 2020-12; 2020-12 when absent) and
returns a `CompiledSchema` whose `check` is pure and safe to call per call:

- Schemas using only the common keywords (``type properties required additionalProperties items
  enum const minimum maximum exclusiveMinimum exclusiveMaximum minLength maxLength pattern minItems
  maxItems minProperties maxProperties`` and annotations such as ``description``) are compiled to
  closures (a few microseconds per call). Anything else (``$ref``, ``anyOf``, tuple ``items``, ...)
  falls back to a cached ``jsonschema`` validator, which has the same answers but is ~10x slower.
  A property test checks the two agree.
- Strict types, as JSON Schema defines them: ``true`` is not an integer, ``"42"`` is not an integer,
  ``1.0`` is an integer; ``enum``/``const`` never confuse ``true`` with ``1``.
- ``format`` is an annotation only (no format assertions: several are unsafe or locale-dependent).
- ``$ref`` never reaches the network: the validator gets an empty `referencing.Registry`.
- A schema that is itself invalid compiles to a check that always fails, naming the problem: calls
  to that tool are denied, the rest of the policy still compiles.

Patterns in a tool's schema come from the upstream server, so they are matched with ``re.search``
exactly as ``jsonschema`` does; the argument size limit (``[policy.limits]``) bounds their input.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import jsonschema.exceptions  # type: ignore[import-untyped]
from referencing import Registry

__all__ = ["CompiledSchema", "SchemaViolation", "compile_schema"]


@dataclass(frozen=True, slots=True)
class SchemaViolation:
    pointer: str
    """JSON pointer of the offending value inside the arguments (``""`` for the whole object)."""
    message: str


_Check = Callable[[Any], "list[str] | str | None"]
# A check returns None when valid; otherwise the error message (str) or, from nested checks, a
# list [message, token_n, ..., token_1] with the path tokens appended innermost-first.

_ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "$comment",
        "title",
        "description",
        "default",
        "examples",
        "format",
        "readOnly",
        "writeOnly",
        "deprecated",
        "contentMediaType",
        "contentEncoding",
        "$defs",
        "definitions",
    }
)
_FAST = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "pattern",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
    }
)


class _Unsupported(Exception):
    """The schema uses something the fast path does not implement: use jsonschema instead."""


def _is_number(v: Any) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or isinstance(v, float)


def _type_test(name: str) -> Callable[[Any], bool]:
    if name == "string":
        return lambda v: isinstance(v, str)
    if name == "object":
        return lambda v: isinstance(v, dict)
    if name == "array":
        return lambda v: isinstance(v, list)
    if name == "boolean":
        return lambda v: isinstance(v, bool)
    if name == "null":
        return lambda v: v is None
    if name == "number":
        return _is_number
    if name == "integer":
        return lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (
            isinstance(v, float) and math.isfinite(v) and v.is_integer()
        )
    raise _Unsupported(f"type {name!r}")


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON Schema defines it: booleans are not numbers; 1 == 1.0; containers deep."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | dict) or isinstance(b, list | dict):
        return False
    equal: bool = a == b
    return equal


def _nest(err: list[str] | str, token: str) -> list[str]:
    out = [err] if isinstance(err, str) else err
    out.append(token)
    return out


def _compile(schema: Any) -> _Check:
    if schema is True:
        return lambda v: None
    if schema is False:
        return lambda v: "no value is allowed here (schema is false)"
    if not isinstance(schema, dict):
        raise _Unsupported("schema is not an object")
    unknown = set(schema) - _FAST - _ANNOTATIONS
    if unknown:
        raise _Unsupported(f"keywords {sorted(unknown)}")
    checks: list[_Check] = []

    if "type" in schema:
        t = schema["type"]
        names = [t] if isinstance(t, str) else t
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise _Unsupported("type")
        tests = [_type_test(n) for n in names]
        label = " or ".join(names)
        checks.append(lambda v: None if any(f(v) for f in tests) else f"is not of type {label}")
    if "enum" in schema:
        options = schema["enum"]
        if not isinstance(options, list):
            raise _Unsupported("enum")
        checks.append(lambda v: None if any(json_equal(v, o) for o in options) else "is not one of the allowed values")
    if "const" in schema:
        const = schema["const"]
        checks.append(lambda v: None if json_equal(v, const) else "is not the required constant")
    checks.extend(_numeric(schema))
    checks.extend(_string(schema))
    checks.extend(_array(schema))
    checks.extend(_object(schema))

    def run(v: Any) -> list[str] | str | None:
        for c in checks:
            err = c(v)
            if err is not None:
                return err
        return None

    return run


def _bound(schema: Mapping[str, Any], key: str) -> float | int | None:
    if key not in schema:
        return None
    b = schema[key]
    if not _is_number(b):
        raise _Unsupported(key)
    return b  # type: ignore[no-any-return]


def _numeric(schema: Mapping[str, Any]) -> list[_Check]:
    out: list[_Check] = []
    lo, hi = _bound(schema, "minimum"), _bound(schema, "maximum")
    xlo, xhi = _bound(schema, "exclusiveMinimum"), _bound(schema, "exclusiveMaximum")
    if lo is not None:
        out.append(lambda v: f"is less than the minimum {lo}" if _is_number(v) and v < lo else None)
    if hi is not None:
        out.append(lambda v: f"is greater than the maximum {hi}" if _is_number(v) and v > hi else None)
    if xlo is not None:
        out.append(lambda v: f"must be greater than {xlo}" if _is_number(v) and v <= xlo else None)
    if xhi is not None:
        out.append(lambda v: f"must be less than {xhi}" if _is_number(v) and v >= xhi else None)
    return out


def _count(schema: Mapping[str, Any], key: str) -> int | None:
    if key not in schema:
        return None
    n = schema[key]
    if isinstance(n, float) and n.is_integer():
        n = int(n)
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise _Unsupported(key)
    return n


def _string(schema: Mapping[str, Any]) -> list[_Check]:
    out: list[_Check] = []
    lo, hi = _count(schema, "minLength"), _count(schema, "maxLength")
    if lo is not None:
        out.append(lambda v: f"is shorter than {lo} characters" if isinstance(v, str) and len(v) < lo else None)
    if hi is not None:
        out.append(lambda v: f"is longer than {hi} characters" if isinstance(v, str) and len(v) > hi else None)
    if "pattern" in schema:
        if not isinstance(schema["pattern"], str):
            raise _Unsupported("pattern")
        try:
            rx = re.compile(schema["pattern"])
        except re.error as exc:
            raise _Unsupported("pattern") from exc
        out.append(
            lambda v: f"does not match the pattern {rx.pattern!r}" if isinstance(v, str) and not rx.search(v) else None
        )
    return out


def _array(schema: Mapping[str, Any]) -> list[_Check]:
    out: list[_Check] = []
    lo, hi = _count(schema, "minItems"), _count(schema, "maxItems")
    if lo is not None:
        out.append(lambda v: f"has fewer than {lo} items" if isinstance(v, list) and len(v) < lo else None)
    if hi is not None:
        out.append(lambda v: f"has more than {hi} items" if isinstance(v, list) and len(v) > hi else None)
    if "items" in schema:
        if isinstance(schema["items"], list):
            raise _Unsupported("tuple items")
        item = _compile(schema["items"])

        def items(v: Any) -> list[str] | str | None:
            if isinstance(v, list):
                for i, x in enumerate(v):
                    err = item(x)
                    if err is not None:
                        return _nest(err, str(i))
            return None

        out.append(items)
    return out


def _object(schema: Mapping[str, Any]) -> list[_Check]:
    out: list[_Check] = []
    lo, hi = _count(schema, "minProperties"), _count(schema, "maxProperties")
    if lo is not None:
        out.append(lambda v: f"has fewer than {lo} properties" if isinstance(v, dict) and len(v) < lo else None)
    if hi is not None:
        out.append(lambda v: f"has more than {hi} properties" if isinstance(v, dict) and len(v) > hi else None)
    if "required" in schema:
        req = schema["required"]
        if not isinstance(req, list) or not all(isinstance(r, str) for r in req):
            raise _Unsupported("required")

        def required(v: Any) -> list[str] | str | None:
            if isinstance(v, dict):
                for r in req:
                    if r not in v:
                        return f"is missing the required property {r!r}"
            return None

        out.append(required)
    props_raw = schema.get("properties", {})
    if not isinstance(props_raw, dict):
        raise _Unsupported("properties")
    props = {k: _compile(s) for k, s in props_raw.items()}
    extra: _Check | None = None
    if "additionalProperties" in schema:
        extra = _compile(schema["additionalProperties"])
    if props or extra is not None:

        def properties(v: Any) -> list[str] | str | None:
            if not isinstance(v, dict):
                return None
            for k, x in v.items():
                check = props.get(k, extra)
                if check is None:
                    continue
                err = check(x)
                if err is not None:
                    if check is extra and schema["additionalProperties"] is False:
                        return f"has an unexpected property {k!r}"
                    return _nest(err, k)
            return None

        out.append(properties)
    return out


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


class CompiledSchema:
    """One tool's compiled ``inputSchema``. `check` is pure and never raises on any JSON value."""

    __slots__ = ("_fast", "_invalid", "_validator", "dialect", "fast")

    def __init__(self, schema: Any) -> None:
        self._invalid: str | None = None
        self._fast: _Check | None = None
        self._validator: Any = None
        cls = _dialect(schema)
        self.dialect: str = cls.__name__
        try:
            cls.check_schema(schema)
        except jsonschema.exceptions.SchemaError as exc:
            self._invalid = f"the tool's inputSchema is invalid: {exc.message}"
        if self._invalid is None:
            try:
                self._fast = _compile(schema)
            except _Unsupported:
                self._validator = cls(schema, registry=Registry())
        self.fast: bool = self._fast is not None
        """Whether the fast path applies (False: jsonschema fallback, or an invalid schema)."""

    def check(self, instance: Any) -> SchemaViolation | None:
        """None when ``instance`` is valid; else the first violation found."""
        if self._invalid is not None:
            return SchemaViolation("", self._invalid)
        if self._fast is not None:
            err = self._fast(instance)
            if err is None:
                return None
            if isinstance(err, str):
                return SchemaViolation("", err)
            tokens = err[:0:-1]
            return SchemaViolation("".join("/" + _escape(t) for t in tokens), err[0])
        if self._validator.is_valid(instance):
            return None
        best = jsonschema.exceptions.best_match(self._validator.iter_errors(instance))
        if best is None:  # pragma: no cover - is_valid said invalid, so there is an error
            return SchemaViolation("", "does not match the tool's inputSchema")
        pointer = "".join("/" + _escape(str(t)) for t in best.absolute_path)
        return SchemaViolation(pointer, best.message)


def _dialect(schema: Any) -> Any:
    uri = schema.get("$schema", "") if isinstance(schema, dict) else ""
    if isinstance(uri, str) and "draft-07" in uri:
        return jsonschema.Draft7Validator
    return jsonschema.Draft202012Validator


def compile_schema(schema: Any) -> CompiledSchema:
    """Compile ``schema`` (a tool's ``inputSchema``); never raises (see `CompiledSchema`)."""
    return CompiledSchema(schema)
