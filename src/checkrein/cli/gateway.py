"""`checkrein serve`, `checkrein tools`, `checkrein pin`: the gateway commands.

Exit codes: 0 success; 1 failure (pin not confirmed, the gateway stopped on an error);
2 usage or config error (the message names file, line and key).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import signal
import sys
import threading
import warnings
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import anyio
import anyio.abc
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from checkrein._switches import switch, switch_problems
from checkrein.audit.record import LifecycleRecord
from checkrein.catalog import PinPlan, plan_json, plan_pin, read_lock, render_plan, write_lock
from checkrein.config import CREDENTIALS, LAUNCH, Config, load_config
from checkrein.config.env import Location
from checkrein.config.problems import did_you_mean, explained
from checkrein.errors import CheckreinError, ConfigError

if TYPE_CHECKING:  # the gate, catalog and policy are imported where used: `serve` starts the servers first
    from checkrein.audit.record import AuditTrail
    from checkrein.catalog import PinPlan
    from checkrein.gate.pipeline import Gate
    from checkrein.state import SharedState
    from checkrein.upstream.spawn import EarlyProcesses

__all__ = ["register"]

EXIT_CODES = "Exit codes: 0 ok, 1 failure (tools: also when every server failed to start), 2 usage or config error."
PIN_EXIT_CODES = "Exit codes: 0 written or up to date, 1 not confirmed, failed, or (--check) not up to date, 2 usage or config error."

log = logging.getLogger("checkrein")


class Transport(StrEnum):
    stdio = "stdio"
    http = "http"


def event_loop_options() -> dict[str, Any]:
    """anyio's asyncio backend options for `serve`: uvloop where it is installed (the default
    dependency on Linux and macOS; it cut the gateway's CPU per relayed call, docs/performance.md),
    the stdlib loop with ``CHECKREIN_EVENT_LOOP=asyncio`` or where uvloop is missing."""
    if switch("CHECKREIN_EVENT_LOOP") == "asyncio":
        return {"use_uvloop": False}
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return {"use_uvloop": False}
    return {"use_uvloop": True}


def _err(message: str) -> None:
    Console(stderr=True, highlight=False, soft_wrap=True).print(message, markup=False)


def _unused(transport: Transport | None) -> tuple[Location, ...]:
    """What a command does not read: tokens, unless it serves HTTP."""
    return () if transport is Transport.http else CREDENTIALS


def _load(path: Path, transport: Transport | None = None) -> Config:
    try:
        return load_config(path, unused=_unused(transport))
    except ConfigError as exc:
        _err(f"checkrein: {explained(exc)}")
        raise typer.Exit(2) from None


def _logging(level: str) -> None:
    # stdout belongs to the protocol in stdio mode: every log line goes to stderr.
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def _report_start(gate: Gate) -> None:
    from checkrein.policy.governance import unmatched_patterns

    for name, why in sorted(gate.failures.items()):
        _err(f"checkrein: server {name!r} failed to start (serving the others): {why}")
    for s in gate.catalog.skipped:
        _err(f"checkrein: not exposing {s.server}/{s.tool}: {s.reason}")
    for q in gate.catalog.quarantined:
        _err(f"checkrein: quarantined {q.exposed}: {q.reason} (review with `checkrein pin`)")
    if gate.lock_written:
        _err(f"checkrein: wrote {gate.config.lock_path} (trust on first use); commit it")
    if not gate.failures:  # a server that is down has no tools for the rules to match
        names = [e.exposed for e in gate.catalog]
        for stale in unmatched_patterns(gate.config.policy, names):
            hint = did_you_mean(stale.split(": ", 1)[-1], names)
            _err(f"checkrein: warning: policy {stale} matches no tool{hint}")


class _Shutdown:
    """Where the first SIGTERM/SIGINT lands: the gate's start while it starts, the serving task
    group once it serves. Later signals only say so: the gate is then closing its upstreams and
    writing the audit's `gateway.stop` and closing checkpoint, and dying half way (the default
    action once nothing handles the signal) would leave the log without it."""

    def __init__(self) -> None:
        self.scope: anyio.CancelScope | None = None
        self.requested = False

    def enter(self, scope: anyio.CancelScope | None) -> None:
        self.scope = scope
        if scope is not None and self.requested:
            scope.cancel()

    def request(self) -> bool:
        """Cancel the current scope; ``False`` when a shutdown was already under way."""
        first = not self.requested
        self.requested = True
        if self.scope is not None:
            self.scope.cancel()
        return first


async def _stop_on_signal(shutdown: _Shutdown) -> None:
    """SIGTERM or SIGINT ends serving gracefully, and keeps being handled until the audit is closed."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            if shutdown.request():
                _err(f"checkrein: received signal {signum}; shutting down")
            else:
                _err(f"checkrein: received signal {signum}; still closing the servers and the audit log")


