"""`checkrein audit verify|query|tail|stats|keygen|reindex`.

Exit codes: 0 success / valid, 1 invalid log (`verify`), 2 usage error or unreadable input.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from checkrein.audit.query import EventFilter, audit_stats, follow_events, parse_since, query_events
from checkrein.audit.signing import generate_keypair
from checkrein.audit.sqlite_index import rebuild_index
from checkrein.audit.verify import verify_log
from checkrein.errors import CheckreinError

__all__ = ["register"]

audit_app = typer.Typer(
    name="audit",
    help="Verify, query and follow the audit trail; generate signing keys.",
    no_args_is_help=True,
)

_Dir = Annotated[Path, typer.Argument(help="Audit directory ([audit] dir).", show_default=False)]
_Json = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def _fail(message: str, code: int = 2) -> typer.Exit:
    print(f"checkrein: {message}", file=sys.stderr)
    return typer.Exit(code)


@audit_app.command("verify")
def verify_cmd(
    path: Annotated[Path, typer.Argument(help="Audit directory or one segment file.", show_default=False)],
    key: Annotated[Path | None, typer.Option("--key", help="Ed25519 public key (PEM) that signs the checkpoints.")] = None,
    live: Annotated[bool, typer.Option("--live", help="The writer may still be running: no closing checkpoint needed.")] = False,
    anchor: Annotated[list[str] | None, typer.Option(
        "--anchor", help="SEQ:HASH recorded earlier (e.g. a checkpoint's seq and hash); must still be in the log.")] = None,
    as_json: _Json = False,
) -> None:
    """Check every line, the hash chain, checkpoints, Merkle roots, signatures, segment links and
    the SQLite copy. Exit 0 valid, 1 invalid (first bad seq and why), 2 unreadable/usage."""
    anchors: list[tuple[int, str]] = []
    for a in anchor or []:
        seq_text, _, hash_text = a.partition(":")
        if not seq_text.isdigit() or len(hash_text) != 64:
            raise _fail(f"--anchor {a!r}: expected SEQ:HASH (a seq number and a 64-digit hex hash)")
        anchors.append((int(seq_text), hash_text.lower()))
    report = verify_log(path, public_key=key, live=live, anchors=tuple(anchors))
    if as_json:
        print(json.dumps(report.as_dict(), sort_keys=True))
    elif report.exit_code == 0:
        signed = f", {report.signatures_checked} signatures checked" if report.signatures_checked else ""
        print(
            f"VALID: {report.events} events in {report.segments} segment(s), {report.checkpoints} checkpoints"
            f"{signed}; log {report.log_id}"
        )
        for w in report.warnings:
            print(f"warning: {w}")
    elif report.exit_code == 1:
        print(f"INVALID: {report.problem}")
    else:
        print(f"checkrein: cannot verify: {report.problem}", file=sys.stderr)
    raise typer.Exit(report.exit_code)


def _filter(trace: str | None, session: str | None, tool: str | None, outcome: str | None, since: str | None) -> EventFilter:
    try:
        since_s = parse_since(since) if since else None
    except ValueError as exc:
        raise _fail(str(exc)) from None
    return EventFilter(trace=trace, session=session, tool=tool, outcome=outcome, since=since_s)


def _one_line(e: dict[str, Any]) -> str:
    kind = e.get("type")
    if kind == "call":
        d = e.get("decision") or {}
        rule = d.get("rule_id") if isinstance(d, dict) else ""
        return (
            f"{e.get('time')}  #{e.get('seq')}  {e.get('outcome'):<9} {e.get('exposed_name')}  rule={rule}  "
            f"{e.get('duration_ms')}ms  trace={e.get('trace_id')} session={e.get('session_id')}"
        )
    if kind == "lifecycle":
        return f"{e.get('time')}  #{e.get('seq')}  {e.get('event')}  {json.dumps(e.get('fields'), sort_keys=True)}"
    if kind == "checkpoint":
        return f"{e.get('time')}  #{e.get('seq')}  checkpoint ({e.get('reason')}) count={e.get('count')} root={str(e.get('merkle_root'))[:16]}"
    return f"{e.get('time')}  #{e.get('seq')}  {kind}"


@audit_app.command("query")
def query_cmd(
    directory: _Dir,
    trace: Annotated[str | None, typer.Option("--trace", help="Trace id.")] = None,
    session: Annotated[str | None, typer.Option("--session", help="Session id.")] = None,
    tool: Annotated[str | None, typer.Option("--tool", help="Glob over exposed or tool name, e.g. 'fs__*'.")] = None,
    outcome: Annotated[str | None, typer.Option("--outcome", help="ok, denied, error, timeout or not_found.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="RFC 3339 time or duration back (15m, 2h, 7d).")] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="Only the last N matches.")] = None,
    as_json: _Json = False,
) -> None:
    """Events matching every filter given, oldest first (JSON Lines with --json)."""
    flt = _filter(trace, session, tool, outcome, since)
    try:
        events = query_events(directory, flt, limit=limit)
    except CheckreinError as exc:
        raise _fail(exc.message) from None
    except (OSError, sqlite3.Error) as exc:
        raise _fail(f"cannot read {directory}: {exc}") from None
    for e in events:
        print(json.dumps(e, sort_keys=True, ensure_ascii=False) if as_json else _one_line(e))


@audit_app.command("tail")
def tail_cmd(
    directory: _Dir,
    lines: Annotated[int, typer.Option("--lines", "-n", help="Events shown before following.")] = 10,
    follow: Annotated[bool, typer.Option("--follow/--no-follow", help="Keep printing new events.")] = True,
    timeout: Annotated[float | None, typer.Option("--timeout", help="Stop following after this many seconds.")] = None,
    as_json: _Json = False,
) -> None:
    """The last events, then new ones as they are written (Ctrl-C to stop)."""
    try:
        for e in follow_events(directory, last=lines, follow=follow, timeout_s=timeout):
            print(json.dumps(e, sort_keys=True, ensure_ascii=False) if as_json else _one_line(e), flush=True)
    except CheckreinError as exc:
        raise _fail(exc.message) from None
    except OSError as exc:
        raise _fail(f"cannot read {directory}: {exc.strerror}") from None
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


@audit_app.command("stats")
def stats_cmd(
    directory: _Dir,
    since: Annotated[str | None, typer.Option("--since", help="RFC 3339 time or duration back (15m, 2h, 7d).")] = None,
    as_json: _Json = False,
) -> None:
    """Calls, denials by rule, errors, p50/p99 duration per tool, and every degradation counted."""
    flt = _filter(None, None, None, None, since)
    try:
        stats = audit_stats(directory, flt)
    except CheckreinError as exc:
        raise _fail(exc.message) from None
    except OSError as exc:
        raise _fail(f"cannot read {directory}: {exc.strerror}") from None
    if as_json:
        print(json.dumps(stats, sort_keys=True))
        return
    print(f"events {stats['events']}  checkpoints {stats['checkpoints']}  calls {stats['calls']}  "
          f"({stats['first_call']} .. {stats['last_call']})")
    for title, key in (("outcomes", "outcomes"), ("calls by kind", "calls_by_kind"), ("denials by rule", "denials_by_rule"),
                       ("errors by code", "errors_by_code"), ("degraded", "degraded"), ("trail", "trail")):
        values = stats[key]
        if values:
            print(f"{title}:")
            for name, n in values.items():
                print(f"  {name:<40} {n}")
    if stats["duration_by_tool"]:
        print("duration by tool:")
        print(f"  {'tool':<40} {'calls':>7} {'p50 ms':>9} {'p99 ms':>9}")
        for tool, d in stats["duration_by_tool"].items():
            print(f"  {tool:<40} {d['calls']:>7} {d['p50_ms']:>9.2f} {d['p99_ms']:>9.2f}")


@audit_app.command("keygen")
def keygen_cmd(
    out: Annotated[Path, typer.Option("--out", help="Directory for audit-signing.key (0600) and audit-signing.pub.")],
    force: Annotated[bool, typer.Option("--force", help="Replace an existing key pair.")] = False,
) -> None:
    """Write an Ed25519 key pair for signing checkpoints; set `[audit] signing_key` to the .key."""
    try:
        priv, pub, kid = generate_keypair(out, force=force)
    except CheckreinError as exc:
        raise _fail(exc.message) from None
    print(f"private key: {priv} (mode 0600; set [audit] signing_key to this path)")
    print(f"public key:  {pub} (give it to `checkrein audit verify --key`)")
    print(f"key id:      {kid}")


@audit_app.command("reindex")
def reindex_cmd(directory: _Dir) -> None:
    """Rebuild index.sqlite from the JSONL segments (the source of truth). Stop the gateway first."""
    if not directory.is_dir():
        raise _fail(f"{directory}: no such audit directory")
    try:
        n = rebuild_index(directory)
    except CheckreinError as exc:
        raise _fail(exc.message, 1) from None
    except (OSError, sqlite3.Error, ValueError) as exc:
        raise _fail(f"reindex failed: {exc}", 1) from None
    print(f"indexed {n} events into {directory / 'index.sqlite'}")


def register(app: typer.Typer) -> None:
    """Add the `audit` command group to `app`."""
    app.add_typer(audit_app, name="audit")
