"""Session flow state on a `SharedState` (Redis for a fleet): `SharedFlowStore`.

A `FlowStore` (`checkrein.gate.flow`) whose states every replica shares: a session that moves
from replica A to replica B (no affinity behind the load balancer) is judged on everything it did
on A. Each state is one JSON record, changed by compare and set (`SharedState.update`: ``WATCH``/
``MULTI`` on Redis), so two replicas recording results of one session at once lose neither.

The resume window works as in process: every update also writes the identity's latest key and
time; a key never seen before inherits that state when it was written within
``resume_window_s``. A record lives ``max(resume_window_s, 1 day)`` after its last change
(sessions end without telling the gateway; ``max_sessions`` is the in-process store's bound and
does not apply here). A backend that cannot answer raises `StateUnavailable` and a record that
does not decode raises ``ValueError``: the flow step denies either way (fail closed), and a
result whose flow could not be recorded is withheld.
"""

from __future__ import annotations

import hashlib
from typing import Any

from checkrein.canonical import canonical_json
from checkrein.config.policy import FlowSettings
from checkrein.policy.flow import FlowState
from checkrein.policy.flow.state import Seen, TextLog
from checkrein.state import SharedState

from .flow import Change, FlowKey

__all__ = ["SharedFlowStore", "decode_flow_state", "encode_flow_state"]

_FORMAT = 1
_MIN_TTL_S = 86_400.0


def _log_out(log: TextLog) -> dict[str, Any]:
    return {"e": [[s.source, s.text] for s in log.entries], "n": log.size, "d": log.dropped}


def _log_in(raw: Any) -> TextLog:
    if not isinstance(raw, dict):
        raise ValueError("flow state: a text log is not an object")
    pairs = raw["e"]
    if not isinstance(pairs, list) or not all(
        type(p) is list and len(p) == 2 and type(p[0]) is str and type(p[1]) is str for p in pairs
    ):
        raise ValueError("flow state: a text log entry is not [source, text]")
    entries = tuple(Seen(source, text, text.replace(" ", "")) for source, text in pairs)
    return TextLog(entries, _int(raw["n"]), _int(raw["d"]))


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("flow state: expected a string")
    return value


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError("flow state: expected a count")
    return value


def _strs(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ValueError("flow state: expected a list")
    return tuple(_str(v) for v in value)


def encode_flow_state(state: FlowState) -> dict[str, Any]:
    """The JSON record of ``state`` (the spaceless copies are left out: they are derived)."""
    return {
        "v": _FORMAT,
        "untrusted_from": list(state.untrusted_from),
        "private_from": list(state.private_from),
        "untrusted": _log_out(state.untrusted),
        "trusted": _log_out(state.trusted),
        "tasks": list(state.tasks),
        "calls": state.calls,
    }


def decode_flow_state(raw: Any) -> FlowState:
    """The state of a record `encode_flow_state` wrote. Raises ``ValueError`` for anything else."""
    try:
        if not isinstance(raw, dict) or raw.get("v") != _FORMAT:
            raise ValueError("flow state: unknown record format")
        return FlowState(
            untrusted_from=_strs(raw["untrusted_from"]),
            private_from=_strs(raw["private_from"]),
            untrusted=_log_in(raw["untrusted"]),
            trusted=_log_in(raw["trusted"]),
            tasks=_strs(raw["tasks"]),
            calls=_int(raw["calls"]),
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"flow state: malformed record ({type(exc).__name__})") from None


def _h(value: Any) -> str:
    return hashlib.sha256(canonical_json(value)).hexdigest()


class _Missing(Exception):
    """The key holds no state yet: the caller fetches what it inherits, then tries again."""


class SharedFlowStore:
    """`FlowStore` on a `SharedState` (see the module docstring)."""

    def __init__(self, state: SharedState, settings: FlowSettings | None = None) -> None:
        self.state = state
        self.settings = settings or FlowSettings()
        self.resumed = 0
        self.evicted = 0  # records expire in the backend; kept for the in-process store's counters

    def configure(self, settings: FlowSettings) -> None:
        self.settings = settings

    @property
    def _ttl_s(self) -> float:
        return max(self.settings.resume_window_s, _MIN_TTL_S)

    @staticmethod
    def _key(key: FlowKey) -> str:
        return "flow:" + _h(list(key))

    @staticmethod
    def _latest(user: str) -> str:
        return "flow-latest:" + _h(user)

    async def _inherited(self, key: FlowKey, now: float) -> FlowState:
        window = self.settings.resume_window_s
        if window <= 0:
            return FlowState()
        latest = await self.state.get(self._latest(key[0]))
        if not isinstance(latest, dict):
            return FlowState()
        at, other = latest.get("at"), latest.get("key")
        if not isinstance(at, int | float) or not isinstance(other, str) or other == self._key(key) or now - at > window:
            return FlowState()
        raw = await self.state.get(other)
        if raw is None:
            return FlowState()
        self.resumed += 1
        return decode_flow_state(raw)

    async def get(self, key: FlowKey, now: float) -> FlowState:
        raw = await self.state.get(self._key(key))
        if raw is not None:
            return decode_flow_state(raw)
        return await self._inherited(key, now)

    async def update(self, key: FlowKey, now: float, change: Change) -> FlowState:
        k = self._key(key)
        result: list[FlowState] = []

        def apply(current: Any, start: FlowState | None) -> dict[str, Any]:
            if current is None and start is None:
                raise _Missing
            new = change(decode_flow_state(current) if current is not None else start or FlowState())
            result[:] = [new]
            return encode_flow_state(new)

        try:
            await self.state.update(k, lambda cur: apply(cur, None), self._ttl_s)
        except _Missing:  # a new key: what it inherits is read first (it may take more I/O)
            start = await self._inherited(key, now)
            await self.state.update(k, lambda cur: apply(cur, start), self._ttl_s)
        if self.settings.resume_window_s > 0:
            await self.state.put(self._latest(key[0]), {"key": k, "at": now}, self.settings.resume_window_s)
        return result[0]