def _ignore_stop_signals() -> None:
    """From the moment HTTP serving ends until the gate has closed (upstreams stopped, the audit's
    closing checkpoint written), SIGTERM and SIGINT are ignored: uvicorn's handlers are gone by
    then, and a default SIGTERM would leave the audit log without its closing checkpoint. (Over
    stdio `_stop_on_signal` keeps handling them instead.)"""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _report_audit(config: Config) -> None:
    if config.audit_dir is None:
        where = f" in {config.source}" if config.source else ""
        _err(f"checkrein: warning: the audit is OFF ([audit] enabled = false{where}): no call is recorded")
    else:
        _err(f"checkrein: audit log in {config.audit_dir} (check it with `checkrein audit verify {config.audit_dir}`)")
    if config.state.url is not None and config.approval.state_key is None:
        _err("checkrein: note: [state] is shared but [approval] state_key is not set: an input_required approval "
             "answered on another replica is asked again")


async def _retry_failed_starts(gate: Gate, interval_s: float = 10.0) -> None:
    """Servers that failed to start are tried again every ``interval_s`` until they come up."""
    while gate.failures:
        await anyio.sleep(interval_s)
        for name in await gate.retry_failed_starts():
            _err(f"checkrein: server {name!r} is up now; its tools are served (new ones quarantined until `pin`)")


async def _serve(config: Config, transport: Transport, host: str, port: int, ui: bool = False,
                 metrics_port: int | None = None) -> None:
    # The stdio servers start first and import their own code while we import ours (the SDK,
    # the policy engine); each connection adopts its process. Whatever nobody adopted (the
    # start failed before it got there) is killed on the way out.
    early = await _start_early(config)
    try:
        await _serve_gate(config, transport, host, port, ui, early, metrics_port)
    finally:
        if early is not None:
            await early.aclose()


async def _serve_gate(
    config: Config, transport: Transport, host: str, port: int, ui: bool, early: EarlyProcesses | None,
    metrics_port: int | None = None,
) -> None:
    from mcp.shared.exceptions import MCPDeprecationWarning

    # checkrein speaks both protocol eras on purpose; the SDK's notes on what 2026-07-28 removed
    # (logging/setLevel, resources/subscribe) are not news for the operator's terminal.
    warnings.simplefilter("ignore", MCPDeprecationWarning)
    from checkrein.frontend import Authenticator
    from checkrein.frontend.auth import LOOPBACK_HOSTS

    if transport is Transport.http:
        auth = Authenticator.from_config(config)  # an unset token variable is a config error, before any spawn
        if host not in LOOPBACK_HOSTS and not auth.required:
            raise ConfigError(
                f"refusing to serve on {host} without a token: set [gateway] token (or env CHECKREIN_TOKEN), "
                "or bind 127.0.0.1",
                file=config.source,
                key="gateway.token",
            )
    shared = _shared_state(config)  # one Redis client for budgets, grants and HTTP sessions
    try:
        shutdown = _Shutdown()
        async with anyio.create_task_group() as guard:
            if transport is Transport.stdio:  # the HTTP frontend stops uvicorn gracefully itself
                guard.start_soon(_stop_on_signal, shutdown)
            gate = _build_gate(config, state=shared, early=early)
            # One scope around the gate's whole life: its pool's task groups must be entered and left
            # inside the same scopes. Only a signal during the start cancels it.
            with anyio.CancelScope() as life:
                shutdown.enter(life)
                try:
                    await gate.__aenter__()  # cancelled or failed: it closes what it started, and re-raises
                    shutdown.enter(None)
                    async with anyio.create_task_group() as tg:
                        shutdown.enter(tg.cancel_scope)
                        await _serve_started(gate, config, transport, host, port, tg, ui, metrics_port, shared)
                        tg.cancel_scope.cancel()
                finally:
                    shutdown.enter(None)
                    if transport is Transport.http:
                        _ignore_stop_signals()
                    # Also after a failed or interrupted start: the audit closes with its checkpoint.
                    # Shielded only then: no scope may sit between the pool's task groups and their exit.
                    if life.cancel_called:
                        with anyio.CancelScope(shield=True):
                            await gate.aclose()
                    else:
                        await gate.aclose()
            guard.cancel_scope.cancel()
    finally:
        if shared is not None:
            with anyio.CancelScope(shield=True):
                await shared.aclose()


