"""`checkrein policy check` and `checkrein policy tools`: the policy, without starting any upstream.

Tool definitions come from the pin file (`checkrein.lock` beside the config, or `[gateway]
lock_file`). Exit codes of `policy check`: 0 allow, 3 deny, 4 ask, 2 usage error (bad JSON, unknown
identity, config or lock error).
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


def check(
    tool: str = typer.Option(..., "--tool", "-t", help="Exposed tool name (server__tool)."),
    args: str = typer.Option(
        "{}", "--args", "-a", help="Arguments as a JSON object; @FILE reads it from a file, - from stdin."
    ),
    config_path: Annotated[Path, typer.Option("--config", "-c", help="checkrein.toml.")] = _DEFAULT_CONFIG,
    identity: str | None = typer.Option(None, "--identity", "-i", help="Identity name (one of the config's identities)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    anonymous: bool = typer.Option(False, "--anonymous", help="Decide for an unauthenticated HTTP caller."),
) -> None:
    """Print the decision for one call. Exit 0 allow, 3 deny, 4 ask, 2 usage error.

    The caller is the local user (as for stdio) unless --identity or --anonymous says otherwise."""
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
    server, _, name = tool.partition(config.gateway.separator)
    call = ToolCall(who, "policy-check", "", "", tool, arguments, server=server, tool=name)
    if tool not in policy.plans:
        d = Decision(
            "deny",
            "tool.not_found",
            (f"{tool} is not in {config.lock_path.name}{did_you_mean(tool, policy.plans)}; it is unknown or not pinned (run `checkrein pin`)",),
            error_code="tool.not_found",
        )
    else:
        d = decide(policy, call, SessionState("policy-check"), 0.0)
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
