"""Lint rules for checkrein's own config: does it load, and is it safe as written."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from checkrein.config._locate import locate
from checkrein.config.model import config_from_mapping
from checkrein.errors import ConfigError

from .common import check_inline_secrets
from .harbor_network import is_loopback
from .model import Report

__all__ = ["lint_checkrein"]


def lint_checkrein(report: Report, text: str, data: dict[str, Any], environ: Mapping[str, str]) -> None:
    """Load the config as the gateway would (variables from ``environ``; unset ones are reported
    by ``env.unset``), one finding per problem, then check what loads for unsafe settings."""
    try:
        cfg = config_from_mapping(data, source=report.file, text=text, environ=environ, unset="keep")
    except ConfigError as exc:
        for problem in exc.each():
            where = f"`{problem.key}`: " if problem.key else ""
            fix = problem.fix or (f"Change `{problem.key}` as the message says (examples/checkrein.toml shows every key)."
                                  if problem.key else None)
            report.add("checkrein.invalid", problem.line, where + problem.detail, fix)
        return
    if cfg.policy.default == "allow" or (cfg.policy.default is None and cfg.policy.template == "development"):
        unrated = " and, with no `template`, have no risk level, so none of them asks for approval" if cfg.policy.template is None else ""
        report.add(
            "checkrein.default-allow", locate(text, ["policy", "default"]) or locate(text, ["policy"]),
            f"tools that no allow or deny rule names are allowed{unrated}",
        )
    if not cfg.audit.enabled:
        unused = [k for k in ("dir", "signing_key") if getattr(cfg.audit, k) is not None]
        also = f"; {' and '.join(f'`{k}`' for k in unused)} {'is' if len(unused) == 1 else 'are'} then unused" if unused else ""
        report.add("checkrein.audit-disabled", locate(text, ["audit", "enabled"]), f"[audit] enabled = false: no call is recorded{also}")
    # Secrets are looked for in the text as written: a resolved ${VAR} is not an inline secret.
    written = cfg.as_written()
    if written["gateway"]["token"] is not None:
        check_inline_secrets(report, "gateway", line=lambda _f: locate(text, ["gateway", "token"]), headers={"Authorization": written["gateway"]["token"]})
    if written["approval"]["webhook_headers"]:
        line = locate(text, ["approval", "webhook_headers"])
        check_inline_secrets(report, "approval webhook", line=lambda _f: line, headers=written["approval"]["webhook_headers"])
    for i, (server, as_written) in enumerate(zip(cfg.servers, written["servers"], strict=True)):
        def at(field: str, _i: int = i) -> int | None:
            return locate(text, ["servers", _i, field]) or locate(text, ["servers", _i])

        check_inline_secrets(
            report, server.name, line=at, env=as_written["env"], headers=as_written["headers"], args=as_written["args"], url=as_written["url"]
        )
        if server.url and server.url.startswith("http://"):
            host = urlsplit(server.url).hostname or ""
            if not is_loopback(host):
                report.add("checkrein.plain-http", at("url"), f"server {server.name!r} is reached over plain HTTP at {host}")