async def _start_early(config: Config) -> EarlyProcesses | None:
    """Start the stdio servers before the gate's imports, when their launch fields are resolved
    (an unset variable is reported by `build_gate` instead, naming it)."""
    from checkrein.upstream.spawn import spawn_early  # light: the stdlib and anyio

    try:
        config.require_resolved(LAUNCH, "starting the servers")
    except ConfigError:
        return None
    return await spawn_early(config.servers)


def _build_gate(config: Config, **parts: Any) -> Gate:
    """`build_gate`, imported here: the gate pulls in the MCP SDK, the policy engine and sqlglot."""
    from checkrein.gate.factory import build_gate

    return build_gate(config, **parts)


def _null_audit() -> AuditTrail:
    from checkrein.gate.factory import NullAuditTrail

    return NullAuditTrail()


async def _serve_started(
    gate: Gate, config: Config, transport: Transport, host: str, port: int, tg: anyio.abc.TaskGroup, ui: bool = False,
    metrics_port: int | None = None, shared: SharedState | None = None,
) -> None:
    from checkrein.frontend import serve_http, serve_stdio
    from checkrein.gate.reload import ConfigWatcher

    _report_start(gate)
    _report_audit(config)
    if gate.failures:
        tg.start_soon(_retry_failed_starts, gate)
    if metrics_port is not None:
        await _start_metrics(tg, gate, host, metrics_port)
    if config.source:
        # Policy edits apply live (SIGHUP forces a re-read); other changes need a restart.
        load = functools.partial(load_config, unused=_unused(transport))
        await tg.start(ConfigWatcher(config.source, gate.apply_config, load=load).run)
    if transport is Transport.stdio:
        if sys.stderr.isatty():  # a person ran it: say what it is waiting for (a client says nothing)
            _err(
                f"checkrein: serving {len(gate.catalog.ok_tools)} tool(s) from {len(gate.ready_servers())} server(s) "
                "over stdio; waiting for an MCP client on stdin (Ctrl-C stops)"
            )
        await serve_stdio(gate)
        return

    ui_dir = getattr(gate.audit, "directory", None) if ui else None
    if ui and not isinstance(ui_dir, Path):
        raise ConfigError("--ui shows the audit trail, and this config writes none: set [audit] dir",
                          file=config.source, key="audit.dir")

    async def ready(bound: int) -> None:
        shown = f"[{host}]" if ":" in host else host
        _err(f"checkrein: serving Streamable HTTP on http://{shown}:{bound}/mcp")
        if ui_dir is not None:
            _err(f"checkrein: audit web view on http://{shown}:{bound}/ui/ (same token as /mcp)")

    await serve_http(gate, host=host, port=port, on_ready=ready, ui_dir=ui_dir, state=shared)


def _shared_state(config: Config) -> SharedState | None:
    """`[state]` (Redis) for budgets, grants and HTTP sessions: None when all stay in process."""
    if config.state.url is None:
        return None
    from checkrein.state import build_state

    return build_state(config)


async def _start_metrics(tg: anyio.abc.TaskGroup, gate: Gate, host: str, port: int) -> None:
    from checkrein.frontend.metrics_port import serve_metrics

    started = anyio.Event()

    async def ready(bound: int) -> None:
        shown = f"[{host}]" if ":" in host else host
        _err(f"checkrein: metrics on http://{shown}:{bound}/metrics")
        started.set()

    tg.start_soon(lambda: serve_metrics(gate, host=host, port=port, on_ready=ready))
    await started.wait()


