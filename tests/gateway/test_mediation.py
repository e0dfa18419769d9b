"""Complete mediation: every request kind walks the one chain (issue 9), over in-memory upstreams."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from gateway_support import CapturingTrail, make_config

from checkrein.catalog import read_lock
from checkrein.config import config_from_mapping
from checkrein.config.policy import ResultSettings
from checkrein.errors import ConfigError, UpstreamRequestFailed
from checkrein.gate.approval import request_summary
from checkrein.gate.chain import CallContext, CallNext, CallOutcome, CallRefused
from checkrein.gate.pipeline import Gate
from checkrein.gate.seams import ApprovalRequest, ApprovalResult
from checkrein.policy import Identity, RequestKind, ToolCall
from checkrein.policy.inspect import DefaultInspector
from checkrein.testing.memory_upstream import MemoryUpstream

pytestmark = pytest.mark.anyio

ALICE = Identity("alice", source="token")
BOB = Identity("bob", source="token")
ANALYZERS_ON: dict[str, Any] = {"analyzers": {}}


def req(name: str, args: dict[str, Any] | None = None, *, kind: RequestKind = "tool", who: Identity = ALICE, session: str = "s1") -> ToolCall:
    return ToolCall(who, session, "0" * 31 + "1", "0" * 15 + "1", name, args or {}, kind=kind)


def files(name: str = "files") -> MemoryUpstream:
    up = MemoryUpstream(
        name,
        resources={"file:///etc/shadow": "root:$6$hash", "file:///home/ada/work/notes.txt": "notes", "mem://readme": "hello"},
        prompts={"review": "Review {path}", "greet": "Hello, {who}!"},
    )
    up.add_tool("read_file", lambda a: f"contents of {a.get('path')}", annotations={"readOnlyHint": True},
                input_schema={"type": "object", "properties": {"path": {"type": "string"}}})  # fmt: skip
    return up


async def gate_for(tmp_path: Path, *ups: MemoryUpstream, policy: dict[str, Any] | None = None, **kw: Any) -> tuple[Gate, CapturingTrail]:
    trail = CapturingTrail()
    sections = kw.pop("sections", {})
    config = make_config(tmp_path, {"allow": ["*"], **(policy or {})}, **sections)
    gate = Gate(config, list(ups), trail, **kw)
    await gate.start()
    return gate, trail


async def refused(gate: Gate, call: ToolCall) -> CallRefused:
    with pytest.raises(CallRefused) as info:
        await gate.request(call)
    return info.value


async def test_resource_uris_meet_the_path_analyzer_like_tool_arguments(tmp_path: Path) -> None:
    """Regression: `file:///etc/shadow` was read through resources/read while the file tool was denied."""
    up = files()
    gate, trail = await gate_for(tmp_path, up, policy=ANALYZERS_ON)
    tool = await gate.call_tool(req("files__read_file", {"path": "/etc/passwd"}))
    assert tool.is_error
    exposed = gate.names.uri("files", "file:///etc/shadow")
    exc = await refused(gate, req(exposed, {"uri": exposed}, kind="resource"))
    assert exc.code == "policy.finding" and "resource URI" in exc.message
    ok = await gate.request(req(gate.names.uri("files", "file:///home/ada/work/notes.txt"), kind="resource"))
    assert isinstance(ok, types.ReadResourceResult) and ok.contents[0].text == "notes"  # type: ignore[union-attr]
    assert up.calls == [], "the denied tool call and resource read never reached the upstream"
    kinds = [(r.kind, r.outcome) for r in trail.calls]
    assert kinds == [("tool", "denied"), ("resource", "denied"), ("resource", "ok")]
    assert trail.calls[1].exposed_name == "files__file:///etc/shadow"


async def test_a_resource_the_policy_refuses_is_not_listed(tmp_path: Path) -> None:
    gate, trail = await gate_for(tmp_path, files(), policy=ANALYZERS_ON)
    listed = await gate.request(req("resources/list", kind="list"))
    uris = {str(r.uri) for r in listed.resources}
    assert gate.names.uri("files", "file:///home/ada/work/notes.txt") in uris
    assert gate.names.uri("files", "file:///etc/shadow") not in uris
    assert [(r.kind, r.exposed_name, r.outcome) for r in trail.calls] == [("list", "resources/list", "ok")]


async def test_prompt_arguments_meet_the_analyzers(tmp_path: Path) -> None:
    up = files()
    gate, _ = await gate_for(tmp_path, up, policy=ANALYZERS_ON)
    exc = await refused(gate, req("files__review", {"path": "../../../etc/passwd"}, kind="prompt"))
    assert exc.code == "policy.finding" and "paths" in exc.message
    ok = await gate.request(req("files__greet", {"who": "Ada"}, kind="prompt"))
    assert ok.messages[0].content.text == "Hello, Ada!"


async def test_completion_is_resolved_judged_and_audited(tmp_path: Path) -> None:
    up = files()
    gate, trail = await gate_for(tmp_path, up, policy=ANALYZERS_ON)
    args = {"ref": {"type": "ref/prompt", "name": "files__review"}, "argument": {"name": "path", "value": "src/ma"}}
    result = await gate.request(req("files__review", args, kind="completion"))
    assert isinstance(result, types.CompleteResult) and result.completion.values == ["src/ma-one", "src/ma-two"]
    assert up.calls[-1][1]["ref"] == {"type": "ref/prompt", "name": "review"}, "the upstream sees its own name"
    bad = {"ref": {"type": "ref/prompt", "name": "files__review"}, "argument": {"name": "path", "value": "../../etc/shadow"}}
    exc = await refused(gate, req("files__review", bad, kind="completion"))
    assert exc.code == "policy.finding"
    assert [(r.kind, r.outcome) for r in trail.calls] == [("completion", "ok"), ("completion", "denied")]


async def test_passthrough_prefix_exposes_the_upstreams_own_names(tmp_path: Path) -> None:
    up = files()
    sections = {"servers": [{"name": "files", "command": "x", "prefix": ""}]}
    gate, trail = await gate_for(tmp_path, up, sections=sections)
    assert [t.name for t in gate.tools_for(ALICE)] == ["read_file"]
    assert not (await gate.call_tool(req("read_file", {"path": "a.txt"}))).is_error
    read = await gate.request(req("mem://readme", kind="resource"))
    assert str(read.contents[0].uri) == "mem://readme" and read.contents[0].text == "hello"
    prompt = await gate.request(req("greet", {"who": "Ada"}, kind="prompt"))
    assert prompt.messages[0].content.text == "Hello, Ada!"
    listed = await gate.request(req("resources/list", kind="list"))
    assert "mem://readme" in {str(r.uri) for r in listed.resources}
    assert trail.calls[0].exposed_name == "read_file" and trail.calls[1].exposed_name == "mem://readme"
    assert (read_lock(gate.config.lock_path) or {})["read_file"].server == "files"


async def test_a_name_two_passthrough_servers_expose_is_served_by_neither(tmp_path: Path) -> None:
    sections = {"servers": [{"name": "one", "command": "x", "prefix": ""}, {"name": "two", "command": "x", "prefix": ""}]}
    gate, _ = await gate_for(tmp_path, files("one"), files("two"), sections=sections)
    assert "read_file" not in gate.catalog.entries
    reasons = {(s.server, s.reason) for s in gate.catalog.skipped}
    assert all("'one', 'two'" in r for _, r in reasons) and {s for s, _ in reasons} == {"one", "two"}
    exc = await refused(gate, req("greet", {"who": "x"}, kind="prompt"))
    assert "several servers" in exc.message and "'one', 'two'" in exc.message


def test_two_servers_with_one_prefix_is_a_config_error_naming_both() -> None:
    servers = [{"name": "one", "command": "x", "prefix": "p"}, {"name": "two", "command": "x", "prefix": "p"}]
    with pytest.raises(ConfigError, match="'one' and 'two'"):
        config_from_mapping({"servers": servers})
    with pytest.raises(ConfigError, match="'files' and 'two'"):
        config_from_mapping({"servers": [{"name": "files", "command": "x"}, {"name": "two", "command": "x", "prefix": "files"}]})


async def test_resource_links_in_results_point_to_the_exposed_uri(tmp_path: Path) -> None:
    up = files()
    link = types.ResourceLink(type="resource_link", uri="file:///home/ada/work/notes.txt", name="notes")
    up.add_tool("find", lambda a: types.CallToolResult(content=[link]), annotations={"readOnlyHint": True})
    gate, _ = await gate_for(tmp_path, up)
    result = await gate.call_tool(req("files__find"))
    (block,) = result.content
    assert isinstance(block, types.ResourceLink)
    back = await gate.request(req(str(block.uri), kind="resource"))
    assert back.contents[0].text == "notes"


async def test_upstream_errors_keep_their_code_and_lose_their_secrets(tmp_path: Path) -> None:
    up = files()
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"

    async def failing(uri: str, *, timeout_s: float) -> types.ReadResourceResult:
        raise UpstreamRequestFailed(f"x: {uri}", rpc_code=-32002, rpc_message=f"not found (token {secret})")

    up.read_resource = failing  # type: ignore[method-assign]
    gate, trail = await gate_for(tmp_path, up, inspector=DefaultInspector(ResultSettings()))
    exc = await refused(gate, req(gate.names.uri("files", "mem://nope"), kind="resource"))
    assert exc.rpc_code == -32002 and "JSON-RPC error -32002" in exc.message
    assert secret not in exc.message and "REDACTED" in exc.message
    assert secret not in str(trail.calls[-1].result)


class RecordingApprover:
    """Grants every request and keeps what it was asked."""

    def __init__(self) -> None:
        self.asked: list[ApprovalRequest] = []

    async def approve(self, request: ApprovalRequest) -> ApprovalResult:
        self.asked.append(request)
        return ApprovalResult(True, "human")

async def test_grants_are_bound_to_identity_and_session(tmp_path: Path) -> None:
    approver = RecordingApprover()
    policy = {"tools": {"files__read_file": {"approval": "ask"}}}
    gate, _ = await gate_for(tmp_path, files(), policy=policy, approver=approver)
    args = {"path": "a.txt"}
    for call in (req("files__read_file", args), req("files__read_file", args)):
        assert not (await gate.call_tool(call)).is_error
    assert len(approver.asked) == 1, "the same identity, session and arguments reuse the grant"
    await gate.call_tool(req("files__read_file", args, who=BOB))
    await gate.call_tool(req("files__read_file", args, session="s2"))
    assert len(approver.asked) == 3, "another identity or another session is asked again"
    assert '"path":"a.txt"' in approver.asked[0].summary, "the approval text shows the arguments"


async def test_a_declared_secret_inside_an_array_is_masked_in_what_the_approver_sees(tmp_path: Path) -> None:
    """Regression: the approval text masked the decision's pointers by exact match only, so a
    secret the schema declares inside an array (`/users/*/code`) reached the human or webhook."""

    up = MemoryUpstream("hr")
    item = {"type": "object", "properties": {"name": {"type": "string"}, "code": {"type": "string", "format": "password"}}}
    up.add_tool("edit", lambda a: "ok", input_schema={"type": "object", "properties": {"users": {"type": "array", "items": item}}})
    approver = RecordingApprover()
    gate, _ = await gate_for(tmp_path, up, policy={"tools": {"hr__edit": {"approval": "ask"}}}, approver=approver)
    args = {"users": [{"name": "ann", "code": "Opal-Trumpet-42"}, {"name": "bob", "code": "Jade-Drum-7"}]}
    assert not (await gate.call_tool(req("hr__edit", args))).is_error
    (asked,) = approver.asked
    assert "/users/*/code" in asked.decision.redactions
    sent = json.dumps(request_summary(asked))
    for text in (asked.summary, sent):
        assert "Opal-Trumpet-42" not in text and "Jade-Drum-7" not in text
    assert '{"users":[{"code":"***","name":"ann"},{"code":"***","name":"bob"}]}' in asked.summary



async def test_an_argument_key_that_is_a_secret_is_masked_in_what_the_approver_sees(tmp_path: Path) -> None:
    """Regression (found in review): the approval text masked values only, so a key that is itself
    a credential (`{"-u bob:Hunter2/Zq8x": 1}`) reached the terminal, the elicitation form and,
    through the JSON-wide mask that cannot read it, the webhook."""

    up = MemoryUpstream("hr")
    up.add_tool("edit", lambda a: "ok", input_schema={"type": "object"})
    approver = RecordingApprover()
    gate, _ = await gate_for(tmp_path, up, policy={"tools": {"hr__edit": {"approval": "ask"}}}, approver=approver)
    args = {"opts": {"-u bob:Hunter2/Zq8x": 1, "mode": "fast"}}
    assert not (await gate.call_tool(req("hr__edit", args))).is_error
    (asked,) = approver.asked
    for text in (asked.summary, json.dumps(request_summary(asked))):
        assert "Hunter2" not in text
    assert '"mode":"fast"' in asked.summary and "[REDACTED:curl_user]" in asked.summary

async def test_an_inserted_step_sees_every_request_kind(tmp_path: Path) -> None:
    seen: list[str] = []

    class Spy:
        async def __call__(self, ctx: CallContext, call_next: CallNext) -> CallOutcome:
            seen.append(ctx.call.kind)
            return await call_next(ctx)

    gate, _ = await gate_for(tmp_path, files(), steps=lambda s: [*s[:2], Spy(), *s[2:]])
    await gate.call_tool(req("files__read_file", {"path": "a"}))
    await gate.request(req(gate.names.uri("files", "mem://readme"), kind="resource"))
    await gate.request(req("files__greet", {"who": "x"}, kind="prompt"))
    await gate.request(req("tools/list", kind="list"))
    assert seen == ["tool", "resource", "prompt", "list"]


async def test_a_request_in_flight_keeps_the_state_it_started_with(tmp_path: Path) -> None:
    gate, _ = await gate_for(tmp_path, files())
    before = gate.state
    await gate.apply_config(make_config(tmp_path, {"allow": ["nothing"]}))
    assert gate.state is not before and before.policy.digest != gate.policy.digest
    assert (await gate.call_tool(req("files__read_file", {"path": "a"}))).is_error
