"""Each policy template's decisions side by side, over the same probe calls.

Decisions come from `policy.decide` against the tool definitions a scenario run pinned in its
`checkrein.lock`, so the matrix shows what the gateway would do, not what a document says.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

from checkrein.catalog.lock import load_pinned_tools
from checkrein.config import load_config
from checkrein.config.model import config_from_mapping
from checkrein.errors import CheckreinError
from checkrein.policy import SessionState, ToolCall, compile_policy, decide
from checkrein.policy.call import Identity

__all__ = ["PROBES", "TEMPLATES", "template_matrix"]

TEMPLATES = ("development", "production", "strict")

PROBES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("get_weather(Shanghai)", "sandbox__get_weather", {"city": "Shanghai"}),
    ("search_documents(running)", "knowledge__search_documents", {"query": "running", "limit": 3}),
    ("get_incident_snapshot(42)", "monitor__get_incident_snapshot", {"incident_id": 42, "view": "summary"}),
    ("read_file(notes.txt)", "sandbox__read_file", {"filename": "notes.txt"}),
    ("read_file(../../etc/passwd)", "sandbox__read_file", {"filename": "../../etc/passwd"}),
    ("write_file(out.txt)", "sandbox__write_file", {"filename": "out.txt", "content": "hi"}),
    ("add_document(notes)", "knowledge__add_document", {"source": "notes", "text": "hello"}),
    ("delete_file(notes.txt)", "sandbox__delete_file", {"filename": "notes.txt", "confirm": True}),
    ("execute_command(ls)", "sandbox__execute_command", {"command": "ls"}),
    ("get_incident_snapshot(true)", "monitor__get_incident_snapshot", {"incident_id": True}),
)


def template_matrix(scripted_work: Path) -> tuple[dict[str, dict[str, str]], str]:
    """Decisions per probe and template, using the config and lock of the first scenario workdir
    under ``scripted_work`` that has a lock. Returns the matrix and a note (empty when fine)."""
    candidates = sorted(p.parent for p in scripted_work.glob("*/checkrein.lock"))
    if not candidates:
        return {}, "The template matrix was skipped: no scenario produced a checkrein.lock."
    base = load_config(candidates[0] / "checkrein.toml")
    try:
        tools = load_pinned_tools(base)
    except CheckreinError as exc:
        return {}, f"The template matrix was skipped: {exc}"
    ident = Identity(user="demo", source="stdio")
    matrix: dict[str, dict[str, str]] = {label: {} for label, _, _ in PROBES}
    for template in TEMPLATES:
        data = base.as_written()  # resolved again below; a resolved value is never resolved twice
        data.setdefault("policy", {})["template"] = template
        cfg = config_from_mapping(data, source=str(candidates[0] / "checkrein.toml"))
        policy = compile_policy(cfg, tools)
        for label, tool, args in PROBES:
            call = ToolCall(
                identity=ident, session_id="matrix", trace_id=uuid.uuid4().hex, span_id=uuid.uuid4().hex[:16],
                exposed_name=tool, arguments=args,
            )
            d = decide(policy, call, SessionState("matrix"), time.time())
            matrix[label][template] = d.effect if d.effect == "allow" else f"{d.effect} ({d.rule_id})"
    return matrix, ""
