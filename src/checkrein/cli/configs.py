"""`checkrein import | emit | lint | skills check | ledger | ledger diff`: meeting clients' configs.

Exit codes: 0 success (lint: no errors; ledger diff: identical); 1 findings or differences
(lint errors, skills structure errors, ledgers that differ, an upstream that did not start for
the ledger); 2 usage error or unreadable input.
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer
from rich.console import Console

from checkrein import __version__
from checkrein.catalog.ledger import ServerSnapshot, build_ledger, diff_ledgers, render_ledger
from checkrein.catalog.lock import read_lock
from checkrein.catalog.skills import SkillsCheck, check_skills
from checkrein.config import CREDENTIALS, Config, load_config
from checkrein.config.importers import (
    ClientFormat,
    ConfigKind,
    EmitTransport,
    checkrein_entry,
    emit_client_config,
    read_client_config,
    render_checkrein_config,
    write_atomic,
)
from checkrein.config.importers.switch import default_client_file, switch_client_file
from checkrein.config.lint import RULES, LintResult, lint_file
from checkrein.config.problems import explained
from checkrein.errors import CheckreinError, ConfigError

__all__ = ["register"]

EXIT_CODES = "Exit codes: 0 ok, 1 findings or differences, 2 usage error or unreadable input."


class ClientChoice(StrEnum):
    claude = "claude"
    codex = "codex"
    harbor = "harbor"


class LintKind(StrEnum):
    claude = "claude"
    codex = "codex"
    harbor = "harbor"
    harbor_judge = "harbor-judge"
    checkrein = "checkrein"


class EmitTransportChoice(StrEnum):
    stdio = "stdio"
    http = "http"


def _err(message: str) -> None:
    Console(stderr=True, highlight=False, soft_wrap=True).print(message, markup=False)


def _fail(message: str, code: int = 2) -> typer.Exit:
    _err(f"checkrein: {message}")
    return typer.Exit(code)


def _load(path: Path) -> Config:
    try:
        return load_config(path, unused=CREDENTIALS)  # no command here serves HTTP
    except ConfigError as exc:
        raise _fail(explained(exc)) from None


# -- import / emit ------------------------------------------------------------------------------


def import_config(
    file: Annotated[Path, typer.Argument(help="Claude .mcp.json, Codex config.toml or Harbor task.toml.")],
    fmt: Annotated[ClientChoice | None, typer.Option("--format", "-f", help="Source format (detected if omitted).")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write here (atomically) instead of stdout.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --out if it exists.")] = False,
) -> None:
    """Turn a client's MCP servers into a commented, default-deny checkrein config.

    Inline secrets are replaced by ${VAR} references (named in the output), never copied."""
    try:
        result = read_client_config(file, fmt.value if fmt else None)
        text = render_checkrein_config(result)
    except ConfigError as exc:
        raise _fail(explained(exc)) from None
    if out is None:
        sys.stdout.write(text)
    else:
        if out.exists() and not force:
            raise _fail(f"{out} exists; pass --force to overwrite it")
        write_atomic(out, text)
        _err(f"wrote {out} ({len(result.servers)} server(s); every tool denied until you allow it)")
    for s in result.secrets:
        _err(f"moved inline secret {s.server}: {s.where} -> ${{{s.variable}}} (set {s.variable})")
    for n in result.notes:
        _err(f"note: {(n.server + ': ') if n.server else ''}{n.message}")


def emit(
    client: Annotated[ClientChoice, typer.Option("--for", help="claude, codex or harbor.")],
    config: Annotated[Path, typer.Option("--config", "-c", help="The checkrein config the client should use.")],
    transport: Annotated[EmitTransportChoice, typer.Option("--transport", "-t", help="stdio (client starts checkrein) or http.")] = EmitTransportChoice.stdio,
    url: Annotated[str | None, typer.Option("--url", help="Gateway URL for --transport http, e.g. http://127.0.0.1:8765/mcp.")] = None,
    command: Annotated[str | None, typer.Option("--command", help="How the client starts checkrein (stdio). Default: this checkrein's absolute path, or `python -m checkrein`.")] = None,
    token_env: Annotated[str, typer.Option("--token-env", help="Variable holding the gateway's bearer token (http).")] = "CHECKREIN_TOKEN",
    write: Annotated[bool, typer.Option("--write", help="Edit the client's own file instead of printing: add checkrein, remove the servers it fronts, keep a backup.")] = False,
    file: Annotated[Path | None, typer.Option("--file", help="The client file --write edits. Default: ./.mcp.json (Claude), $CODEX_HOME/config.toml or ~/.codex/config.toml (Codex).")] = None,
) -> None:
    """Print the one `checkrein` entry that makes a client use checkrein instead of the raw servers,
    or (--write) put it in the client's own file."""
    try:
        if write:
            _emit_write(client, config, file, transport=transport.value, url=url, command=command, token_env=token_env)
            return
        text = emit_client_config(client.value, config=str(config), transport=transport.value, url=url, command=command, token_env=token_env)
    except ConfigError as exc:
        raise _fail(explained(exc)) from None
    sys.stdout.write(text)
    if client is ClientChoice.claude:
        names = ", ".join(s.name for s in load_config(config, unset="keep").servers) or "(none)"
        _err(f"checkrein in front of: {names}. Remove those servers' own entries from .mcp.json (or use --write).")


