"""The fairness ledger: one canonical document pinning everything an evaluated agent could use.

Two runs are comparable only if their agents had the same tools, skills, policy, budgets and
network. `build_ledger` is a pure function over what the caller gathered (the CLI starts the
upstreams and reads the skills; this module does no I/O), and `diff_ledgers` explains every
difference between two ledgers, so a comparison under different conditions is caught before
results are published.

Secrets never enter a ledger: a value `checkrein import` would treat as an inline secret (in env,
headers, arguments or the URL) is written as ``<secret>`` (not even hashed: a short password's
hash can be guessed); other environment and header values are kept when they are ``${VAR}``
references and replaced by their SHA-256 otherwise (so a change still shows). Launch fields and
the policy are taken as written (`Config.as_written`), so a resolved variable never enters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from checkrein.canonical import canonical_json, digest, sha256_hex
from checkrein.config import Config, ServerConfig
from checkrein.config.importers.secrets import SecretMover

from .lock import PinnedTool
from .merge import build_catalog
from .model import ToolDefinition

__all__ = ["LEDGER_VERSION", "RETRIES", "LedgerDifference", "ServerSnapshot", "build_ledger", "diff_ledgers", "render_ledger"]

LEDGER_VERSION = 1
RETRIES: Mapping[str, int] = {"read_only_idempotent": 1, "other": 0}
"""The gateway's retry rule (one retry, only for read-only idempotent tools): pinned so a change
of that rule between two runs shows in their ledgers."""


@dataclass(frozen=True, slots=True)
class ServerSnapshot:
    """What one upstream told us when the ledger was taken (``UpstreamInfo`` plus its tools)."""

    name: str
    state: str
    server_name: str | None = None
    server_version: str | None = None
    protocol_version: str | None = None
    tools: tuple[ToolDefinition, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class LedgerDifference:
    path: str
    """Dotted path of the differing value, e.g. ``servers.files.reported.version``."""
    before: Any
    after: Any
    explanation: str


SECRET = "<secret>"


def _pinned_value(value: str) -> str:
    return value if "${" in value else "sha256:" + sha256_hex(value.encode("utf-8"))


def _launch_fields(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """How the gateway starts or reaches the server ``cfg`` (as written: `Config.as_written`),
    every inline secret replaced by `SECRET`."""
    moved: list[str] = []
    mover = SecretMover(lambda _server, _where, variable: moved.append(variable))
    name = str(cfg["name"])

    def hide(value: str) -> str:
        for variable in moved:
            value = value.replace("${" + variable + "}", SECRET)
        return value

    def pin(value: str, kept: str) -> str:
        return hide(kept) if kept != value else _pinned_value(value)

    if cfg["transport"] == "stdio":
        env = {k: pin(v, mover.env(name, k, v)) for k, v in sorted(cfg["env"].items())}
        args = mover.args(name, list(cfg["args"]))
        return {"command": cfg["command"], "args": [hide(a) for a in args], "cwd": cfg["cwd"], "env": env}
    headers = {k: pin(v, mover.header(name, k, v)) for k, v in sorted(cfg["headers"].items())}
    url = cfg["url"]
    return {"url": hide(mover.url(name, url)) if url else url, "headers": headers}


def _server_entry(cfg: ServerConfig, written: Mapping[str, Any], snap: ServerSnapshot | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"transport": cfg.transport, "enabled": cfg.enabled, "timeout_s": cfg.timeout_s, "security_level": cfg.security_level}
    entry |= _launch_fields(written)
    if snap is None:
        entry |= {"state": "not-started", "reported": None, "tools": {}}
        return entry
    entry["state"] = snap.state
    entry["reported"] = {"name": snap.server_name, "version": snap.server_version, "protocol_version": snap.protocol_version}
    if snap.error:
        entry["error"] = snap.error
    entry["tools"] = {t.name: t.digest for t in sorted(snap.tools, key=lambda t: t.name)}
    return entry


def build_ledger(
    config: Config,
    servers: Sequence[ServerSnapshot],
    skills: Mapping[str, str] | None = None,
    *,
    pins: Mapping[str, PinnedTool] | None = None,
    software: str | None = None,
) -> dict[str, Any]:
    """The ledger of ``config`` with the ``servers`` as they answered and ``skills`` (name ->
    digest). ``pins`` (the lock file) marks drifted tools quarantined, as the gateway would;
    ``software`` names the gateway build (e.g. ``checkrein 0.1.0``), a condition of the run too.

    Deterministic: the same inputs give the same canonical bytes (no clock, no host names).
    The ``digest`` field covers every other field."""
    snaps = {s.name: s for s in servers}
    # Launch fields and policy as written: a ${VAR} stays a reference, its value never enters.
    written = config.as_written()
    policy = written["policy"]
    catalog = build_catalog(
        {s.name: list(s.tools) for s in servers if s.name in {c.name for c in config.servers if c.enabled}},
        separator=config.gateway.separator,
        pins=pins,
    )
    budgets = {
        "retries": dict(RETRIES),
        "server_timeouts_s": {c.name: c.timeout_s for c in config.servers},
        "approval": {"mode": config.approval.mode, "timeout_s": config.approval.timeout_s, "ttl_s": config.approval.ttl_s},
        "limits": [lim.model_dump(mode="json") for lim in config.budgets.limits],
        "arguments": config.policy.limits.model_dump(mode="json"),
        "results": {"max_bytes": config.policy.results.max_bytes, "oversize": config.policy.results.oversize},
    }
    network: dict[str, Any] = {
        "upstreams": {
            c.name: ("stdio" if c.transport == "stdio" else (urlsplit(c.url or "").hostname or ""))
            for c in config.servers
        },
        "allowed_origins": sorted(config.gateway.allowed_origins),
        "url_allowed_hosts": sorted(config.policy.urls.allowed_hosts),
        "resolve_dns": config.policy.urls.resolve_dns,
    }
    doc: dict[str, Any] = {
        "ledger_version": LEDGER_VERSION,
        "software": software,
        "gateway": {"name": config.gateway.name, "separator": config.gateway.separator},
        "servers": {
            c.name: _server_entry(c, w, snaps.get(c.name)) for c, w in zip(config.servers, written["servers"], strict=True)
        },
        "catalog": {
            "digest": digest({e.exposed: e.digest for e in catalog}),
            "tools": {e.exposed: e.digest for e in catalog},
            "quarantined": sorted(e.exposed for e in catalog.quarantined),
            "skipped": sorted(f"{s.server}/{s.tool}: {s.reason}" for s in catalog.skipped),
        },
        "skills": dict(sorted((skills or {}).items())),
        # The whole policy, not just its digest, so `diff_ledgers` can say which rule or setting changed.
        "policy": {"digest": digest(policy), "settings": policy},
        "budgets": budgets,
        "network": network,
        "audit": {"durability": config.audit.durability, "on_failure": config.audit.on_failure, "signed": config.audit.signing_key is not None},
    }
    doc["digest"] = digest(doc)
    return doc


def render_ledger(ledger: Mapping[str, Any]) -> bytes:
    """The canonical bytes of ``ledger`` (what `--out` writes and what two runs compare)."""
    return canonical_json(ledger) + b"\n"


def _explain(path: list[str], before: Any, after: Any) -> str:
    where = ".".join(path)
    if before is _MISSING or after is _MISSING:
        run, shown = ("B", after) if before is _MISSING else ("A", before)
        if len(path) >= 2 and path[0] == "catalog":
            return f"tool {path[-1]} only in {run}"
        if len(path) == 2 and path[0] == "skills":
            return f"skill {path[1]} only in {run} ({shown})"
        return f"{where} only in {run}: {shown!r}"
    head = path[0] if path else ""
    if head == "servers" and len(path) >= 3:
        server, what = path[1], ".".join(path[2:])
        if path[2] == "tools":
            return f"server {server}: tool {path[-1]} has a different definition ({before} -> {after})"
        if path[2] == "reported":
            return f"server {server} reported {path[-1]} {before!r} in A, {after!r} in B"
        return f"server {server}: {what} differs: {before!r} -> {after!r}"
    if head == "catalog" and len(path) >= 3 and path[1] == "tools":
        return f"tool {path[2]} has a different definition ({before} -> {after})"
    if head == "skills":
        return f"skill {path[-1]} differs ({before} -> {after})"
    if head == "policy" and len(path) >= 3:
        return f"policy setting {'.'.join(path[2:])} differs: {before!r} -> {after!r}"
    return f"{where} differs: {before!r} -> {after!r}"


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()


def diff_ledgers(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[LedgerDifference]:
    """Every difference between ledgers ``a`` and ``b``, each with a sentence explaining it.

    The summary ``digest`` fields (``digest``, ``catalog.digest``, ``policy.digest``) are not listed on their own:
    whatever changed them is. An empty list means the two runs had the same conditions."""
    out: list[LedgerDifference] = []

    def walk(path: list[str], x: Any, y: Any) -> None:
        if path in (["digest"], ["catalog", "digest"], ["policy", "digest"]):
            return
        if isinstance(x, Mapping) and isinstance(y, Mapping):
            for key in sorted(set(x) | set(y)):
                walk([*path, str(key)], x.get(key, _MISSING), y.get(key, _MISSING))
            return
        if x != y:
            out.append(LedgerDifference(".".join(path), None if x is _MISSING else x, None if y is _MISSING else y, _explain(path, x, y)))

    walk([], a, b)
    if not out and a.get("digest") != b.get("digest"):
        out.append(LedgerDifference("digest", a.get("digest"), b.get("digest"), "the ledgers' digests differ (edited by hand?)"))
    return out


