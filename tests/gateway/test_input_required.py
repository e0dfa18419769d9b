"""Approvals for 2026-era clients: the multi-round `input_required` result (issue 11), through a
real stdio gateway in front of the echo server; the sealed state binds the answer to one call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from gateway_support import echo_server_config, gateway_stdio_params, write_config
from mcp import Client

from checkrein.gate.approval_state import RequestSealer
from checkrein.gate.grants import GrantKey

pytestmark = pytest.mark.anyio


def config(tmp_path: Path) -> Path:
    cfg = write_config(
        tmp_path,
        [echo_server_config("a")],
        policy={"allow": ["a__*"]},
        tools={"a__echo": {"approval": "ask"}},
        audit={"dir": "audit"},
    )
    with cfg.open("a", encoding="utf-8") as fh:
        fh.write('\n[approval]\nmode = "elicit"\n')
    return cfg


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("answer", [True, False])
async def test_a_2026_client_answers_the_approval_form_and_the_call_goes_on(tmp_path: Path, answer: bool) -> None:
    asked: list[str] = []

    async def elicit(ctx: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": answer})

    args = {"text": "x" * 300 + " the end"}
    with anyio.fail_after(60):
        async with Client(gateway_stdio_params(config(tmp_path)), mode="auto", cache=None, elicitation_callback=elicit) as c:  # type: ignore[arg-type]
            result = await c.call_tool("a__echo", args)
    assert len(asked) == 1 and "the end" in asked[0], "the form shows every argument, uncut"
    events = [json.loads(line) for seg in sorted((tmp_path / "audit").glob("*.jsonl")) for line in seg.read_text().splitlines()]
    calls = [e for e in events if e.get("kind") == "tool"]
    assert [c["error_code"] for c in calls][:1] == ["approval.input_required"], "the first round asked by input_required"
    assert calls[-1]["outcome"] == ("ok" if answer else "denied")
    assert calls[-1]["decision"]["approval"]["approver"] == "elicit"
    if answer:
        assert not result.is_error and text(result) == args["text"]
    else:
        assert result.is_error and "not approved" in text(result)


def test_the_sealed_state_binds_identity_session_tool_arguments_and_policy() -> None:
    sealer = RequestSealer()
    key = GrantKey("token:ci", "s1", "a__echo", "sha256:aa", "sha256:pp")
    state = sealer.seal(key, expires_at=1000.0)
    opened = sealer.open(state, now=10.0)
    assert opened is not None and opened.key == key
    assert sealer.open(state, now=1000.0) is None, "expired"
    version, body, mac = state.split(".")
    assert sealer.open(f"{version}.{body}x.{mac}", now=10.0) is None, "altered"
    assert RequestSealer().open(state, now=10.0) is None, "another gateway's key"
    assert sealer.open("garbage", now=10.0) is None


def test_replicas_sharing_state_key_open_each_others_seals(tmp_path: Path) -> None:
    """`[approval] state_key`: a retry answered on another replica of the fleet is honoured."""
    from checkrein.config import parse_config
    from checkrein.gate.factory import NullAuditTrail, build_gate
    from checkrein.upstream import UpstreamPool

    def gate(secret: str | None) -> Any:
        text = '[approval]\nmode = "elicit"\n' + ('state_key = "${SEAL}"\n' if secret else "")
        cfg = parse_config(text, environ={"SEAL": secret} if secret else {})
        return build_gate(cfg, upstreams=UpstreamPool([]), audit=NullAuditTrail())

    shared = "k" * 16 + "0123456789abcdef"
    a, b, other, lone = gate(shared), gate(shared), gate(shared[::-1]), gate(None)
    key = GrantKey("token:ci", "s1", "a__echo", "sha256:aa", "sha256:pp")
    state = a.sealer.seal(key, expires_at=1000.0)
    opened = b.sealer.open(state, now=10.0)
    assert opened is not None and opened.key == key
    assert other.sealer.open(state, now=10.0) is None and lone.sealer.open(state, now=10.0) is None


@pytest.mark.parametrize(
    ("line", "says"),
    [('state_key = "a-literal-secret-of-more-than-32-chars"', "never a literal secret"),
     ('state_key = "${SEAL_UNSET_FOR_THIS_TEST}"', "SEAL_UNSET_FOR_THIS_TEST")],
)
def test_state_key_is_a_variable_that_is_set(line: str, says: str) -> None:
    """A literal key, or an unset variable, is a config error naming the key."""
    from checkrein.config import parse_config
    from checkrein.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        parse_config(f"[approval]\n{line}\n", environ={})
    assert says in str(err.value) and "state_key" in str(err.value)
