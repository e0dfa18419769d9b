"""`GateRelay`: what an upstream sends back on its own (`checkrein.upstream.relay.RelayHooks`),
under the same policy, inspection and audit as what clients send.

- **Server requests** (sampling, elicitation, roots): refused unless the request can be attributed
  to exactly one client (see `checkrein.upstream.relay`), the server may make that kind of request
  (`[[servers]] sampling / elicitation / roots`: `allow` or `deny`; default `allow`, `deny` for
  `security_level = "high"`), and the client declared the capability. The upstream's text (the
  messages it wants a model to read, the question it wants a person to answer) is inspected like a
  result: an injection is refused, secrets are masked. The client's answer goes back with secrets
  masked. Every one is audited (kinds `sampling`, `elicitation`, `roots`) with the client's
  identity; a refusal reaches the upstream as a JSON-RPC error naming the reason.
- **Progress messages**: the text of a relayed call's progress notification is masked for secrets,
  and replaced by a note when it carries an injection (the numbers always go on).
- **Log messages**: masked for secrets and relayed to the attributed client with the server's name
  as ``logger``; withheld when they carry an injection; dropped (and counted) when nobody can be
  told apart as their client.
- **Resource updates and list changes**: handed to the frontend's listeners, URIs in exposed form.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import anyio
from mcp.shared.exceptions import MCPError

from checkrein.audit.record import AuditTrail, CallRecord
from checkrein.errors import AuditUnavailable
from checkrein.policy import Identity, ResultInspector, ResultView, ToolCall
from checkrein.upstream.relay import Downstream, ServerRequestKind

from .counters import Counters
from .state import GateState

__all__ = ["GateRelay", "RelayListener", "REFUSED_SERVER_REQUEST"]

log = logging.getLogger("checkrein.gate")

REFUSED_SERVER_REQUEST = -32001
"""JSON-RPC code of a server request checkrein refused (the message says why)."""

RelayListener = Callable[[str, str], Awaitable[None]]
"""``listener(event, value)``: ``("resource_updated", exposed uri)`` or ``("list_changed", "resources"|"prompts")``."""

_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class GateRelay:
    """Implements `RelayHooks` for the gate. ``bind`` it to the gate before upstreams start."""

    def __init__(self) -> None:
        self._state: Callable[[], GateState] | None = None
        self._inspector: ResultInspector | None = None
        self._audit: AuditTrail | None = None
        self.counters = Counters()
        self._listeners: list[RelayListener] = []
        self._redact: Callable[[str], str] = _redactor()

    def bind(
        self, state: Callable[[], GateState], inspector: ResultInspector | None, audit: AuditTrail, counters: Counters
    ) -> None:
        self._state, self._inspector, self._audit, self.counters = state, inspector, audit, counters

    def add_listener(self, listener: RelayListener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    # -- policy -------------------------------------------------------------------------------

    def wants(self, server: str, kind: ServerRequestKind) -> bool:
        if self._state is None:
            return False
        try:
            cfg = self._state().config.server(server)
        except KeyError:
            return False
        setting = getattr(cfg, kind, None)
        if setting is not None:
            return bool(setting == "allow")
        return cfg.security_level != "high"

    # -- server requests ------------------------------------------------------------------------

    async def server_request(
        self, server: str, kind: ServerRequestKind, params: dict[str, Any], target: Downstream | None
    ) -> dict[str, Any]:
        started = time.perf_counter()
        call = _call_of(target, server, kind, params)
        if target is None:
            raise await self._refuse(call, started, "relay:unattributed",
                                     f"checkrein cannot tell which client this {kind} request is for (no single "
                                     "client request is in flight on this server), so it asks nobody")  # fmt: skip
        if not self.wants(server, kind):
            raise await self._refuse(call, started, f"relay:{kind}:denied",
                                     f"server {server!r} may not make {kind} requests (policy)")  # fmt: skip
        if not target.supports(kind):
            raise await self._refuse(call, started, f"relay:{kind}:unsupported",
                                     f"the client does not support {kind} requests (or its connection cannot carry them)")  # fmt: skip
        params, flags, why = self._inspect_request(call, kind, params)
        if why:
            raise await self._refuse(call, started, "inspect:withhold", why, flags)
        timeout_s = self._state().config.approval.timeout_s if self._state is not None else 60.0
        try:
            result = await target.request(kind, params, timeout_s)
        except MCPError as exc:
            await self._record(call, started, "error", "relay.client_error", None, (), exc.message)
            self.counters.refused_server_requests += 1
            raise
        except Exception as exc:  # noqa: BLE001 - the client went away, timed out or broke: the upstream gets an error
            self.counters.refused_server_requests += 1
            text = f"the client did not answer the {kind} request ({type(exc).__name__}: {exc})"
            await self._record(call, started, "error", "relay.client_error", None, (), text)
            raise MCPError(REFUSED_SERVER_REQUEST, text) from None
        answer = _map_strings(result, self._redact)
        self.counters.relayed_requests += 1
        if not await self._record(call, started, "ok", None, answer, flags, ""):
            raise MCPError(REFUSED_SERVER_REQUEST, "the audit trail could not record this request, so its answer is withheld")
        return answer  # type: ignore[no-any-return]

    def _inspect_request(self, call: ToolCall, kind: str, params: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, ...], str]:
        """Mask secrets in the upstream's text; the reason to refuse it when it carries an injection."""
        if self._inspector is None or kind == "roots":
            return params, (), ""
        texts = tuple(_texts(params))
        if not texts:
            return params, (), ""
        inspection = self._inspector.inspect(call, ResultView.of_texts(*texts))
        if inspection.action != "deliver" or "truncated" in inspection.flags:
            # A text the inspector had to cut was not read to its end, and it would go on whole.
            reason = inspection.reason if inspection.action != "deliver" else "its text is too long to inspect whole"
            return params, inspection.flags, (
                f"the {kind} request of {call.server!r} was refused by checkrein: "
                + (reason or "its text did not pass result inspection")
            )
        return _map_strings(params, self._redact), inspection.flags, ""

    async def _refuse(self, call: ToolCall, started: float, rule: str, reason: str, flags: tuple[str, ...] = ()) -> MCPError:
        self.counters.refused_server_requests += 1
        await self._record(call, started, "denied", "relay.refused", None, flags, reason, rule)
        return MCPError(REFUSED_SERVER_REQUEST, f"refused by checkrein: {reason} (rule {rule})")

    async def _record(
        self,
        call: ToolCall,
        started: float,
        outcome: Literal["ok", "denied", "error"],
        code: str | None,
        result: Any,
        flags: tuple[str, ...],
        message: str,
        rule: str | None = None,
    ) -> bool:
        if self._audit is None or getattr(self._audit, "discards_records", False):
            return True
        effect = "allow" if outcome == "ok" else "deny"
        record = CallRecord(
            kind=call.kind,
            trace_id=call.trace_id,
            span_id=call.span_id,
            parent_span_id=call.parent_span_id,
            session_id=call.session_id,
            identity={"user": call.identity.user, "roles": list(call.identity.roles),
                      "source": call.identity.source, "client": call.identity.client},  # fmt: skip
            model=call.model,
            server=call.server,
            tool=call.tool,
            exposed_name=call.exposed_name,
            tool_digest=None,
            arguments=call.arguments,
            decision={"effect": effect, "rule_id": rule or f"relay:{call.kind}", "reasons": [message] if message else [],
                      "risk": "medium", "approval": None},  # fmt: skip
            outcome=outcome,
            error_code=code,
            duration_ms=(time.perf_counter() - started) * 1000.0,
            result=result if result is not None else ({"message": message} if message else None),
            result_flags=flags,
        )
        try:
            await self._audit.record_call(record)
        except AuditUnavailable:
            self.counters.audit_unavailable_denials += 1
            return False
        except Exception:  # an audit failure withholds the answer (fail closed)
            self.counters.audit_errors += 1
            log.exception("audit could not record a relayed %s request", call.kind)
            return False
        return True

    # -- notifications -----------------------------------------------------------------------------

    async def log(self, server: str, params: dict[str, Any], target: Downstream | None) -> None:
        if target is None:
            self.counters.dropped_notifications += 1
            return
        level = str(params.get("level", "info"))
        data = _map_strings(params.get("data"), lambda text: self._redact(_bounded(text)))
        if self._inspector is not None:
            texts = tuple(_strings(data))
            if texts:
                call = _call_of(target, server, "log", {})
                seen = self._inspector.inspect(call, ResultView.of_texts(*texts))
                if seen.action != "deliver" or "injection" in seen.flags or "truncated" in seen.flags:
                    self.counters.dropped_notifications += 1
                    data = f"[a log message of {server!r} was withheld by checkrein: prompt injection signals]"
        upstream_logger = params.get("logger")
        name = f"{server}/{upstream_logger}" if isinstance(upstream_logger, str) and upstream_logger else server
        try:
            await target.log(level if level in _LEVELS else "info", data, name)
        except Exception as exc:  # noqa: BLE001 - the client went away: a log line is not worth more than a count
            self.counters.dropped_notifications += 1
            log.debug("relaying a log message of %r failed: %s", server, exc)
            return
        self.counters.relayed_notifications += 1

    async def progress_message(self, server: str, message: str, target: Downstream) -> str:
        """A progress notification's message, masked for secrets; withheld (a note instead) when it
        carries an injection, or when it cannot be checked (fail closed: the numbers still go)."""
        try:
            text = self._redact(_bounded(message))
            if self._inspector is not None:
                seen = self._inspector.inspect(_call_of(target, server, "progress", {}), ResultView.of_texts(text))
                if seen.action != "deliver" or "injection" in seen.flags or "truncated" in seen.flags:
                    self.counters.withheld_progress_messages += 1
                    return f"[a progress message of {server!r} was withheld by checkrein: prompt injection signals]"
        except Exception:  # fail closed: text that could not be checked is not shown
            self.counters.withheld_progress_messages += 1
            log.exception("checking a progress message of %r failed", server)
            return f"[a progress message of {server!r} was withheld by checkrein: it could not be checked]"
        return text

    async def resource_updated(self, server: str, uri: str) -> None:
        if self._state is None:
            return
        await self._tell("resource_updated", self._state().names.uri(server, uri))

    async def list_changed(self, server: str, kind: Literal["resources", "prompts"]) -> None:
        await self._tell("list_changed", kind)

    async def _tell(self, event: str, value: str) -> None:
        if not self._listeners:
            self.counters.dropped_notifications += 1
            return
        for listener in list(self._listeners):
            try:
                with anyio.fail_after(10):
                    await listener(event, value)
                self.counters.relayed_notifications += 1
            except Exception:  # one client that went away must not stop the others
                self.counters.dropped_notifications += 1
                log.debug("relay listener failed on %s", event, exc_info=True)