def serve(
    config: Annotated[Path, typer.Option("--config", "-c", help="checkrein.toml to serve.")],
    transport: Annotated[Transport, typer.Option("--transport", "-t", help="stdio or http.")] = Transport.stdio,
    host: Annotated[str, typer.Option("--host", help="HTTP bind address (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="HTTP port (0 picks a free one).")] = 8765,
    log_level: Annotated[str, typer.Option("--log-level", help="debug, info, warning or error (to stderr).")] = "warning",
    ui: Annotated[bool, typer.Option("--ui", help="HTTP only: also serve the audit's web view on /ui/ (read-only, "
                                     "same token and Origin rules as /mcp).")] = False,
    metrics_port: Annotated[int | None, typer.Option(
        "--metrics-port", help="Also serve GET /metrics and /stats on this port (0 picks one); same token rules.")] = None,
) -> None:
    """Serve every configured server's tools as ONE MCP server (stdio, or Streamable HTTP on /mcp).

    Edits to [policy] apply while running (the file is polled; SIGHUP forces a re-read); other
    changes are refused with a message until a restart.
    """
    if ui and transport is not Transport.http:
        _err("checkrein: --ui needs --transport http (or run `checkrein ui --config FILE` beside a stdio gateway)")
        raise typer.Exit(2)
    problems = switch_problems()
    for problem in problems:
        _err(f"checkrein: {problem}")
    if problems:
        raise typer.Exit(2)
    cfg = _load(config, transport)
    _logging(log_level)
    try:
        anyio.run(_serve, cfg, transport, host, port, ui, metrics_port, backend_options=event_loop_options())
    except ConfigError as exc:
        _err(f"checkrein: {explained(exc)}")
        raise typer.Exit(2) from None
    except CheckreinError as exc:
        _err(f"checkrein: {exc.message} ({exc.code})")
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        raise typer.Exit(0) from None
    _exit_now(0)


def _exit_now(code: int) -> None:
    """Leave without interpreter finalization once everything is closed and flushed.

    By now the gate has closed its upstreams and the audit trail; tearing down every imported
    module still took seconds on a busy machine, and an MCP client waits for the process to exit.
    """
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def tools(
    config: Annotated[Path, typer.Option("--config", "-c", help="checkrein.toml.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list for scripts.")] = False,
) -> None:
    """Start the servers and print the merged catalog (exposed name, server, tool, risk, digest,
    status, and why a tool is quarantined).

    Does not write checkrein.lock.
    """
    cfg = _load(config)
    _logging("error")
    try:
        rows, gate = anyio.run(_catalog_rows_no_tofu, cfg)
    except CheckreinError as exc:
        _err(f"checkrein: {exc.message} ({exc.code})")
        raise typer.Exit(2 if isinstance(exc, ConfigError) else 1) from None
    if as_json:
        typer.echo(json.dumps(rows, indent=2, ensure_ascii=False))
    else:
        table = Table(title=f"{len(rows)} tool(s)")
        for col in ("name", "server", "tool", "risk", "digest", "status"):
            table.add_column(col)
        for r in rows:
            status = r["status"] if r["status"] == "ok" else f"[red]{r['status']}[/red]"
            table.add_row(escape(r["name"]), escape(r["server"]), escape(r["tool"]), r["risk"], r["digest"][:19], status)
        Console().print(table)
    _report_start(gate)
    if gate.failures and not gate.catalog.servers:
        _err(f"checkrein: every server failed to start ({len(gate.failures)} of {len(gate.failures)}); no tools to list")
        raise typer.Exit(1)


async def _catalog_rows_no_tofu(config: Config) -> tuple[list[dict[str, Any]], Gate]:
    gate = _build_gate(config, audit=_null_audit())  # listing serves no calls: nothing to audit
    gate.trust_on_first_use = False
    return await _catalog_rows_of(gate)


async def _catalog_rows_of(gate: Gate) -> tuple[list[dict[str, Any]], Gate]:
    async with gate:
        rows: list[dict[str, Any]] = []
        for e in gate.catalog:
            row: dict[str, Any] = {
                "name": e.exposed,
                "server": e.server,
                "tool": e.tool,
                "risk": gate.policy.risk_of(e.exposed),
                "digest": e.digest,
                "status": e.status,
            }
            if e.status != "ok":
                row["reason"] = e.reason
            rows.append(row)
    return rows, gate


def pin(
    config: Annotated[Path, typer.Option("--config", "-c", help="checkrein.toml.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Write without asking (for scripts); never accepts a flagged tool.")] = False,
    check: Annotated[bool, typer.Option("--check", help="Write nothing; exit 1 when any tool is unpinned, changed, removed or held back (for CI).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as one JSON object (prompts go to stderr).")] = False,
    diff: Annotated[bool, typer.Option("--diff", help="Also print a unified diff of every new, changed and removed tool.")] = False,
    accept: Annotated[
        list[str] | None,
        typer.Option("--accept", metavar="TOOL", help="Pin this flagged tool anyway (exposed name; repeatable)."),
    ] = None,
) -> None:
    """Review tool definitions against checkrein.lock: a summary first (tools, servers, what is new,
    changed, removed, and what the tool-definition scan held back and why), then record the
    current digests (after confirmation, or with --yes). A flagged tool is pinned only when
    accepted by name (--accept TOOL, or by answering yes on a terminal).
    """

    cfg = _load(config)
    _logging("error")
    try:
        gate = _build_gate(cfg, audit=_null_audit())
        gate.trust_on_first_use = False
        _, gate = anyio.run(_catalog_rows_of, gate)
        lock = read_lock(cfg.lock_path)
    except CheckreinError as exc:
        _err(f"checkrein: {exc.message} ({exc.code})")
        raise typer.Exit(2 if isinstance(exc, ConfigError) else 1) from None
    for name, why in sorted(gate.failures.items()):
        _err(f"checkrein: server {name!r} failed to start; its pins are kept as they are: {why}")
    accepted = _accepted_names(gate, accept or [], interactive=not (yes or check or as_json) and sys.stdin.isatty())
    plan = plan_pin(gate.catalog, lock, accepted)
    if check or (lock is not None and not plan.has_changes):
        _show_plan(plan, cfg, as_json, diff, written=False)
        if not check and not as_json:
            typer.echo(f"{cfg.lock_path} is up to date ({len(plan.new_lock)} tool(s))")
        raise typer.Exit(1 if check and (plan.needs_review or lock is None) else 0)
    if not as_json:
        _show_plan(plan, cfg, False, diff, written=False)
    if not yes and not typer.confirm(f"Write {cfg.lock_path}?", default=False, err=as_json):
        _err("checkrein: not written")
        if as_json:
            _show_plan(plan, cfg, True, diff, written=False)
        raise typer.Exit(1)
    try:
        write_lock(cfg.lock_path, plan.new_lock)
        anyio.run(_audit_pin, cfg, plan)
    except CheckreinError as exc:
        _err(f"checkrein: {exc.message}")
        raise typer.Exit(1) from None
    if as_json:
        _show_plan(plan, cfg, True, diff, written=True)
    else:
        typer.echo(f"wrote {cfg.lock_path} ({len(plan.new_lock)} tool(s)); a running gateway picks it up on its next tools/list or call")


def _accepted_names(gate: Gate, accept: list[str], *, interactive: bool) -> set[str]:
    """The flagged tools to pin: every ``--accept`` name (each must be a listed tool; a usage
    error with close matches otherwise), plus those accepted at the terminal prompt."""
    import difflib

    entries = gate.catalog.entries
    for name in accept:
        if name not in entries:
            close = difflib.get_close_matches(name, list(entries), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            _err(f"checkrein: --accept {name}: no such tool{hint}")
            raise typer.Exit(2)
        if not entries[name].flagged:
            _err(f"checkrein: --accept {name}: the tool is not flagged; nothing to accept")
    chosen = {n for n in accept if entries[n].flagged}
    if interactive:
        for e in gate.catalog.flagged:
            if e.exposed not in chosen:
                _err(f"checkrein: {e.exposed} was flagged: {e.flagged}")
                if typer.confirm(f"Pin {e.exposed} anyway?", default=False, err=True):
                    chosen.add(e.exposed)
    return chosen


def _show_plan(plan: PinPlan, cfg: Config, as_json: bool, details: bool, *, written: bool) -> None:
    if as_json:
        typer.echo(json.dumps(plan_json(plan, str(cfg.lock_path), written=written), indent=2, ensure_ascii=False))
    else:
        typer.echo(render_plan(plan, cfg.lock_path.name, details=details), nl=False)


async def _audit_pin(config: Config, plan: PinPlan) -> None:
    """Record the pin change in the audit trail, when there is one (`pin.change`)."""
    from checkrein.gate.factory import default_audit

    if not config.audit.enabled:
        return
    trail = default_audit(config)
    try:
        await trail.record_lifecycle(
            LifecycleRecord(
                "pin.change",
                {
                    "lock": str(config.lock_path),
                    "added": list(plan.added),
                    "changed": list(plan.changed),
                    "removed": list(plan.removed),
                    "digests": {n: plan.new_lock[n].digest for n in (*plan.added, *plan.changed)},
                    "accepted": dict(plan.accepted),
                    "held": dict(plan.held),
                },
            )
        )
    finally:
        await trail.aclose()


def register(app: typer.Typer) -> None:
    """Add this module's commands to `app`."""
    app.command("serve", epilog=EXIT_CODES)(serve)
    app.command("tools", epilog=EXIT_CODES)(tools)
    app.command("pin", epilog=PIN_EXIT_CODES)(pin)
