"""`checkrein policy check` and `checkrein policy tools`: the policy, without starting any upstream.

Tool definitions come from the pin file (`checkrein.lock` beside the config, or `[gateway]
lock_file`). Exit codes of `policy check`: 0 allow, 3 deny, 4 ask, 2 usage error (bad JSON, unknown
identity, config or lock error). With `--calls FILE.jsonl` (`-` for stdin) it decides one call per
line in one process, prints one decision per line in the same order, and exits 0 when every line
was decided, 2 when a line could not be (its output line says why; the others are still decided).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from checkrein.catalog.lock import load_pinned_tools
from checkrein.config import CREDENTIALS, LAUNCH, WEBHOOK, Config, load_config
from checkrein.config.problems import did_you_mean
from checkrein.errors import CheckreinError
from checkrein.frontend.context import local_identity
from checkrein.policy import (
    CompiledPolicy,
    Decision,
    Identity,
    SessionState,
    ToolCall,
    compile_policy,
    decide,
)
from checkrein.policy.engine import governance_decision
from checkrein.policy.governance import unmatched_patterns

__all__ = ["register"]

EXIT = {"allow": 0, "deny": 3, "ask": 4}
_DEFAULT_CONFIG = Path("checkrein.toml")


def _usage(message: str) -> typer.Exit:
    print(f"checkrein: {message}", file=sys.stderr)
    return typer.Exit(2)


def _identity(config: Config, name: str | None, anonymous: bool = False) -> Identity:
    if anonymous:
        if name is not None:
            raise _usage("--identity and --anonymous exclude each other")
        return Identity("anonymous", source="anonymous", authenticated=False)
    if name is None:
        return local_identity()
    for ident in config.identities:
        if ident.name == name:
            return Identity(ident.name, tuple(ident.roles), "token")
    known = ", ".join(i.name for i in config.identities) or "none configured"
    raise _usage(f"unknown identity {name!r} (known: {known})")


def _load(config_path: Path) -> tuple[Config, CompiledPolicy]:
    try:
        # Deciding needs the policy, not tokens, launch commands or the webhook's headers.
        config = load_config(config_path, unused=(*CREDENTIALS, *LAUNCH, *WEBHOOK))
        tools = load_pinned_tools(config)
    except CheckreinError as exc:
        raise _usage(str(exc)) from None
    return config, compile_policy(config, tools)


def _print_decision(exposed: str, d: Decision, as_json: bool, policy: CompiledPolicy) -> None:
    if as_json:
        print(json.dumps({"tool": exposed, "policy_digest": policy.digest, **d.as_dict()}, ensure_ascii=False))
        return
    console = Console(highlight=False, soft_wrap=True)
    style = {"allow": "green", "deny": "red", "ask": "yellow"}[d.effect]
    console.print(f"[bold {style}]{d.effect}[/]  {escape(f'{exposed}  rule={d.rule_id}  risk={d.risk}')}")
    for r in d.reasons:
        console.print(f"  reason: {r}", markup=False)
    for f in d.findings:
        console.print(f"  finding: {f.analyzer}/{f.kind} at {f.path or '(arguments)'} {f.message}", markup=False)
    if d.redactions:
        console.print(f"  redact: {', '.join(d.redactions)}", markup=False)


def _decide_one(config: Config, policy: CompiledPolicy, who: Identity, tool: str, arguments: Any) -> Decision:
    server, _, name = tool.partition(config.gateway.separator)
    plan = policy.plans.get(tool)
    if plan is None:
        return Decision(
            "deny",
            "tool.not_found",
            (f"{tool} is not in {config.lock_path.name}{did_you_mean(tool, policy.plans)}; it is unknown or not pinned (run `checkrein pin`)",),
            error_code="tool.not_found",
        )
    call = ToolCall(who, "policy-check", "", "", tool, arguments, server=plan.definition.server or server, tool=plan.definition.name or name)
    return decide(policy, call, SessionState("policy-check"), 0.0)


def _batch(config: Config, policy: CompiledPolicy, who: Identity, source: str, as_json: bool) -> int:
    """Decide every call of a JSON Lines file (`{"tool": ..., "args": {...}}`, other keys ignored);
    one output line per input line, in order. Returns the exit code: 0, or 2 if a line was bad."""
    try:
        stream = sys.stdin if source == "-" else open(source, encoding="utf-8")
    except OSError as exc:
        raise _usage(f"cannot read --calls {source}: {exc.strerror}") from None
    bad = 0
    out = sys.stdout
    try:
        for number, line in enumerate(stream, 1):
            if not line.strip():
                continue
            problem: str | None
            try:
                row = json.loads(line)
            except ValueError as exc:
                row, problem = None, f"line {number} is not valid JSON: {exc}"
            else:
                problem = _call_problem(row, number)
            if problem is not None:
                bad += 1
                out.write(json.dumps({"line": number, "error": problem}, ensure_ascii=False) + "\n" if as_json else f"{number}: error: {problem}\n")
                continue
            d = _decide_one(config, policy, who, row["tool"], row.get("args", {}))
            if as_json:
                out.write(json.dumps({"line": number, "tool": row["tool"], **d.as_dict()}, ensure_ascii=False) + "\n")
            else:
                out.write(f"{number}: {d.effect} {row['tool']} rule={d.rule_id}" + (f" ({d.reasons[0]})" if d.reasons else "") + "\n")
    except UnicodeDecodeError as exc:
        raise _usage(f"--calls {source} is not UTF-8 text: {exc}") from None
    finally:
        if stream is not sys.stdin:
            stream.close()
    if bad:
        print(f"checkrein: {bad} line(s) of {source} could not be decided (see their output lines)", file=sys.stderr)
    return 2 if bad else 0


def _call_problem(row: Any, number: int) -> str | None:
    if not isinstance(row, dict):
        return f"line {number} is not a JSON object"
    tool = row.get("tool")
    if not isinstance(tool, str) or not tool:
        return f"line {number} has no string \"tool\""
    if not isinstance(row.get("args", {}), dict):
        return f"line {number}: \"args\" must be a JSON object"
    return None


def check(
    tool: str | None = typer.Option(None, "--tool", "-t", help="Exposed tool name (server__tool)."),
    args: str = typer.Option(
        "{}", "--args", "-a", help="Arguments as a JSON object; @FILE reads it from a file, - from stdin."
    ),
    config_path: Annotated[Path, typer.Option("--config", "-c", help="checkrein.toml.")] = _DEFAULT_CONFIG,
    identity: str | None = typer.Option(None, "--identity", "-i", help="Identity name (one of the config's identities)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    anonymous: bool = typer.Option(False, "--anonymous", help="Decide for an unauthenticated HTTP caller."),
    calls: str | None = typer.Option(
        None, "--calls", help="Decide every call of a JSON Lines file ({\"tool\": ..., \"args\": {...}} per line; - for stdin)."
    ),
) -> None:
    """Print the decision for one call. Exit 0 allow, 3 deny, 4 ask, 2 usage error.

    With --calls, decide one call per line and print one decision per line in the same order
    (with --json: effect, rule_id, reasons, findings...); exit 0 when every line was decided.
    The caller is the local user (as for stdio) unless --identity or --anonymous says otherwise."""
    if calls is not None:
        if tool is not None:
            raise _usage("--tool and --calls exclude each other")
        config, policy = _load(config_path)
        raise typer.Exit(_batch(config, policy, _identity(config, identity, anonymous), calls, as_json))
    if tool is None:
        raise _usage("give --tool (one call) or --calls FILE.jsonl (many)")
    try:
        if args == "-":
            args = sys.stdin.read()
        elif args.startswith("@"):
            args = Path(args[1:]).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _usage(f"cannot read --args {args[:200]}: {exc}") from None
    try:
        arguments = json.loads(args)
    except ValueError as exc:
        raise _usage(f"--args is not valid JSON: {exc}") from None
    config, policy = _load(config_path)
    who = _identity(config, identity, anonymous)
    d = _decide_one(config, policy, who, tool, arguments)
    _print_decision(tool, d, as_json, policy)
    raise typer.Exit(EXIT[d.effect])


def tools(
    config_path: Annotated[Path, typer.Option("--config", "-c", help="checkrein.toml.")] = _DEFAULT_CONFIG,
    identity: str | None = typer.Option(None, "--identity", "-i", help="Identity name (one of the config's identities)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON lines."),
) -> None:
    """List every pinned tool with its category, risk, flow labels and what the policy does with it.

    Warns (stderr) about allow/deny patterns and tool rules that match no pinned tool."""
    from checkrein.policy.flow import compile_flow

    config, policy = _load(config_path)
    who = _identity(config, identity)
    flows = compile_flow(policy).tools
    rows: list[dict[str, Any]] = []
    for name, plan in sorted(policy.plans.items()):
        g = plan.governance
        d = governance_decision(policy, who, name)
        category = g.classification.category + (" (shared)" if g.classification.shared else "")
        f = flows[name]
        why = {r.label: {"present": r.present, "source": r.source, "reason": r.reason} for r in f.reasons}
        rows.append({
            "tool": name, "category": category, "risk": g.risk, "effect": d.effect, "rule_id": d.rule_id,
            "flow": list(f.labels), "flow_why": why, "flow_effects": {"rule_of_two": f.rule_of_two, "provenance": f.provenance},
        })  # fmt: skip
    for stale in unmatched_patterns(config.policy, policy.plans):
        hint = did_you_mean(stale.split(": ", 1)[-1], policy.plans)
        print(f"checkrein: warning: {stale} matches no pinned tool{hint}", file=sys.stderr)
    if as_json:
        for row in rows:
            print(json.dumps(row))
        return
    table = Table("tool", "category", "risk", "effect", "rule", "flow", "why (flow)")
    for row in rows:
        because = "; ".join(
            f"{'' if w['present'] else 'not '}{label}: {w['reason']} [{w['source']}]" for label, w in row["flow_why"].items()
        )
        flow = ", ".join(row["flow"]) or "-"
        table.add_row(row["tool"], row["category"], row["risk"], row["effect"], row["rule_id"], flow, escape(because))
    Console().print(table)


def register(app: typer.Typer) -> None:
    """Add `policy check` and `policy tools` to `app`."""
    group = typer.Typer(rich_markup_mode=None, help="Inspect the policy without starting any upstream.", no_args_is_help=True)
    group.command("check")(check)
    group.command("tools")(tools)
    app.add_typer(group, name="policy")
