"""`kinds_from_schema` / `kind_from_name` / `kind_for`: which arguments are paths, URLs, commands..."""

from __future__ import annotations

from typing import Any

import pytest

from checkrein.policy.analyzers import kind_for, kind_from_name, kinds_from_schema


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("path", "path"),
        ("file_name", "path"),
        ("filePath", "path"),
        ("dir_name", "path"),
        ("folder", "path"),
        ("url", "url"),
        ("callbackUrl", "url"),
        ("base_url", "url"),
        ("endpoint", "url"),
        ("command", "command"),
        ("cmd", "command"),
        ("sql", "query"),
        ("query", "query"),
        ("password", "secret"),
        ("access_token", "secret"),
        ("apiKey", "secret"),
        ("client_secret", "secret"),
        ("file_id", None),
        ("token_type", None),
        ("location", None),
        ("destination", None),
        ("#0", None),
    ],
)
def test_kind_from_name(name: str, kind: str | None) -> None:
    assert kind_from_name(name) == kind


def test_description_decides_when_the_name_says_nothing() -> None:
    assert kind_from_name("target", "The URL to fetch") == "url"
    assert kind_from_name("target", "Absolute file path of the report") == "path"
    assert kind_from_name("content", "Text to write to the file") is None
    assert kind_from_name("stmt", "A SQL statement to run") == "query"


def test_nested_properties_arrays_refs_and_formats() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "$defs": {"Target": {"type": "object", "properties": {"href": {"type": "string"}}}},
        "properties": {
            "path": {"type": "string"},
            "options": {"type": "object", "properties": {"webhook": {"type": "string"}, "limit": {"type": "integer"}}},
            "files": {"type": "array", "items": {"type": "string"}},
            "requests": {"type": "array", "items": {"type": "object", "properties": {"url": {"type": "string"}}}},
            "site": {"type": "string", "format": "uri"},
            "target": {"$ref": "#/$defs/Target"},
            "either": {"anyOf": [{"type": "object", "properties": {"sql": {"type": "string"}}}, {"type": "null"}]},
            "a/b": {"type": "string", "description": "shell command to run"},
        },
    }
    kinds = kinds_from_schema(schema)
    assert kinds["/path"] == "path"
    assert kinds["/options/webhook"] == "url"
    assert "/options/limit" not in kinds
    assert kinds["/files"] == "path" and kinds["/files/*"] == "path"
    assert kinds["/requests/*/url"] == "url"
    assert kinds["/site"] == "url"
    assert kinds["/target/href"] == "url"
    assert kinds["/either/sql"] == "query"
    assert kinds["/a~1b"] == "command"


@pytest.mark.parametrize("schema", [{}, {"properties": "nope"}, {"properties": {"x": 3}}, {"$ref": "#/missing"}, []])
def test_malformed_schemas_give_no_kinds_and_never_raise(schema: Any) -> None:
    assert kinds_from_schema(schema) == {}


def test_self_referencing_schema_is_bounded() -> None:
    schema: dict[str, Any] = {"$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}, "url": {}}}}, "$ref": "#/$defs/N"}
    kinds = kinds_from_schema(schema)
    assert kinds["/url"] == "url" and kinds["/next/url"] == "url"


def test_kind_for_reads_indices_as_wildcards_and_top_level_names() -> None:
    kinds = {"/requests/*/url": "url", "/files/*": "path", "query": "query"}
    assert kind_for("/requests/3/url", kinds) == "url"  # type: ignore[arg-type]
    assert kind_for("/files/0", kinds) == "path"  # type: ignore[arg-type]
    assert kind_for("/query", kinds) == "query"  # type: ignore[arg-type]
    assert kind_for("/other", kinds) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "description", "tool", "kind"),
    [
        ("query", "Words to look for.", "search_documents Search the knowledge base.", None),
        ("query", "", "search_documents Search the knowledge base.", None),
        ("query", "Search query", "", None),
        ("search_query", "", "", None),
        ("query", "GraphQL query", "", None),
        ("query", "", "elasticsearch_search Query DSL search", None),
        ("query", "", "run_sql Run SQL against the warehouse", "query"),
        ("query", "SQL SELECT statement to run", "", "query"),
        ("query", "", "query_db Query the Postgres database", "query"),
        ("statement", "", "execute Execute a statement on the database", "query"),
        ("query", "", "", "query"),  # no word either way: the conservative reading
        ("sql", "", "search anything", "query"),  # `sql` is SQL whatever the tool
    ],
)
def test_an_ambiguous_query_is_judged_by_schema_and_tool(name: str, description: str, tool: str, kind: str | None) -> None:
    assert kind_from_name(name, description, tool) == kind


def test_kinds_from_schema_reads_the_tool() -> None:
    schema = {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}}
    assert kinds_from_schema(schema, "search_documents Search the knowledge base") == {}
    assert kinds_from_schema(schema, "query_db Query the Postgres database") == {"/query": "query"}
