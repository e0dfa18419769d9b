"""The tool's own inputSchema: strict types, both dialects, compiled once, fast path == jsonschema."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from _policy_helpers import policy, run, tool
from hypothesis import given, settings
from hypothesis import strategies as st

from checkrein.catalog.model import ToolDefinition
from checkrein.config import parse_config
from checkrein.policy import compile_policy
from checkrein.policy.schema import CompiledSchema, compile_schema

INT = {"type": "object", "properties": {"n": {"type": "integer"}}}
DRAFT7 = "http://json-schema.org/draft-07/schema#"
D2020 = "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize("dialect", [None, DRAFT7, D2020])
@pytest.mark.parametrize(
    ("value", "valid"),
    [(True, False), ("42", False), (42, True), (1.0, True), (1.5, False), (None, False), (False, False)],
)
def test_integer_is_strict_in_every_dialect(dialect: str | None, value: Any, valid: bool) -> None:
    schema = dict(INT) if dialect is None else {**INT, "$schema": dialect}
    assert (compile_schema(schema).check({"n": value}) is None) is valid


def test_number_and_boolean_do_not_mix() -> None:
    s = compile_schema({"type": "object", "properties": {"x": {"type": "number"}, "b": {"type": "boolean"}}})
    assert s.check({"x": True}) is not None
    assert s.check({"b": 1}) is not None
    assert s.check({"x": 2.5, "b": False}) is None


def test_enum_and_const_do_not_confuse_true_with_one() -> None:
    s = compile_schema({"properties": {"e": {"enum": [1, "a"]}, "c": {"const": True}}})
    assert s.check({"e": True}) is not None
    assert s.check({"c": 1}) is not None
    assert s.check({"e": 1.0, "c": True}) is None


def test_violations_name_the_json_pointer() -> None:
    s = compile_schema(
        {"type": "object", "properties": {"a/b": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "string"}}}}}}
    )
    v = s.check({"a/b": [{"x": "ok"}, {"x": 3}]})
    assert v is not None and v.pointer == "/a~1b/1/x"


def test_schema_rejection_is_a_deny_with_a_schema_finding() -> None:
    p = policy('[policy]\nallow = ["t__*"]\n[policy.tools."t__*"]\nrisk = "low"\n', tool("t__count", INT))
    d = run(p, "t__count", {"n": "42"})
    assert (d.effect, d.rule_id, d.error_code) == ("deny", "arguments.schema", "policy.arguments_rejected")
    assert [(f.analyzer, f.path) for f in d.findings] == [("schema", "/n")]


def test_additional_properties_false_rejects_unknown_arguments() -> None:
    s = compile_schema({"type": "object", "properties": {"a": {}}, "additionalProperties": False})
    v = s.check({"a": 1, "evil": 2})
    assert v is not None and "evil" in v.message


def test_format_is_an_annotation_only() -> None:
    assert compile_schema({"properties": {"e": {"type": "string", "format": "email"}}}).check({"e": "nope"}) is None


def test_unsupported_keywords_fall_back_to_jsonschema_with_the_same_answers() -> None:
    s = compile_schema({"$defs": {"n": {"type": "integer"}}, "properties": {"a": {"$ref": "#/$defs/n"}}, "anyOf": [{"required": ["a"]}]})
    assert not s.fast
    assert s.check({"a": 1}) is None
    assert s.check({"a": True}) is not None
    assert s.check({}) is not None


def test_draft7_tuple_items_use_jsonschema() -> None:
    s = compile_schema({"$schema": DRAFT7, "properties": {"p": {"items": [{"type": "string"}, {"type": "integer"}]}}})
    assert not s.fast
    assert s.check({"p": ["a", 1]}) is None
    assert s.check({"p": [1, "a"]}) is not None


def test_an_invalid_schema_denies_every_call_to_that_tool_only() -> None:
    toml = '[policy]\nallow = ["t__*"]\n[policy.tools."t__*"]\nrisk = "low"\n'
    p = policy(toml, tool("t__bad", {"type": "nonsense"}), tool("t__good", INT))
    d = run(p, "t__bad", {})
    assert (d.effect, d.rule_id) == ("deny", "arguments.schema")
    assert "invalid" in d.reasons[0]
    assert run(p, "t__good", {"n": 1}).effect == "allow"


def test_remote_refs_are_never_fetched_and_deny() -> None:
    toml = '[policy]\nallow = ["t__*"]\n[policy.tools."t__*"]\nrisk = "low"\n'
    p = policy(toml, tool("t__r", {"properties": {"a": {"$ref": "http://127.0.0.1:9/schema.json"}}}))
    d = run(p, "t__r", {"a": 1})
    assert d.effect == "deny"
    assert d.error_code == "policy.error"


def test_schemas_are_compiled_once_per_definition_digest() -> None:
    cache: dict[str, CompiledSchema] = {}
    # The same definition on two servers: the digest covers the definition, not the server.
    tools = {"a__x": ToolDefinition("a", "x", "x tool", dict(INT)), "b__x": ToolDefinition("b", "x", "x tool", dict(INT))}
    first = compile_policy(parse_config(""), tools, schema_cache=cache)
    assert len(cache) == 1
    assert first.plans["a__x"].schema is first.plans["b__x"].schema
    second = compile_policy(parse_config("[policy]\n"), tools, schema_cache=cache)
    assert second.plans["a__x"].schema is first.plans["a__x"].schema


# --- property: the fast path agrees with jsonschema on the keywords it implements -----------------

_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.floats(-5, 5, allow_nan=False), st.sampled_from(["", "a", "ab", "42", "x1"])
)
_json = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)),
    max_leaves=8,
)
_types = st.sampled_from(["string", "integer", "number", "boolean", "null", "object", "array"])


def _schemas() -> st.SearchStrategy[Any]:
    leaf = st.one_of(
        st.booleans(),
        st.fixed_dictionaries(
            {},
            optional={
                "type": st.one_of(_types, st.lists(_types, min_size=1, max_size=2, unique=True)),
                "enum": st.lists(_scalars, min_size=1, max_size=3),
                "const": _scalars,
                "minimum": st.integers(-3, 3),
                "maximum": st.integers(-3, 3),
                "exclusiveMinimum": st.integers(-3, 3),
                "exclusiveMaximum": st.floats(-3, 3, allow_nan=False),
                "minLength": st.integers(0, 2),
                "maxLength": st.integers(0, 2),
                "pattern": st.sampled_from(["^a", "[0-9]", "b$"]),
                "minItems": st.integers(0, 2),
                "maxItems": st.integers(0, 2),
                "minProperties": st.integers(0, 2),
                "maxProperties": st.integers(0, 2),
                "required": st.lists(st.sampled_from(["a", "b"]), max_size=2, unique=True),
                "description": st.just("annotation"),
            },
        ),
    )
    return st.recursive(
        leaf,
        lambda inner: st.fixed_dictionaries(
            {},
            optional={
                "properties": st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=2),
                "additionalProperties": inner,
                "items": inner,
                "type": _types,
            },
        ),
        max_leaves=4,
    )


@settings(max_examples=300, deadline=None)
@given(schema=_schemas(), instance=_json)
def test_fast_path_agrees_with_jsonschema(schema: Any, instance: Any) -> None:
    compiled = compile_schema(schema)
    reference = jsonschema.Draft202012Validator(schema)
    assert compiled.fast
    assert (compiled.check(instance) is None) == reference.is_valid(instance)
