"""`checkrein` commands: agent (`run`), traces (`trace show`), knowledge base (`kb seed`)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import anyio
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from checkrein.config import CREDENTIALS, load_config
from checkrein.errors import ConfigError

if TYPE_CHECKING:
    from checkrein.agent.trace import TraceSummary

# The agent's modules (openai, the MCP client) are imported inside the commands: `checkrein
# serve` shares this CLI and must not pay for them at every gateway start.

trace_app = typer.Typer(rich_markup_mode=None, help="Agent run traces.", no_args_is_help=True)
kb_app = typer.Typer(rich_markup_mode=None, help="The bundled knowledge base.", no_args_is_help=True)

_err = Console(stderr=True)


def run(
    query: Annotated[str, typer.Option("--query", "-q", help="The question or task for the agent.")],
    config: Annotated[Path | None, typer.Option("--config", "-c", help="Gateway config: runs `checkrein serve --config FILE`.")] = None,
    server: Annotated[str | None, typer.Option("--server", help="Any stdio MCP server command instead of the gateway.")] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model name (default: CHECKREIN_MODEL or the provider's).")] = None,
    script: Annotated[Path | None, typer.Option("--script", help="Scripted model: replay this JSON/TOML/YAML script offline.")] = None,
    max_steps: Annotated[int, typer.Option("--max-steps", min=1, max=200, help="Most model calls in one run.")] = 10,
    trace_dir: Annotated[Path | None, typer.Option("--trace-dir", help="Where to write the trace (default: beside the audit dir).")] = None,
    compress_at: Annotated[int, typer.Option("--compress-at", min=256, help="Summarize older turns above this many tokens.")] = 16_000,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="Do not print progress to stderr.")] = False,
) -> None:
    """Run the agent on one query through the gateway (or any MCP server) and print its answer."""
    from checkrein.agent.loop import RunSettings
    from checkrein.agent.model import AgentError
    from checkrein.agent.runner import choose_model, gateway_target, run_query, server_target, trace_dir_for

    if (config is None) == (server is None):
        _err.print("[red]give exactly one of --config FILE or --server COMMAND[/red]")
        raise typer.Exit(2)
    try:
        if config is not None:
            cfg = load_config(config, unused=CREDENTIALS)  # the gateway it starts serves stdio
            target = gateway_target(config)
            directory = trace_dir or trace_dir_for(cfg)
        else:
            target = server_target(server or "")
            directory = trace_dir or Path.cwd() / ".checkrein" / "traces"
        chosen = choose_model(model, script)
    except (ConfigError, AgentError, ValueError) as exc:
        _err.print(f"[red]{escape(str(exc))}[/red]")
        raise typer.Exit(2) from None
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _err.print(f"[red]{escape(f'cannot write traces in {directory}: {exc.strerror or exc}')}[/red]; "
                   "use --trace-dir DIR")
        raise typer.Exit(2) from None
    settings = RunSettings(max_steps=max_steps, compress_at_tokens=compress_at)
    observer = _warnings_only if quiet or as_json else _progress
    outcome = anyio.run(lambda: run_query(target, chosen, query, directory, settings, observer=observer))
    result = outcome.result
    if as_json:
        typer.echo(json.dumps({"status": result.status, "answer": result.answer, "error": result.error,
                               "trace_id": result.trace_id, "trace": str(outcome.trace_path), "steps": result.steps,
                               "tool_calls": [asdict(r) for r in result.tool_calls]}, ensure_ascii=False))
    else:
        if result.answer:
            typer.echo(result.answer)
        if result.error:
            _err.print(f"[red]error:[/red] {escape(result.error)}")
        _err.print(f"[dim]{result.status} after {result.steps} step(s), {len(result.tool_calls)} tool call(s); "
                   f"trace {escape(str(outcome.trace_path))}[/dim]", soft_wrap=True)
    raise typer.Exit(0 if result.status == "answered" else 1)


_RUN_ENDING = frozenset({"connect", "tools_list", "model"})
"""Errors that end the run: the final ``error:`` line says them, so progress does not repeat them."""


def _warnings_only(event: dict[str, Any]) -> None:
    """What even ``--quiet`` and ``--json`` say on stderr: a run with no tools is rarely meant."""
    if event.get("type") == "tools_list" and not event.get("count"):
        _err.print("[yellow]the server shows no tools: check the config's servers and their messages above[/yellow]")


def _progress(event: dict[str, Any]) -> None:
    """One stderr line per step a user cares about while the run goes on."""
    kind = event.get("type")
    _warnings_only(event)
    if kind == "tools_list" and event.get("count"):
        _err.print(f"[dim]{event.get('count')} tool(s) available[/dim]")
    elif kind == "llm_response" and event.get("tool_calls"):
        names = escape(", ".join(str(c.get("name")) for c in event["tool_calls"]))
        _err.print(f"[dim]step {event.get('step')}: model calls {names}[/dim]")
    elif kind == "tool_call":
        status = str(event.get("status"))
        colour = {"ok": "green", "denied": "yellow"}.get(status, "red")
        _err.print(f"  [{colour}]{escape(status)}[/{colour}] {escape(str(event.get('tool')))} ({event.get('duration_ms')} ms)")
    elif kind == "compression":
        what = "compressed" if event.get("ok") else escape(f"compression failed: {event.get('error')}")
        _err.print(f"[dim]context {what} ({event.get('tokens_before')} -> {event.get('tokens_after')} tokens)[/dim]")
    elif kind == "error" and event.get("where") not in _RUN_ENDING:
        line = escape(f"error ({event.get('where')}): {event.get('error')}")
        _err.print(f"[red]{line}[/red]")


def _summary_table(path: Path, s: TraceSummary) -> Table:
    table = Table(title=f"run {s.trace_id or '?'}", show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value")
    rate = s.tool_success_rate
    rows = [
        ("trace", str(path)),
        ("status", s.status),
        ("model", s.model),
        ("query", s.query[:200]),
        ("model calls", f"{s.model_calls} ({s.model_retries} retries)"),
        ("tokens", f"{s.total_tokens} ({s.prompt_tokens} prompt, {s.completion_tokens} completion)"),
        ("tool calls", f"{s.tool_calls}: {s.tool_ok} ok, {s.tool_errors} failed, {s.denials} denied"),
        ("tool success rate", "n/a" if rate is None else f"{rate:.0%}"),
        ("denials", str(s.denials) + (f" ({', '.join(s.denied)})" if s.denied else "")),
        ("approvals", str(s.approvals)),
        ("compressions", f"{s.compressions} ok, {s.compression_failures} failed"),
        ("errors", str(s.errors)),
        ("time", f"{s.duration_s:.2f} s"),
        ("answer", s.answer[:500]),
    ]
    for k, v in rows:
        table.add_row(k, v)
    return table


@trace_app.command("show")
def trace_show(
    file: Annotated[Path, typer.Argument(help="A trace JSONL file written by `checkrein run`.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Print a run's summary: model calls, tokens, tool success rate, denials, approvals, time."""
    from checkrein.agent.trace import read_trace, summarize_trace

    try:
        events = read_trace(file)
        if not any(e.get("type") == "run_start" for e in events):
            raise ValueError("not a run trace (no run_start event); traces are written by `checkrein run`")
        summary = summarize_trace(events)
    except (OSError, ValueError) as exc:
        _err.print(f"[red]{escape(f'cannot read trace {file}: {exc}')}[/red]")
        raise typer.Exit(2) from None
    if as_json:
        data = asdict(summary)
        data["tool_success_rate"] = summary.tool_success_rate
        typer.echo(json.dumps(data, ensure_ascii=False))
        return
    Console().print(_summary_table(file, summary))


@kb_app.command("seed")
def kb_seed(
    db: Annotated[Path | None, typer.Option("--db", help="SQLite file (default: $CHECKREIN_KB_PATH or the state dir).")] = None,
) -> None:
    """Load the seed documents into the knowledge base (idempotent)."""
    from checkrein.servers.knowledge_seed import seed_knowledge_base
    from checkrein.servers.knowledge_store import KnowledgeBaseUnavailable, kb_path

    path = db or kb_path()
    try:
        added, total = seed_knowledge_base(path)
    except (OSError, ValueError, KnowledgeBaseUnavailable) as exc:
        _err.print(f"[red]{escape(f'cannot seed {path}: {exc}')}[/red]")
        raise typer.Exit(1) from None
    typer.echo(f"added {added} document(s) to {path} ({total} in total)")


def register(app: typer.Typer) -> None:
    """Add this module's commands to `app`."""
    app.command("run")(run)
    app.add_typer(trace_app, name="trace")
    app.add_typer(kb_app, name="kb")