def _emit_write(
    client: ClientChoice, config: Path, file: Path | None, *, transport: EmitTransport, url: str | None,
    command: str | None, token_env: str,
) -> None:
    if client is ClientChoice.harbor:
        raise ConfigError("--write edits Claude's and Codex's files; for Harbor, paste the printed snippet into task.toml")
    cfg = load_config(config, unset="keep")  # the variables need to be set where the client runs checkrein
    entry = checkrein_entry(config_path=str(config.resolve()), transport=transport, url=url, command=command, token_env=token_env)
    fmt: ClientFormat = "claude" if client is ClientChoice.claude else "codex"
    target = file or default_client_file(fmt)
    done = switch_client_file(fmt, target, entry, cfg.as_written()["servers"])
    _err(f"wrote {done.path}: added `checkrein` ({' '.join([entry.command or '', *entry.args]) if entry.command else entry.url})")
    if done.removed:
        _err(f"removed {', '.join(done.removed)}: they are served behind checkrein now")
    if done.kept:
        _err(f"kept {', '.join(done.kept)}: checkrein does not front them (the client still reaches them directly)")
    if done.backup is not None:
        _err(f"the file as it was: {done.backup}")
    for note in done.notes:
        _err(f"note: {note}")


# -- lint ----------------------------------------------------------------------------------------


def _print_lint(result: LintResult) -> None:
    for f in result.findings:
        sys.stdout.write(f"{f.location}: {f.severity} [{f.rule}] {f.message}\n    fix: {f.fix}\n")
    kind = result.kind or "unknown"
    sys.stdout.write(f"{result.file} ({kind}): {result.errors} error(s), {result.warnings} warning(s)\n")


def lint(
    files: Annotated[list[Path] | None, typer.Argument(help="Config files to lint.")] = None,
    kind: Annotated[LintKind | None, typer.Option("--format", "-f", help="Kind of file (detected if omitted).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Warnings fail too.")] = False,
    harbor_version: Annotated[str | None, typer.Option("--harbor-version", help="Harbor version a task targets (e.g. 0.24).")] = None,
    rules: Annotated[bool, typer.Option("--rules", help="List the rules and exit.")] = False,
) -> None:
    """Find mistakes in Claude, Codex, Harbor (task and judge) and checkrein configs.

    Each finding has a rule id, severity, location (file:line) and a fix."""
    if rules:
        for rule in RULES.values():
            sys.stdout.write(f"{rule.id:<34} {rule.severity:<8} {rule.title}\n")
        return
    if not files:
        raise _fail("give at least one FILE to lint")
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        raise _fail(f"no such file: {', '.join(missing)}")
    kind_value: ConfigKind | None = kind.value if kind else None
    results = [lint_file(f, kind=kind_value, harbor_version=harbor_version) for f in files]
    if as_json:
        payload = [
            {"file": r.file, "kind": r.kind, "errors": r.errors, "warnings": r.warnings, "findings": [f.to_dict() for f in r.findings]}
            for r in results
        ]
        sys.stdout.write(json.dumps(payload if len(payload) > 1 else payload[0], indent=2) + "\n")
    else:
        for r in results:
            _print_lint(r)
    failed = any(r.errors or (strict and r.warnings) for r in results)
    raise typer.Exit(1 if failed else 0)


# -- skills --------------------------------------------------------------------------------------


def _print_skills(check: SkillsCheck) -> None:
    for f in check.findings:
        sys.stdout.write(f"{check.root}/{f.file}: {f.kind} [{f.rule}] {f.message}\n")
    for s in check.skills:
        status = "ok" if s.ok else "INVALID"
        sys.stdout.write(f"{s.name} ({s.path}): {status}, {s.files} file(s), {s.digest}\n")
        for f in s.findings:
            where = f"{f.file}:{f.line}" if f.line else f.file
            sys.stdout.write(f"    {where}: {f.kind} [{f.rule}] {f.message}\n")


