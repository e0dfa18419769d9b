"""`checkrein audit verify|query|tail|stats|keygen|reindex|vkey|proof|consistency|witness`.

Exit codes: 0 success / valid, 1 invalid log (`verify`) or a witness refused (`witness`), 2 usage
error or unreadable input, 3 (`verify`) consistent but unanchored: nothing outside the log (a key,
an anchor, a witnessed policy) vouched for it, so a whole-chain rewrite, a cut back to an earlier
clean shutdown or a fork would pass unseen.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from checkrein.audit.query import EventFilter, audit_stats, follow_events, parse_since, query_events
from checkrein.audit.signing import generate_keypair
from checkrein.audit.sqlite_index import rebuild_index
from checkrein.audit.tlog_policy import PolicyFileError, TlogPolicy, parse_tlog_policy
from checkrein.audit.verify import VerifyReport, verify_log
from checkrein.config import Config, load_config
from checkrein.errors import CheckreinError

__all__ = ["register"]

audit_app = typer.Typer(rich_markup_mode=None,
    name="audit",
    help="Verify, query and follow the audit trail; generate signing keys.",
    no_args_is_help=True,
)

_Dir = Annotated[Path, typer.Argument(help="Audit directory ([audit] dir).", show_default=False)]
_Json = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
_Postgres = Annotated[str | None, typer.Option(
    "--postgres", help="DSN of the fleet's audit in Postgres ([audit.postgres] dsn; ${VAR} is expanded).")]
_Table = Annotated[str, typer.Option("--table", help="Postgres table of the events.")]
_OptDir = Annotated[Path | None, typer.Argument(help="Audit directory ([audit] dir); omit with --postgres.", show_default=False)]
DEFAULT_TABLE = "checkrein_audit_events"


def _fail(message: str, code: int = 2) -> typer.Exit:
    print(f"checkrein: {message}", file=sys.stderr)
    return typer.Exit(code)


@audit_app.command("verify")
def verify_cmd(
    path: Annotated[Path, typer.Argument(help="Audit directory or one segment file.", show_default=False)],
    key: Annotated[Path | None, typer.Option("--key", help="Ed25519 public key (PEM) that signs the checkpoints.")] = None,
    policy: Annotated[Path | None, typer.Option(
        "--policy", help="C2SP tlog-policy file: the log's key, witnesses (with URLs to ask them) and quorum.")] = None,
    live: Annotated[bool, typer.Option("--live", help="The writer may still be running: no closing checkpoint needed.")] = False,
    anchor: Annotated[list[str] | None, typer.Option(
        "--anchor", help="SEQ:HASH recorded earlier (e.g. a checkpoint's seq and hash); must still be in the log.")] = None,
    no_index: Annotated[bool, typer.Option("--no-index", help="The log has no index.sqlite ([audit] sqlite = false).")] = False,
    as_json: _Json = False,
    postgres: _Postgres = None,
    table: _Table = DEFAULT_TABLE,
) -> None:
    """Check every line, the hash chain, checkpoints, Merkle roots, signatures, segment links and
    the SQLite copy; with --policy also the signed C2SP checkpoints, their cosignatures and quorum,
    and what each witness with a URL has seen; with --postgres, also that Postgres holds exactly this
    chain (nothing missing, altered or added). Exit 0 valid, 1 invalid (first problem and why),
    2 unreadable/usage, 3 valid but unanchored (no --key, --anchor or --policy: say what it cannot
    detect)."""
    anchors: list[tuple[int, str]] = []
    for a in anchor or []:
        seq_text, _, hash_text = a.partition(":")
        if not seq_text.isdigit() or len(hash_text) != 64:
            raise _fail(f"--anchor {a!r}: expected SEQ:HASH (a seq number and a 64-digit hex hash)")
        anchors.append((int(seq_text), hash_text.lower()))
    tlog_policy = _read_policy(policy) if policy is not None else None
    transport = None
    if tlog_policy is not None and any(w.url for w in tlog_policy.witnesses.values()):
        from checkrein.audit.witness_http import HttpWitnessTransport

        transport = HttpWitnessTransport()
    try:
        report = verify_log(path, public_key=key, live=live, anchors=tuple(anchors), policy=tlog_policy,
                            witness_transport=transport, check_sqlite=not no_index)
    finally:
        if transport is not None:
            transport.close()
    code = 3 if report.exit_code == 0 and not report.anchored else report.exit_code
    if postgres is not None:
        _verify_postgres(path, postgres, table, report.exit_code, as_json)
    if as_json:
        print(json.dumps({**report.as_dict(), "exit_code": code}, sort_keys=True))
    elif report.exit_code == 0:
        _print_valid(report, code)
    elif report.exit_code == 1:
        kind = f" [{report.problem.kind}]" if report.problem and report.problem.kind else ""
        print(f"INVALID{kind}: {report.problem}")
    else:
        print(f"checkrein: cannot verify: {report.problem}", file=sys.stderr)
    raise typer.Exit(code)


def _read_policy(path: Path) -> TlogPolicy:
    try:
        return parse_tlog_policy(path.read_text("utf-8"))
    except OSError as exc:
        raise _fail(f"cannot read policy {path}: {exc.strerror}") from None
    except (PolicyFileError, UnicodeDecodeError) as exc:
        raise _fail(f"{path}: {exc}") from None


def _print_valid(report: VerifyReport, code: int) -> None:
    signed = f", {report.signatures_checked} signatures checked" if report.signatures_checked else ""
    label = "VALID" if code == 0 else "VALID (UNANCHORED)"
    print(f"{label}: {report.events} events in {report.segments} segment(s), {report.checkpoints} checkpoints"
          f"{signed}; log {report.log_id}")
    w = report.witnessed
    if w:
        asked = f"; asked {', '.join(w['witnesses_asked'])}" if w["witnesses_asked"] else ""
        print(f"witnessed: newest checkpoint size {w['newest_size']} cosigned by "
              f"{', '.join(w['cosigned_by']) or 'no witness (quorum none)'}{asked}")
    for warning in report.warnings:
        print(f"warning: {warning}")
    if report.undetected:
        print("this check cannot detect:" if code == 3 else "not covered by this check:")
        for item in report.undetected:
            print(f"  - {item}")
    if code == 3 and report.signed_key_id:
        hint = report.key_path  # from the log itself: printed only when it cannot drive the terminal
        where = f" ({hint}, says the log)" if hint and hint.isprintable() else ""
        print(f"this log is signed: verify with --key set to its signing key{where}, or its public key; "
              "or --policy for witnesses; `checkrein audit vkey --config FILE` prints its verifier key")
    elif code == 3:
        print("sign the log (the default; `[audit] signing_key = false` turns it off) and verify with --key "
              "or --policy; see `checkrein audit vkey`")


def _verify_postgres(path: Path, dsn: str, table: str, local_exit: int, as_json: bool) -> None:
    from checkrein.audit.postgres import pg_verify

    try:
        pg = pg_verify(path, _dsn(dsn), table=table)
    except CheckreinError as exc:
        raise _fail(exc.message) from None
    except Exception as exc:  # noqa: BLE001 - psycopg's errors: the server is unreachable or refused
        raise _fail(f"cannot read Postgres: {type(exc).__name__}: {exc}") from None
    if as_json:
        print(json.dumps({"postgres": pg.as_dict()}, sort_keys=True))
    elif pg.exit_code == 0:
        behind = f"; {pg.unshipped} not shipped yet" if pg.unshipped else ""
        print(f"POSTGRES VALID: {pg.rows} rows equal the local chain {pg.log_id}{behind}")
    elif pg.exit_code == 1:
        print(
            f"POSTGRES INVALID: log {pg.log_id}: missing seq {_seqs(pg.missing)}, altered seq {_seqs(pg.altered)}, "
            f"extra seq {_seqs(pg.extra)}" + (f" ({pg.problem})" if pg.problem else "")
        )
    else:
        print(f"checkrein: cannot verify against Postgres: {pg.problem}", file=sys.stderr)
    if pg.exit_code != 0 and local_exit == 0:
        raise typer.Exit(pg.exit_code)


def _seqs(values: list[int]) -> str:
    if not values:
        return "none"
    shown = ", ".join(str(v) for v in values[:10])
    return shown + (f" (+{len(values) - 10} more)" if len(values) > 10 else "")


def _dsn(value: str) -> str:
    """``--postgres DSN`` with ``${VAR}`` references resolved (a password stays out of ``ps``)."""
    from checkrein.config.env import resolve_references

    resolved = resolve_references({"dsn": value}, os.environ)
    if resolved.unset:
        raise _fail(f"--postgres names an unset variable: ${{{resolved.unset[0].variable}}}")
    return str(resolved.data["dsn"])


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
    directory: _OptDir = None,
    trace: Annotated[str | None, typer.Option("--trace", help="Trace id.")] = None,
    session: Annotated[str | None, typer.Option("--session", help="Session id.")] = None,
    tool: Annotated[str | None, typer.Option("--tool", help="Glob over exposed or tool name, e.g. 'fs__*'.")] = None,
    outcome: Annotated[str | None, typer.Option("--outcome", help="ok, denied, error, timeout or not_found.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="RFC 3339 time or duration back (15m, 2h, 7d).")] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="Only the last N matches.")] = None,
    as_json: _Json = False,
    postgres: _Postgres = None,
    table: _Table = DEFAULT_TABLE,
) -> None:
    """Events matching every filter given, oldest first (JSON Lines with --json); with --postgres,
    across every replica that ships there."""
    flt = _filter(trace, session, tool, outcome, since)
    try:
        if postgres is not None:
            events = _pg_read(lambda dsn: _pg().pg_query_events(dsn, flt, limit=limit, table=table), postgres)
        elif directory is None:
            raise _fail("give an audit directory or --postgres DSN")
        else:
            events = query_events(directory, flt, limit=limit)
    except CheckreinError as exc:
        raise _fail(exc.message) from None
    except (OSError, sqlite3.Error) as exc:
        raise _fail(f"cannot read {directory}: {exc}") from None
    for e in events:
        print(json.dumps(e, sort_keys=True, ensure_ascii=False) if as_json else _one_line(e))


def _pg() -> Any:
    from checkrein.audit import postgres

    return postgres


def _pg_read(read: Callable[[str], Any], dsn: str) -> Any:
    try:
        return read(_dsn(dsn))
    except CheckreinError:
        raise
    except Exception as exc:  # noqa: BLE001 - psycopg's errors: the server is unreachable or refused
        raise _fail(f"cannot read Postgres: {type(exc).__name__}: {str(exc).strip()}") from None


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
    directory: _OptDir = None,
    since: Annotated[str | None, typer.Option("--since", help="RFC 3339 time or duration back (15m, 2h, 7d).")] = None,
    as_json: _Json = False,
    postgres: _Postgres = None,
    table: _Table = DEFAULT_TABLE,
) -> None:
    """Calls, denials by rule, errors, p50/p99 duration per tool, and every degradation counted;
    with --postgres, across every replica (and events per replica)."""
    flt = _filter(None, None, None, None, since)
    try:
        if postgres is not None:
            stats = _pg_read(lambda dsn: _pg().pg_audit_stats(dsn, flt, table=table), postgres)
        elif directory is None:
            raise _fail("give an audit directory or --postgres DSN")
        else:
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
                       ("errors by code", "errors_by_code"), ("degraded", "degraded"), ("trail", "trail"),
                       ("events by replica (log id)", "replicas")):
        values = stats.get(key)
        if values:
            print(f"{title}:")
            for name, n in values.items():
                print(f"  {name:<40} {n}")
    scalars = {k: v for k, v in stats.get("registry", {}).items() if not isinstance(v, dict)}
    if scalars:
        print("registry at the last gateway.stop:")
        for name, n in sorted(scalars.items()):
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


_Config = Annotated[Path | None, typer.Option("--config", "-c", help="checkrein config file (finds the audit dir and key).")]


def _config(path: Path) -> Config:
    try:
        return load_config(path)
    except CheckreinError as exc:
        raise _fail(exc.message) from None


def _log_dir(directory: Path | None, config: Path | None) -> Path:
    if directory is not None:
        return directory
    if config is None:
        raise _fail("give the audit directory or --config FILE")
    from checkrein.audit.trail import resolve_audit_dir

    cfg = _config(config)
    return resolve_audit_dir(cfg.audit, cfg.base_dir)


@audit_app.command("vkey")
def vkey_cmd(config: Annotated[Path, typer.Option("--config", "-c", help="checkrein config file.")], as_json: _Json = False) -> None:
    """The log's origin and signed-note verifier key: what a witness operator (or a tlog-policy
    `log` line) needs."""
    from checkrein.audit.trail import resolve_audit_dir
    from checkrein.audit.transparency import log_identity

    cfg = _config(config)
    try:
        ident = log_identity(cfg.audit, cfg.base_dir, cfg.source, resolve_audit_dir(cfg.audit, cfg.base_dir))
    except CheckreinError as exc:
        raise _fail(exc.message) from None
    if as_json:
        print(json.dumps({"origin": ident.origin, "vkey": ident.vkey, "key": str(ident.key_path)}, sort_keys=True))
    else:
        print(f"origin: {ident.origin}")
        print(f"vkey:   {ident.vkey}")
        print(f"key:    {ident.key_path}")


@audit_app.command("proof")
def proof_cmd(
    seq: Annotated[int, typer.Option("--seq", help="The event's seq.", min=0)],
    directory: Annotated[Path | None, typer.Argument(help="Audit directory (or --config).", show_default=False)] = None,
    config: _Config = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write the proof here (.tlog-proof) instead of stdout.")] = None,
) -> None:
    """A C2SP tlog-proof that event SEQ is in the log: its inclusion path to the newest signed
    (and cosigned) checkpoint, with the event's line as `extra`."""
    from checkrein.audit.transparency import inclusion_proof_for

    try:
        text = inclusion_proof_for(_log_dir(directory, config), seq).render()
    except CheckreinError as exc:
        raise _fail(exc.message) from None
    if out is None:
        sys.stdout.write(text)
        return
    try:
        out.write_text(text, "utf-8")
    except OSError as exc:
        raise _fail(f"cannot write {out}: {exc.strerror}") from None
    print(f"wrote {out}")


