"""`build_gate`: wire a `Gate` from a `Config` with defaults for every part not given.

Other packages extend this by replacing a default below with theirs; keep each line obvious.
Use the result as ``async with build_gate(config) as gate: ...``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from checkrein.audit.record import AuditTrail, CallRecord, LifecycleRecord
from checkrein.config import Config, ServerConfig
from checkrein.policy import ResultInspector
from checkrein.policy.inspect import DefaultInspector
from checkrein.upstream import UpstreamPool
from checkrein.upstream.base import Upstream

from .pipeline import Gate
from .seams import Approver, Budget

__all__ = ["NullAuditTrail", "build_gate", "resolve_python"]

_PYTHON_NAMES = frozenset({"python", "python3"})


def resolve_python(server: ServerConfig) -> ServerConfig:
    """A bare ``python``/``python3`` command means the interpreter running checkrein.

    So ``python -m checkrein.servers.NAME`` (and the test servers) work from a virtualenv whose
    ``bin`` is not on PATH; any other command is left as written.
    """
    if server.command in _PYTHON_NAMES:
        return server.model_copy(update={"command": sys.executable})
    return server


class NullAuditTrail:
    """The trail used when `[audit] dir` is unset: always writable, keeps nothing."""

    discards_records = True
    """Tells the gate it may skip building records nobody keeps (a per-call saving)."""

    async def record_call(self, record: CallRecord) -> None:
        del record

    async def record_lifecycle(self, record: LifecycleRecord) -> None:
        del record

    def writable(self) -> bool:
        return True

    async def aclose(self) -> None:
        return None


def build_gate(
    config: Config,
    *,
    upstreams: Sequence[Upstream] | Mapping[str, Upstream] | None = None,
    audit: AuditTrail | None = None,
    approver: Approver | None = None,
    budget: Budget | None = None,
    inspector: ResultInspector | None = None,
) -> Gate:
    """A gate over ``upstreams`` (default: an `UpstreamPool` of the configured servers whose
    list_changed and lifecycle events reach the gate). Not started: use ``async with``."""
    gate: Gate | None = None

    async def tools_changed(server: str) -> None:
        if gate is not None:
            await gate.refresh(server)

    async def upstream_event(event: str, fields: dict[str, Any]) -> None:
        if gate is not None:
            await gate.record_lifecycle(event, fields)

    if upstreams is None:
        servers = [resolve_python(s) for s in config.servers]
        upstreams = UpstreamPool(servers, on_tools_changed=tools_changed, on_event=upstream_event)
    gate = Gate(
        config,
        upstreams,
        audit if audit is not None else NullAuditTrail(),
        approver=approver,
        budget=budget,
        inspector=inspector if inspector is not None else DefaultInspector(config.policy.results),
    )
    return gate
