"""Names of the lifecycle events, and the config digest the gateway's start event carries.

The gate records these through `AuditTrail.record_lifecycle(LifecycleRecord(name, fields))`; the
trail itself writes the ``audit.*`` ones. Fields are redacted like arguments, so a config value
that looks secret is masked, but digests and counts are what belong here.
"""

from __future__ import annotations

from typing import Any

from checkrein.canonical import digest
from checkrein.config import Config

__all__ = [
    "AUDIT_RECOVERY",
    "AUDIT_RESUMED",
    "GATEWAY_START",
    "GATEWAY_STOP",
    "PIN_CHANGE",
    "POLICY_RELOAD",
    "UPSTREAM_CRASH",
    "UPSTREAM_FAILED",
    "UPSTREAM_RESTART",
    "UPSTREAM_START",
    "config_digest",
    "gateway_start_fields",
]

GATEWAY_START = "gateway.start"
"""fields: config_digest, policy_digest, servers, tools, ..."""
GATEWAY_STOP = "gateway.stop"
POLICY_RELOAD = "policy.reload"
"""fields: old and new policy_digest, config_digest"""
PIN_CHANGE = "pin.change"
"""fields: exposed tool name, old and new definition digests"""
UPSTREAM_START = "upstream.start"
UPSTREAM_CRASH = "upstream.crash"
UPSTREAM_RESTART = "upstream.restart"
UPSTREAM_FAILED = "upstream.failed"
AUDIT_RECOVERY = "audit.recovery"
"""Written by the trail on start after an unclean stop: segment, last_seq, cut_bytes, cut_sha256."""
AUDIT_RESUMED = "audit.resumed"
"""Written by the trail when writing works again: outage_s, error, rejected_unwritable,
failed_open, dropped."""


def config_digest(config: Config) -> str:
    """``sha256:<hex>`` of the validated config as written (canonical JSON; ``${VAR}`` references
    as references, so no secret read from the environment is hashed; the file path is not part of it)."""
    return digest(config.as_written())


def gateway_start_fields(config: Config, policy_digest: str, **more: Any) -> dict[str, Any]:
    """The fields a ``gateway.start`` event should carry."""
    return {"config_digest": config_digest(config), "policy_digest": policy_digest, **more}
