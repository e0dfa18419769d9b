"""Pure conversions: Tool -> ToolDefinition, and stripping identifying _meta."""

from __future__ import annotations

from typing import Any

import mcp.types as types
from hypothesis import given
from hypothesis import strategies as st

from checkrein.upstream import IDENTIFYING_META_KEYS, strip_identifying_meta, tool_definition

SERVER_INFO = "io.modelcontextprotocol/serverInfo"


def test_tool_definition_keeps_reviewable_fields_as_wire_json() -> None:
    tool = types.Tool(
        name="add",
        title="Add",
        description="Add two integers.",
        input_schema={"type": "object", "properties": {"a": {"type": "integer"}}},
        output_schema={"type": "object", "properties": {"sum": {"type": "integer"}}},
        annotations=types.ToolAnnotations(read_only_hint=True, destructive_hint=False),
    )
    d = tool_definition("math", tool)
    assert d.server == "math" and d.name == "add" and d.title == "Add"
    assert d.description == "Add two integers."
    assert d.input_schema == {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert d.output_schema == {"type": "object", "properties": {"sum": {"type": "integer"}}}
    assert d.annotations == {"readOnlyHint": True, "destructiveHint": False}
    assert d.read_only_hint


def test_tool_definition_drops_absent_optional_fields() -> None:
    d = tool_definition("s", types.Tool(name="t", input_schema={"type": "object"}))
    assert d.description is None and d.output_schema is None and d.annotations is None and d.title is None
    assert d.pinned_fields() == {"name": "t", "inputSchema": {"type": "object"}}


def test_strip_removes_server_info_and_keeps_other_meta() -> None:
    result = types.CallToolResult(
        content=[types.TextContent(type="text", text="x")],
        _meta={SERVER_INFO: {"name": "secret-server", "version": "9"}, "vendor/trace": "abc"},
    )
    stripped = strip_identifying_meta(result)
    assert stripped.meta == {"vendor/trace": "abc"}
    assert result.meta is not None and SERVER_INFO in result.meta, "the input is not mutated"


def test_strip_returns_the_same_object_when_nothing_identifies() -> None:
    result = types.CallToolResult(content=[types.TextContent(type="text", text="x")], _meta={"k": 1})
    assert strip_identifying_meta(result) is result


def test_strip_cleans_content_items_and_drops_empty_meta() -> None:
    item = types.TextContent(type="text", text="x", _meta={SERVER_INFO: {"name": "s"}})
    result = types.CallToolResult(content=[item], _meta={SERVER_INFO: {"name": "s"}})
    stripped = strip_identifying_meta(result)
    assert stripped.meta is None
    assert stripped.content[0].meta is None
    dumped = stripped.model_dump(by_alias=True, exclude_none=True, mode="json")
    assert SERVER_INFO not in str(dumped)


def test_strip_works_on_resource_and_prompt_results() -> None:
    res = types.ReadResourceResult(
        contents=[types.TextResourceContents(uri="a://b", text="t")], _meta={SERVER_INFO: {"name": "s"}}
    )
    assert strip_identifying_meta(res).meta is None
    prompt = types.GetPromptResult(messages=[], _meta={SERVER_INFO: {"name": "s"}, "x": 1})
    assert strip_identifying_meta(prompt).meta == {"x": 1}


meta_keys = st.one_of(st.sampled_from(sorted(IDENTIFYING_META_KEYS)), st.text(min_size=1, max_size=20))


@given(st.dictionaries(meta_keys, st.integers(), max_size=8))
def test_strip_never_leaves_identifying_keys_and_keeps_the_rest(meta: dict[str, Any]) -> None:
    result = types.CallToolResult(content=[], _meta=meta or None)
    stripped = strip_identifying_meta(result)
    kept = stripped.meta or {}
    assert IDENTIFYING_META_KEYS.isdisjoint(kept)
    assert kept == {k: v for k, v in meta.items() if k not in IDENTIFYING_META_KEYS}
