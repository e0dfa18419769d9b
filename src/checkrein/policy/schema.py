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


_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "object": (dict,),
    "array": (list,),
    "boolean": (bool,),
    "null": (type(None),),
    "number": (int, float),
    "integer": (int,),
}
_KNOWN = frozenset({str, int, float, bool, type(None), list, dict})


def _base_type(v: Any) -> type:
    """The JSON type of ``v`` as a Python type; subclasses map to their JSON base (bool before int)."""
    t = type(v)
    if t in _KNOWN:
        return t
    for base in (bool, int, float, str, list, dict):
        if isinstance(v, base):
            return base
    return object


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


def _accept(v: Any) -> None:
    return None


def _reject(v: Any) -> str:
    return "no value is allowed here (schema is false)"


def _bound(schema: Mapping[str, Any], key: str) -> float | int | None:
    if key not in schema:
        return None
    b = schema[key]
    if isinstance(b, bool) or not isinstance(b, int | float) or not math.isfinite(b):
        raise _Unsupported(key)
    return b


def _count(schema: Mapping[str, Any], key: str) -> int | None:
    if key not in schema:
        return None
    n = schema[key]
    if isinstance(n, float) and n.is_integer():
        n = int(n)
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise _Unsupported(key)
    return n


def _types(schema: Mapping[str, Any]) -> tuple[frozenset[type] | None, bool, str]:
    if "type" not in schema:
        return None, False, ""
    t = schema["type"]
    names = [t] if isinstance(t, str) else t
    if (
        not isinstance(names, list)
        or not names
        or len(set(names)) != len(names)
        or not all(isinstance(n, str) and n in _PY_TYPES for n in names)
    ):
        raise _Unsupported("type")
    allowed = frozenset(pt for n in names for pt in _PY_TYPES[n])
    # JSON Schema: 1.0 is an integer; a float is accepted by "integer" when it is integral.
    return allowed, "integer" in names and float not in allowed, "is not of type " + " or ".join(names)


def _enum(schema: Mapping[str, Any]) -> Callable[[Any, type], bool] | None:
    if "enum" not in schema:
        return None
    options = schema["enum"]
    if not isinstance(options, list):
        raise _Unsupported("enum")
    if options and all(isinstance(o, str) for o in options):
        names = frozenset(options)
        return lambda v, t: t is str and v in names
    return lambda v, t: any(json_equal(v, o) for o in options)


def _compile(schema: Any) -> _Check:
    if schema is True:
        return _accept
    if schema is False:
        return _reject
    if not isinstance(schema, dict):
        raise _Unsupported("schema is not an object")
    unknown = set(schema) - _FAST - _ANNOTATIONS
    if unknown:
        raise _Unsupported(f"keywords {sorted(unknown)}")

    types, int_floats, type_msg = _types(schema)
    enum = _enum(schema)
    has_const, const = "const" in schema, schema.get("const")
    lo, hi = _bound(schema, "minimum"), _bound(schema, "maximum")
    xlo, xhi = _bound(schema, "exclusiveMinimum"), _bound(schema, "exclusiveMaximum")
    numeric = any(b is not None for b in (lo, hi, xlo, xhi))
    min_len, max_len = _count(schema, "minLength"), _count(schema, "maxLength")
    rx: re.Pattern[str] | None = None
    if "pattern" in schema:
        if not isinstance(schema["pattern"], str):
            raise _Unsupported("pattern")
        try:
            rx = re.compile(schema["pattern"])
        except re.error as exc:
            raise _Unsupported("pattern") from exc
    stringy = min_len is not None or max_len is not None or rx is not None
    min_items, max_items = _count(schema, "minItems"), _count(schema, "maxItems")
    item: _Check | None = None
    if "items" in schema:
        if isinstance(schema["items"], list):
            raise _Unsupported("tuple items")
        item = _compile(schema["items"])
    arrayish = min_items is not None or max_items is not None or item is not None
    min_props, max_props = _count(schema, "minProperties"), _count(schema, "maxProperties")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required) or len(set(required)) != len(required):
        raise _Unsupported("required")
    props_raw = schema.get("properties", {})
    if not isinstance(props_raw, dict):
        raise _Unsupported("properties")
    props = {k: _compile(sub) for k, sub in props_raw.items()}
    extra: _Check | None = _compile(schema["additionalProperties"]) if "additionalProperties" in schema else None
    extra_false = schema.get("additionalProperties") is False
    objecty = min_props is not None or max_props is not None or bool(required) or bool(props) or extra is not None
    if types is not None and enum is None and not has_const and not (numeric or stringy or arrayish or objecty):
        # A bare type test (`{"type": "string"}`, most properties): `check` below reduced to its first step.
        known = types

        def check_type(v: Any) -> str | None:
            t = type(v)
            if t in known:
                return None
            if t not in _KNOWN:
                t = _base_type(v)
            if t not in known and not (int_floats and t is float and v.is_integer()):
                return type_msg
            return None

        return check_type

    def check(v: Any) -> list[str] | str | None:
        t = type(v)
        if t not in _KNOWN:
            t = _base_type(v)
        if types is not None and t not in types and not (int_floats and t is float and v.is_integer()):
            return type_msg
        if enum is not None and not enum(v, t):
            return "is not one of the allowed values"
        if has_const and not json_equal(v, const):
            return "is not the required constant"
        if t is str:
            if stringy:
                n = len(v)
                if min_len is not None and n < min_len:
                    return f"is shorter than {min_len} characters"
                if max_len is not None and n > max_len:
                    return f"is longer than {max_len} characters"
                if rx is not None and rx.search(v) is None:
                    return f"does not match the pattern {rx.pattern!r}"
        elif t is int or t is float:
            if numeric:
                if lo is not None and v < lo:
                    return f"is less than the minimum {lo}"
                if hi is not None and v > hi:
                    return f"is greater than the maximum {hi}"
                if xlo is not None and v <= xlo:
                    return f"must be greater than {xlo}"
                if xhi is not None and v >= xhi:
                    return f"must be less than {xhi}"
        elif t is dict:
            if objecty:
                return check_object(v)
        elif t is list and arrayish:
            if min_items is not None and len(v) < min_items:
                return f"has fewer than {min_items} items"
            if max_items is not None and len(v) > max_items:
                return f"has more than {max_items} items"
            if item is not None:
                for i, x in enumerate(v):
                    err = item(x)
                    if err is not None:
                        return _nest(err, str(i))
        return None

    def check_object(v: dict[str, Any]) -> list[str] | str | None:
        if min_props is not None and len(v) < min_props:
            return f"has fewer than {min_props} properties"
        if max_props is not None and len(v) > max_props:
            return f"has more than {max_props} properties"
        for r in required:
            if r not in v:
                return f"is missing the required property {r!r}"
        if props or extra is not None:
            for k, x in v.items():
                sub = props.get(k, extra)
                if sub is None:
                    continue
                err = sub(x)
                if err is not None:
                    if extra_false and k not in props:
                        return f"has an unexpected property {k!r}"
                    return _nest(err, k)
        return None

    return check


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
            # The fast compiler checks the value of every keyword it accepts, so a schema it
            # compiles needs no metaschema pass (that pass costs ~7 ms per tool: 70 s for 10k tools).
            self._fast = _compile(schema)
        except _Unsupported:
            try:
                cls.check_schema(schema)
            except jsonschema.exceptions.SchemaError as exc:
                self._invalid = f"the tool's inputSchema is invalid: {exc.message}"
            else:
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
