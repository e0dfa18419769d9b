"""Lint rules for checkrein's own config: does it load, and is it safe as written."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from checkrein.config._locate import locate
from checkrein.config.model import config_from_mapping
from checkrein.errors import ConfigError

from .common import check_inline_secrets
from .harbor_network import is_loopback
from .model import Report

__all__ = ["lint_checkrein"]


def lint_checkrein(report: Report, text: str, data: dict[str, Any]) -> None:
    try:
        cfg = config_from_mapping(data, source=report.file, text=text)
    except ConfigError as exc:
        report.add("checkrein.invalid", exc.line, exc.message.split(": ", 1)[-1] if exc.file else exc.message)
        return
    if cfg.policy.default == "allow" or (cfg.policy.default is None and cfg.policy.template == "development"):
        report.add("checkrein.default-allow", locate(text, ["policy", "default"]) or locate(text, ["policy"]), "tools not named in the policy are allowed")
    if cfg.audit.dir is None:
        report.add("checkrein.no-audit-dir", locate(text, ["audit"]), "calls are not kept in a chained audit log")
    if cfg.gateway.token is not None:
        check_inline_secrets(report, "gateway", line=lambda _f: locate(text, ["gateway", "token"]), headers={"Authorization": cfg.gateway.token})
    if cfg.approval.webhook_headers:
        line = locate(text, ["approval", "webhook_headers"])
        check_inline_secrets(report, "approval webhook", line=lambda _f: line, headers=cfg.approval.webhook_headers)
    for i, server in enumerate(cfg.servers):
        def at(field: str, _i: int = i) -> int | None:
            return locate(text, ["servers", _i, field]) or locate(text, ["servers", _i])

        check_inline_secrets(report, server.name, line=at, env=server.env, headers=server.headers, args=server.args, url=server.url)
        if server.url and server.url.startswith("http://"):
            host = urlsplit(server.url).hostname or ""
            if not is_loopback(host):
                report.add("checkrein.plain-http", at("url"), f"server {server.name!r} is reached over plain HTTP at {host}")