@audit_app.command("consistency")
def consistency_cmd(
    old: Annotated[int, typer.Argument(help="Size of the older checkpoint.", min=0)],
    new: Annotated[int, typer.Argument(help="Size of the newer signed checkpoint.", min=0)],
    directory: Annotated[Path | None, typer.Argument(help="Audit directory (or --config).", show_default=False)] = None,
    config: _Config = None,
    as_json: _Json = False,
) -> None:
    """The RFC 6962 consistency proof from checkpoint OLD to checkpoint NEW, in tlog-witness
    request form (old size, proof lines, blank line, the signed NEW checkpoint)."""
    from checkrein.audit.note import b64
    from checkrein.audit.transparency import consistency_between

    try:
        c = consistency_between(_log_dir(directory, config), old, new)
    except CheckreinError as exc:
        raise _fail(exc.message) from None
    if as_json:
        print(json.dumps({"old": c.old, "new": c.new, "old_root": b64(c.old_root), "new_root": b64(c.new_root),
                          "proof": [b64(h) for h in c.proof]}, sort_keys=True))
    else:
        sys.stdout.write(c.witness_body())


@audit_app.command("witness")
def witness_cmd(
    config: Annotated[Path, typer.Option("--config", "-c", help="checkrein config file ([audit.witness] urls).")],
    url: Annotated[list[str] | None, typer.Option("--url", help="Witness submission prefix (default: the config's).")] = None,
    as_json: _Json = False,
) -> None:
    """Push the newest signed checkpoint to the witnesses and store their cosignatures, as the
    gateway does after each checkpoint. Exit 1 if the quorum was not reached."""
    from checkrein.audit.trail import resolve_audit_dir
    from checkrein.audit.transparency import witness_newest
    from checkrein.audit.witness_http import HttpWitnessTransport

    cfg = _config(config)
    urls = tuple(url) if url else cfg.audit.witness.urls
    if not urls:
        raise _fail("no witnesses: set [audit.witness] urls or give --url")
    transport = HttpWitnessTransport()
    try:
        size, results = witness_newest(resolve_audit_dir(cfg.audit, cfg.base_dir), urls, transport,
                                       cfg.audit.witness.timeout_s)
    except CheckreinError as exc:
        raise _fail(exc.message) from None
    finally:
        transport.close()
    ok = sum(r.outcome == "cosigned" for r in results)
    needed = cfg.audit.witness.needed if not url else max(1, min(cfg.audit.witness.needed, len(urls)))
    if as_json:
        print(json.dumps({"size": size, "cosigned": ok, "quorum": needed, "results": [
            {"url": r.url, "outcome": r.outcome, "witness_size": r.witness_size, "detail": r.detail,
             "cosigners": [sig.name for sig in r.signatures]} for r in results]}, sort_keys=True))
    else:
        for r in results:
            who = f" by {', '.join(sig.name for sig in r.signatures)}" if r.signatures else ""
            print(f"{r.url}: {r.outcome}{who}{f' ({r.detail})' if r.detail else ''}")
        print(f"checkpoint size {size}: {ok} of {len(urls)} witnesses cosigned (quorum {needed})")
    raise typer.Exit(0 if ok >= needed else 1)


def register(app: typer.Typer) -> None:
    """Add the `audit` command group to `app`."""
    app.add_typer(audit_app, name="audit")