def skills_check(
    directory: Annotated[Path, typer.Argument(help="A skill, or a root whose subdirectories are skills.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Check skills: structure, a canonical SHA-256 digest each, and a review scan of what they ask.

    The review scan says what to read; it is not a security control."""
    if not directory.exists():
        raise _fail(f"{directory} does not exist")
    check = check_skills(directory)
    if as_json:
        sys.stdout.write(json.dumps(check.to_dict(), indent=2) + "\n")
    else:
        _print_skills(check)
    raise typer.Exit(0 if check.ok else 1)


# -- ledger --------------------------------------------------------------------------------------


async def _snapshots(config: Config, timeout_s: float) -> list[ServerSnapshot]:
    from checkrein.upstream import UpstreamPool  # the CLI is the edge that starts processes

    snaps: list[ServerSnapshot] = []
    with anyio.fail_after(timeout_s):
        async with UpstreamPool(config.servers, connect_timeout_s=timeout_s) as pool:
            infos = await pool.start_all()
            for name, info in infos.items():
                tools = tuple(await pool[name].tools()) if info.state == "ready" else ()
                snaps.append(ServerSnapshot(
                    name=name, state=info.state, server_name=info.server_name, server_version=info.server_version,
                    protocol_version=info.protocol_version, tools=tools, error=info.error,
                ))
    return snaps


def _ledger_run(
    ctx: typer.Context,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="The checkrein config of the run.")] = None,
    skills: Annotated[list[Path] | None, typer.Option("--skills", help="A skills directory (repeatable).")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the ledger here (atomically).")] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to start the upstreams.")] = 60.0,
) -> None:
    """Pin what an evaluated agent could use: upstreams, tools, skills, policy, budgets, network."""
    if ctx.invoked_subcommand is not None:
        return
    if config is None:
        raise _fail("give --config FILE (or use `checkrein ledger diff A B`)")
    cfg = _load(config)
    skill_digests: dict[str, str] = {}
    for directory in skills or []:
        check = check_skills(directory)
        if not check.ok:
            raise _fail(f"skills in {directory} have structure errors; run `checkrein skills check {directory}`", 1)
        for name, value in check.digests().items():
            if name in skill_digests and skill_digests[name] != value:
                raise _fail(f"two different skills are named {name!r}", 1)
            skill_digests[name] = value
    try:
        pins = read_lock(cfg.lock_path)
        snaps = anyio.run(_snapshots, cfg, timeout)
    except TimeoutError:
        raise _fail(f"upstreams did not start within {timeout:g}s", 1) from None
    except CheckreinError as exc:
        raise _fail(f"{exc.message} ({exc.code})", 1) from None
    ledger = build_ledger(cfg, snaps, skill_digests, pins=pins, software=f"checkrein {__version__}")
    data = render_ledger(ledger)
    if out is None:
        sys.stdout.write(data.decode("utf-8"))
    else:
        write_atomic(out, data.decode("utf-8"))
        _err(f"wrote {out} ({ledger['digest']})")
    down = [s for s in snaps if s.state != "ready"]
    for s in down:
        _err(f"server {s.name} is {s.state}: {s.error or 'no reason given'}")
    raise typer.Exit(1 if down else 0)


def _read_ledger(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _fail(f"cannot read ledger {path}: {exc}") from None
    if not isinstance(value, dict) or "ledger_version" not in value:
        raise _fail(f"{path} is not a checkrein ledger")
    return value


def ledger_diff(
    a: Annotated[Path, typer.Argument(help="Ledger of run A.")],
    b: Annotated[Path, typer.Argument(help="Ledger of run B.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Explain every difference between two runs' ledgers (exit 1 if they differ)."""
    diffs = diff_ledgers(_read_ledger(a), _read_ledger(b))
    if as_json:
        sys.stdout.write(json.dumps([{"path": d.path, "a": d.before, "b": d.after, "explanation": d.explanation} for d in diffs], indent=2) + "\n")
    elif diffs:
        sys.stdout.write(f"{len(diffs)} difference(s) between {a} (A) and {b} (B):\n")
        for d in diffs:
            sys.stdout.write(f"  - {d.explanation}\n")
    else:
        sys.stdout.write("same conditions: the ledgers pin the same tools, skills, policy, budgets and network\n")
    raise typer.Exit(1 if diffs else 0)


def register(app: typer.Typer) -> None:
    """Add this module's commands to `app`."""
    app.command("import", epilog=EXIT_CODES)(import_config)
    app.command("emit", epilog=EXIT_CODES)(emit)
    app.command("lint", epilog=EXIT_CODES)(lint)
    skills_app = typer.Typer(rich_markup_mode=None, help="Agent skills: structure, digests, review scan.", no_args_is_help=True)
    skills_app.command("check", epilog=EXIT_CODES)(skills_check)
    app.add_typer(skills_app, name="skills")
    ledger_app = typer.Typer(rich_markup_mode=None, help="The fairness ledger of an evaluation run.", invoke_without_command=True)
    ledger_app.callback(epilog=EXIT_CODES)(_ledger_run)
    ledger_app.command("diff", epilog=EXIT_CODES)(ledger_diff)
    app.add_typer(ledger_app, name="ledger")


