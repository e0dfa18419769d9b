"""Secrets the policy points at reach no file of the audit log: the gate's path end to end
(`decide`, a `CallRecord` as the gate builds it, a trail opened with the policy's finder)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from checkrein.audit import CallRecord, open_audit_trail
from checkrein.catalog.model import ToolDefinition
from checkrein.config import parse_config
from checkrein.policy import Identity, SessionState, ToolCall, compile_policy, decide
from checkrein.policy.analyzers import find_secrets
from checkrein.policy.analyzers.secrets import may_find

from .helpers import read_lines, settings


def _record_through_a_trail(tmp_path: Path, schema: dict[str, Any], args: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """(the decision as the gate passes it, every byte the trail wrote under its directory)."""
    tools = {"hr__edit": ToolDefinition("hr", "edit", "edit records", schema)}
    policy = compile_policy(parse_config('[[servers]]\nname = "hr"\ncommand = "hr"\n[policy]\nallow = ["hr__*"]\n'), tools)
    call = ToolCall(Identity("alice", source="stdio"), "s", "t", "s", "hr__edit", args, server="hr", tool="edit")
    d = decide(policy, call, SessionState("s"), 0.0)
    rec = CallRecord("tool", "t", "s", None, "sess", {"user": "alice"}, None, "hr", "edit", "hr__edit", None, args,
                     {"effect": d.effect, "rule_id": d.rule_id, "reasons": list(d.reasons), "risk": d.risk},
                     "denied" if d.effect == "deny" else "ok", None, 1.0,
                     redactions=d.redactions, args_scanned=d.secrets_scanned)
    directory = tmp_path / "audit"

    async def run() -> None:
        trail = open_audit_trail(settings(directory), tmp_path, secret_finder=find_secrets,
                                 secret_prefilter=lambda t: may_find(t, None))
        await trail.record_call(rec)
        await trail.aclose()

    anyio.run(run)
    assert any(b'"type":"call"' in line for line in read_lines(directory))
    written = b"".join(p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file())
    return {"effect": d.effect, "redactions": d.redactions}, written


def test_a_secret_in_a_short_key_is_written_nowhere(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"path": {"type": "string"}, "opts": {"type": "object"}}}
    d, written = _record_through_a_trail(tmp_path, schema, {"path": "/workspace/data", "opts": {"pwd=Tr0ub4d&3x": "ok"}})
    assert d["effect"] == "deny" and d["redactions"]  # the policy found it
    assert b"Tr0ub4d" not in written
    assert b"/args_preview/opts/pwd=[REDACTED:" in written


def test_a_declared_secret_inside_an_array_is_written_nowhere(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"users": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "code": {"type": "string", "format": "password"}}}}}}
    args = {"users": [{"name": "ann", "code": "Opal-Trumpet-42"}, {"name": "bob", "code": "Jade-Drum-7"}]}
    d, written = _record_through_a_trail(tmp_path, schema, args)
    assert d["effect"] == "allow" and "/users/*/code" in d["redactions"]
    assert b"Opal-Trumpet-42" not in written and b"Jade-Drum-7" not in written
    assert b'"redactions":["/args_preview/users/0/code","/args_preview/users/1/code"]' in written
