"""Run one scenario end to end: fresh servers behind a real gateway, the agent, then the checks.

`run_scenario` is what the per-scenario subprocess (`python -m checkrein.evaluation.run_one`)
executes. The judgement reads three independent records: what the agent received (its run
result), what the gateway decided (the audit log, joined by trace and span id) and the audit
verifier's verdict.
"""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any

from checkrein.agent.loop import RunSettings, ToolCallRecord
from checkrein.agent.model import Model
from checkrein.agent.runner import gateway_target, run_query
from checkrein.agent.scripted import ScriptedModel, ScriptStep
from checkrein.audit.query import EventFilter, query_events
from checkrein.audit.signing import default_key_path
from checkrein.audit.verify import verify_log
from checkrein.errors import AuditError
from checkrein.servers.knowledge_seed import seed_knowledge_base

from .scenario import Scenario, ScenarioResult, StepResult
from .workspace import write_workspace

__all__ = ["run_scenario", "scripted_model_for"]

_STATUS_TO_OUTCOME = {"ok": "ok", "denied": "denied", "error": "error", "gateway_error": "error"}


def scripted_model_for(scenario: Scenario) -> ScriptedModel:
    return ScriptedModel([ScriptStep(s.tool, s.args) for s in scenario.steps], scenario.answer)


def _judge_step(i: int, step: Any, rec: ToolCallRecord | None, event: dict[str, Any] | None) -> StepResult:
    problems: list[str] = []
    effect = str((event or {}).get("decision", {}).get("effect", "")) or "?"
    rule_id = str((event or {}).get("decision", {}).get("rule_id", "")) or (rec.rule_id if rec else "") or ""
    outcome = str((event or {}).get("outcome", "")) or (_STATUS_TO_OUTCOME.get(rec.status, rec.status) if rec else "?")
    text = rec.text if rec else ""
    if rec is None:
        problems.append(f"step {i}: the agent never made this call")
    if event is None:
        problems.append(f"step {i}: no audit event for {step.tool}")
    if effect != step.expect:
        problems.append(f"step {i} {step.tool}: expected {step.expect}, got {effect} ({rule_id})")
    if outcome != step.outcome:
        problems.append(f"step {i} {step.tool}: expected outcome {step.outcome}, got {outcome}")
    if step.rule and step.rule not in rule_id and step.rule not in text:
        problems.append(f"step {i} {step.tool}: rule {rule_id!r} does not mention {step.rule!r}")
    low = text.lower()
    for s in step.result_contains:
        if s.lower() not in low:
            problems.append(f"step {i} {step.tool}: the model's text lacks {s!r}")
    for s in step.result_excludes:
        if s.lower() in low:
            problems.append(f"step {i} {step.tool}: the model's text contains {s!r}")
    return StepResult(
        tool=step.tool,
        expected_effect=step.expect,
        expected_outcome=step.outcome,
        effect=effect,
        outcome=outcome,
        rule_id=rule_id,
        duration_ms=rec.duration_ms if rec else 0.0,
        text=text[:500],
        ok=not problems,
        problems=problems,
    )


def _bytes_of_tree(root: Path) -> bytes:
    out = io.BytesIO()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            out.write(p.read_bytes())
    return out.getvalue()


async def run_scenario(
    scenario: Scenario, workdir: Path, *, model: Model | None = None, model_name: str = "scripted"
) -> ScenarioResult:
    """Run ``scenario`` in ``workdir`` (created fresh) and judge it. Never raises for a failed check."""
    started = time.monotonic()
    config_path = write_workspace(scenario, workdir)
    seed_knowledge_base(workdir / "kb.sqlite")
    (workdir / "sandbox").mkdir(exist_ok=True)
    errlog = (workdir / "gateway-stderr.log").open("w", encoding="utf-8")
    scripted = model is None
    try:
        outcome = await run_query(
            gateway_target(config_path),
            model or scripted_model_for(scenario),
            scenario.query,
            workdir / "traces",
            RunSettings(max_steps=max(8, len(scenario.steps) + 2)),
            errlog=errlog,
        )
    finally:
        errlog.close()
    result = outcome.result
    failures: list[str] = []
    if result.status != "answered":
        failures.append(f"run ended with {result.status}: {result.error or 'no answer'}")
    audit_dir = workdir / "audit"
    try:
        events = query_events(audit_dir, EventFilter())
    except AuditError as exc:
        events, failures = [], [*failures, f"audit unreadable: {exc}"]
    calls = [e for e in events if e.get("type") == "call" and e.get("trace_id") == result.trace_id]
    # The gateway opens its own span per call; the agent's span is its parent.
    by_span = {str(e.get("parent_span_id") or e.get("span_id")): e for e in calls}
    steps: list[StepResult] = []
    if scripted:
        for i, step in enumerate(scenario.steps):
            rec = result.tool_calls[i] if i < len(result.tool_calls) else None
            steps.append(_judge_step(i, step, rec, by_span.get(rec.span_id) if rec else None))
            failures.extend(steps[-1].problems)
    else:
        for rec in result.tool_calls:
            ev = by_span.get(rec.span_id, {})
            steps.append(
                StepResult(rec.tool, "", "", str(ev.get("decision", {}).get("effect", "?")),
                           str(ev.get("outcome", rec.status)), str(ev.get("decision", {}).get("rule_id", "")),
                           rec.duration_ms, rec.text[:500], True)
            )
    checks = scenario.checks
    answer = result.answer or ""
    for s in checks.answer_contains:
        if s.lower() not in answer.lower():
            failures.append(f"the final answer lacks {s!r}")
    for tool in checks.forbidden_tools:
        forwarded = [e for e in calls if e.get("exposed_name") == tool and e.get("outcome") in ("ok", "error", "timeout")]
        if forwarded:
            failures.append(f"forbidden tool {tool} reached its server ({len(forwarded)} call(s))")
    if checks.secrets_absent:
        blob = _bytes_of_tree(audit_dir) + _bytes_of_tree(workdir / "traces")
        blob += (workdir / "gateway-stderr.log").read_bytes()
        for secret in checks.secrets_absent:
            if secret.encode() in blob:
                failures.append("a planted secret was written to the audit, the trace or the gateway's stderr")
    if checks.upstream_restarted and not any(
        e.get("type") == "lifecycle" and "restart" in str(e.get("event", "")) for e in events
    ):
        failures.append("no upstream restart was audited")
    for tool in checks.quarantined:
        if not any(e.get("exposed_name") == tool and "quarantin" in str(e.get("decision", {}).get("rule_id", ""))
                   for e in calls):
            failures.append(f"{tool} was not quarantined")
    # The workspace's config is a file, so serve signed the log with the key it made beside it:
    # the check is `checkrein audit verify audit --key checkrein.audit-key` (signatures included).
    key = default_key_path(str(config_path), workdir)
    report = verify_log(audit_dir, public_key=key if key.is_file() else None)
    if not report.valid:
        failures.append(f"audit verify failed: {report.problem}")
    elif not report.signatures_checked:
        failures.append("audit verify checked no checkpoint signature (the log is not signed)")
    verified = report.valid and report.signatures_checked > 0
    passed = not failures if scripted else result.status != "error" and verified
    return ScenarioResult(
        name=scenario.name,
        title=scenario.title,
        template=scenario.template,
        model=model_name,
        passed=passed,
        steps=steps,
        answer=answer[:2000],
        failures=failures,
        duration_s=round(time.monotonic() - started, 2),
        audit_verified=verified,
        audit_events=report.events,
    )