def _call_of(target: Downstream | None, server: str, kind: str, params: dict[str, Any]) -> ToolCall:
    base = target.call() if target is not None else None
    if isinstance(base, ToolCall):
        return ToolCall(base.identity, base.session_id, base.trace_id, base.span_id, f"{server}/{kind}", params,
                        server, kind, base.span_id, kind, base.model)  # type: ignore[arg-type]  # fmt: skip
    nobody = Identity("unknown", source="anonymous", authenticated=False)
    return ToolCall(nobody, "", "0" * 32, "0" * 16, f"{server}/{kind}", params, server, kind, None, kind)  # type: ignore[arg-type]


def _texts(params: dict[str, Any]) -> list[str]:
    """The text an upstream's sampling or elicitation request shows a model or a person."""
    out: list[str] = []
    for key in ("systemPrompt", "message"):
        value = params.get(key)
        if isinstance(value, str):
            out.append(value)
    for message in params.get("messages") or ():
        content = message.get("content") if isinstance(message, dict) else None
        blocks = content if isinstance(content, list) else [content]
        out.extend(b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str))
    schema = params.get("requestedSchema")
    if isinstance(schema, dict):
        out.extend(_strings(schema))
    return out


def _strings(value: Any, depth: int = 0) -> list[str]:
    if depth > 32:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k, depth + 1), *_strings(v, depth + 1))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v, depth + 1)]
    return []


MAX_NOTE_CHARS = 16_384
"""Longest text of a log or progress message relayed: what is checked is what goes on, and a
longer text is cut first (so neither the secret finder's nor the inspector's own bound leaves an
unchecked tail for the client to read)."""


def _bounded(text: str) -> str:
    if len(text) <= MAX_NOTE_CHARS:
        return text
    return text[:MAX_NOTE_CHARS] + f" [... {len(text) - MAX_NOTE_CHARS} characters cut by checkrein]"


def _map_strings(value: Any, fn: Callable[[str], str], depth: int = 0) -> Any:
    if depth > 32:
        return None
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {k: _map_strings(v, fn, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_strings(v, fn, depth + 1) for v in value]
    return value


def _redactor() -> Callable[[str], str]:
    from checkrein.policy.analyzers import redact_secrets

    def redact(text: str) -> str:
        return redact_secrets(text)[0]

    return redact
