"""MCP tools as OpenAI functions; results as model text; checkrein's verdicts read from results."""

from __future__ import annotations

from mcp import types

from checkrein.agent.tools import MAX_RESULT_CHARS, ToolMap, classify_result, result_text


def _result(text: str, *, is_error: bool = False, meta: dict[str, object] | None = None) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error, _meta=meta)


def test_names_openai_would_reject_are_mapped_both_ways() -> None:
    tools = ToolMap([types.Tool(name="files.read", input_schema={"type": "object"}),
                     types.Tool(name="files_read", input_schema={"type": "object"}),
                     types.Tool(name="x" * 80, description="long", input_schema={})])
    names = [s["function"]["name"] for s in tools.specs]
    assert names[0] == "files_read" and names[1] == "files_read_2" and len(names[2]) == 64
    assert [tools.mcp_name(n) for n in names] == ["files.read", "files_read", "x" * 80]
    assert tools.specs[2]["function"]["parameters"] == {"type": "object", "properties": {}}
    assert tools.mcp_name("unknown") == "unknown"


def test_result_text_joins_blocks_names_others_and_truncates() -> None:
    image = types.ImageContent(type="image", data="aGk=", mime_type="image/png")
    mixed = types.CallToolResult(content=[types.TextContent(type="text", text="a"), image])
    assert result_text(mixed) == "a\n[image content omitted]"
    structured = types.CallToolResult(content=[], structured_content={"k": 1})
    assert result_text(structured) == '{"k": 1}'
    big = result_text(_result("x" * (MAX_RESULT_CHARS + 10)))
    assert big.endswith("[truncated: 10 more characters]")


def test_verdicts_come_from_meta_or_checkreins_stable_prefixes() -> None:
    denied = "denied by checkrein: production forbids it (rule production.deny_delete)"
    assert classify_result(_result(denied, is_error=True), denied).rule_id == "production.deny_delete"
    assert classify_result(_result(denied, is_error=True), denied).status == "denied"
    gw = "error from checkrein: upstream crashed (code upstream.unavailable)"
    kind = classify_result(_result(gw, is_error=True), gw)
    assert (kind.status, kind.code) == ("gateway_error", "upstream.unavailable")
    assert classify_result(_result("boom", is_error=True), "boom").status == "error"
    meta = {"io.checkrein/decision": {"effect": "deny", "rule_id": "r1", "error_code": "policy.denied"}}
    assert classify_result(_result("no", is_error=True, meta=meta), "no").rule_id == "r1"
    approved = {"io.checkrein/decision": {"effect": "allow", "approval": {"approver": "auto", "granted": True}}}
    kind = classify_result(_result("ok", meta=approved), "ok")
    assert kind.status == "ok" and kind.approval == {"approver": "auto", "granted": True}
