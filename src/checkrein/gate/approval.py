"""Approvers (`[approval] mode`) and the binding of a grant to one call's arguments and policy.

Modes:

- ``auto``     grants low and medium risk, refuses high, critical and unknown risk; no human.
- ``cli``      a y/N prompt on the controlling terminal (``/dev/tty``), NEVER on stdin/stdout, which
               carry the MCP stdio stream; one prompt at a time; no terminal -> error (deny).
- ``webhook``  POSTs a JSON summary of the call to ``approval.webhook_url`` and expects
               ``{"decision": "allow" | "deny", "reason": "..."}``; anything else is an error (deny).
- ``elicit``   asks the MCP client through elicitation, via an `Elicitor` the frontend provides
               (`SessionElicitor`: the frontend registers each call's client session and request
               id; it sends a one-checkbox form with `elicit_approval`); without one, or when the client does not support
               form elicitation, the call is denied.
- ``deny``     refuses everything that asks.

`BoundApprover` wraps any of them: it checks that the request's ``args_digest`` is the digest of the
call's arguments, answers from the gate's one grant cache (`checkrein.gate.grants`, keyed by
identity, session, exposed name, args digest and policy digest) until a grant's expiry
(``ttl_s``), so a grant can never be replayed for other arguments, by another identity, in another
session, or after the policy changed, and turns a timeout or any approver error into `ApprovalError`
(``approval.failed``).
An explicit "no" is a normal `ApprovalResult(granted=False)`.
"""

from __future__ import annotations

import functools
import json
import os
import re
import select
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, Protocol

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.shared.exceptions import NoBackChannelError

from checkrein.audit.redact import Redactor
from checkrein.canonical import canonical_json, digest
from checkrein.config import ApprovalSettings
from checkrein.errors import ApprovalError, ConfigError
from checkrein.policy import ToolCall

from .grants import GrantKey, InProcessGrants
from .seams import ApprovalRequest, ApprovalResult, Approver, GrantStore

__all__ = [
    "AutoApprover",
    "BoundApprover",
    "CliApprover",
    "DenyApprover",
    "ElicitAnswer",
    "InputRequired",
    "ElicitApprover",
    "ElicitingSession",
    "Elicitor",
    "SessionElicitor",
    "WebhookApprover",
    "build_approver",
    "elicit_approval",
    "printable",
    "request_summary",
]

Clock = Callable[[], float]
ElicitAnswer = Literal["accept", "decline", "cancel", "unsupported", "input_required"]
Elicitor = Callable[[ApprovalRequest], Awaitable[ElicitAnswer]]
"""Provided by the frontend: ask the client of ``request.call.session_id`` to confirm ``request.summary``
through MCP elicitation. Return ``unsupported`` when that client did not declare the capability."""


class InputRequired(Exception):
    """The approver can only ask this client through the 2026-07-28 ``input_required`` round
    trip: the gate answers the call with the approval form instead of denying it."""

    def __init__(self, request: ApprovalRequest) -> None:
        super().__init__("approval needs the client's input")
        self.request = request


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str, limit: int = 1000) -> str:
    """``text`` safe to show a human: control, bidi and zero-width characters escaped, length capped.

    The summary carries argument previews chosen by the model (or by whoever injected it): raw
    escape sequences could repaint the terminal and make a dangerous call look harmless.
    """
    out = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text)
    return out if len(out) <= limit else out[: limit - 3] + "..."


@functools.cache
@functools.cache
def _redactor() -> Redactor:
    """Masks what an approver is shown with the finder the gate's audit uses (`gate.factory`)."""
    from checkrein.policy.analyzers import find_secrets
    from checkrein.policy.analyzers.secrets import may_find

    return Redactor(secret_finder=find_secrets, secret_prefilter=lambda text: may_find(text, None))


def mask_secret_key(key: str) -> str:
    """An argument's object key as approvers see it: a key can be the secret (`{"ghp_...": 1}`),
    and is masked as the audit masks keys."""
    return _redactor().mask_text(key)[0] if len(key) >= 6 else key


def request_summary(request: ApprovalRequest) -> dict[str, Any]:
    """The JSON a webhook receives. Argument values appear only inside ``summary``, the gate's
    preview with the decision's redactions already masked; the arguments themselves are bound by
    ``args_digest``. The argument keys a secret may be (`{"ghp_...": 1}`) are masked as the audit
    masks them, in the summary, the reasons and the findings' pointers."""
    call, d, r = request.call, request.decision, _redactor()
    paths = {f.path: r.mask_pointer(f.path) for f in d.findings}

    def reason(text: str) -> str:
        # A reason names a finding's place by its escaped pointer (`/opts/https:~1~1...`), which
        # the finder may not read as the secret the key is: put the masked pointer in first.
        for raw, safe in paths.items():
            if raw != safe:
                text = text.replace(raw, safe)
        return r.mask_text(text)[0]

    return {
        "exposed_name": call.exposed_name,
        "server": call.server,
        "tool": call.tool,
        "identity": {"user": call.identity.user, "roles": list(call.identity.roles), "source": call.identity.source},
        "session_id": call.session_id,
        "trace_id": call.trace_id,
        "risk": d.risk,
        "rule_id": d.rule_id,
        "reasons": [reason(text) for text in d.reasons],
        "findings": [{**f.as_dict(), "path": paths[f.path], "message": reason(f.message)} for f in d.findings],
        "args_digest": request.args_digest,
        "policy_digest": request.policy_digest,
        # The gate's summary masks each key on its own (`mask_secret_key`): the JSON as one text
        # hides a key's secret from the finder (`"-u bob:pw"` has a quote where `-u` needs a space).
        "summary": printable(r.mask_text(request.summary)[0]),
    }


_RISK_ORDER = ("low", "medium", "high", "critical")


class AutoApprover:
    """Grants risks up to ``max_risk`` (default medium); refuses the rest, unknown risk, and any ask
    caused by argument findings."""

    name = "auto"

    def __init__(self, max_risk: str = "medium") -> None:
        self.max_risk = max_risk

    async def approve(self, request: ApprovalRequest) -> ApprovalResult:
        risk = request.decision.risk
        if request.decision.findings:
            # The ask came from what the arguments contain (a secret, an injection pattern), not
            # from the tool's risk: nothing automatic may wave that through.
            kinds = ", ".join(sorted({f"{f.analyzer}:{f.kind}" for f in request.decision.findings}))
            if all(f.analyzer == "flow" for f in request.decision.findings):
                return ApprovalResult(False, self.name, f"the session's flow rules ({kinds}) need a human approver")
            return ApprovalResult(False, self.name, f"argument findings ({kinds}) need a human approver")
        if risk in _RISK_ORDER and _RISK_ORDER.index(risk) <= _RISK_ORDER.index(self.max_risk):
            return ApprovalResult(True, self.name, f"{risk} risk is approved automatically")
        return ApprovalResult(False, self.name, f"{risk} risk needs a human approver (approval mode is auto)")


class DenyApprover:
    name = "deny"

    async def approve(self, request: ApprovalRequest) -> ApprovalResult:
        return ApprovalResult(False, self.name, "approval mode is deny: calls that need approval are refused")


class CliApprover:
    """A y/N prompt on the controlling terminal. ``tty_path`` is for tests (a pty)."""

    name = "cli"

    def __init__(self, tty_path: str = "/dev/tty", timeout_s: float = 60.0) -> None:
        self.tty_path = tty_path
        self.timeout_s = timeout_s
        self._one_at_a_time = anyio.Lock()

    async def approve(self, request: ApprovalRequest) -> ApprovalResult:
        async with self._one_at_a_time:
            answer = await anyio.to_thread.run_sync(self._prompt, request.summary, abandon_on_cancel=True)
        if answer in ("y", "yes"):
            return ApprovalResult(True, self.name, "approved at the terminal")
        return ApprovalResult(False, self.name, "refused at the terminal" if answer else "no answer at the terminal")

    def _prompt(self, summary: str) -> str:
        # The prompt thread ends on its own at the deadline (select with a timeout), so a cancelled
        # approval never leaves a thread blocked on the terminal forever.
        try:
            fd = os.open(self.tty_path, os.O_RDWR | os.O_NOCTTY)
        except OSError as exc:
            raise ApprovalError(f"no controlling terminal for approval prompts ({exc.strerror})") from exc
        try:
            os.write(fd, f"\ncheckrein: approve? {printable(summary)}\n[y/N] ".encode("utf-8", "replace"))
            deadline = time.monotonic() + self.timeout_s
            buf = b""
            while b"\n" not in buf and b"\r" not in buf and len(buf) < 256:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return ""
                ready, _, _ = select.select([fd], [], [], min(remaining, 0.2))
                if ready:
                    chunk = os.read(fd, 64)
                    if not chunk:
                        break
                    buf += chunk
            return buf.decode("utf-8", "replace").strip().lower()
        finally:
            os.close(fd)


class WebhookApprover:
    """POST the call summary; the answer must be ``{"decision": "allow"|"deny", "reason": str?}``."""

    name = "webhook"

    def __init__(self, url: str, headers: Mapping[str, str] | None = None, timeout_s: float = 60.0) -> None:
        self.url = url
        self.headers = dict(headers or {})
        self.timeout_s = timeout_s

    async def approve(self, request: ApprovalRequest) -> ApprovalResult:
        import httpx2  # the HTTP client the mcp SDK ships; imported late to keep the CLI start fast

        body = canonical_json(request_summary(request))
        async with httpx2.AsyncClient(timeout=self.timeout_s, follow_redirects=False) as client:
            response = await client.post(
                self.url, content=body, headers={**self.headers, "content-type": "application/json"}
            )
        if response.status_code // 100 != 2:
            raise ApprovalError(f"webhook answered HTTP {response.status_code}")
        try:
            answer = json.loads(response.content)
        except ValueError as exc:
            raise ApprovalError("webhook answer is not JSON") from exc
        if not isinstance(answer, dict) or answer.get("decision") not in ("allow", "deny"):
            raise ApprovalError('webhook answer must be {"decision": "allow" | "deny"}')
        reason = answer.get("reason")
        reason = reason if isinstance(reason, str) else ""
        return ApprovalResult(answer["decision"] == "allow", self.name, reason[:500])


_APPROVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approve": {"type": "boolean", "title": "Allow this tool call?", "default": False}},
    "required": ["approve"],
}


class ElicitingSession(Protocol):
    """The part of `mcp.server.session.ServerSession` elicitation needs."""

    def check_client_capability(self, capability: types.ClientCapabilities) -> bool: ...

    async def elicit_form(
        self,
        message: str,
        requested_schema: dict[str, Any],
        related_request_id: types.RequestId | None = None,
    ) -> types.ElicitResult: ...


def approval_message(request: ApprovalRequest) -> str:
    """The question a person is asked, with every argument (see `gate.steps.approval_text`)."""
    return printable(f"checkrein: approve this tool call? {request.summary} (rule {request.decision.rule_id})", 20_000)


def approval_form() -> dict[str, Any]:
    return dict(_APPROVE_SCHEMA)


async def elicit_approval(
    session: ElicitingSession, request: ApprovalRequest, related_request_id: types.RequestId | None = None
) -> ElicitAnswer:
    """Ask the client behind ``session`` to approve ``request`` with a one-checkbox form.

    ``unsupported`` when the client did not declare form elicitation or the transport has no
    back-channel for it; ``accept`` only when the user accepted AND ticked ``approve``.
    """
    wanted = types.ClientCapabilities(elicitation=types.ElicitationCapability(form=types.FormElicitationCapability()))
    legacy = types.ClientCapabilities(elicitation=types.ElicitationCapability())
    if not (session.check_client_capability(wanted) or session.check_client_capability(legacy)):
        return "unsupported"
    message = approval_message(request)
    try:
        result = await session.elicit_form(message, _APPROVE_SCHEMA, related_request_id)
    except NoBackChannelError:
        # The 2026-07-28 era has no server-to-client requests inside a call: no way to ask.
        return "unsupported"
    if result.action == "accept":
        return "accept" if (result.content or {}).get("approve") is True else "decline"
    return result.action


class SessionElicitor:
    """An `Elicitor` for the frontend: each call in progress registers the client session it came
    from and its request id; an approval request finds the entry of its own call.

    Entries are per call (session id and span id, which the frontend draws fresh for every
    request), not per session: two calls of one session can wait for approval at the same time,
    and each must be asked as part of its own request (over Streamable HTTP, on that request's
    stream), and the end of one must not take away the other's entry.
    """

    def __init__(self) -> None:
        self._calls: dict[tuple[str, str], tuple[ElicitingSession, types.RequestId | None]] = {}

    def register(self, call: ToolCall, session: ElicitingSession, related_request_id: types.RequestId | None = None) -> None:
        self._calls[(call.session_id, call.span_id)] = (session, related_request_id)

    def unregister(self, call: ToolCall) -> None:
        self._calls.pop((call.session_id, call.span_id), None)

    async def __call__(self, request: ApprovalRequest) -> ElicitAnswer:
        found = self._calls.get((request.call.session_id, request.call.span_id))
        if found is None:
            return "unsupported"
        session, related_request_id = found
        if not getattr(session, "can_send_request", True) and _asks_by_input_required(session):
            return "input_required"
        return await elicit_approval(session, request, related_request_id)


class ElicitApprover:
    name = "elicit"

    def __init__(self, elicitor: Elicitor | None) -> None:
        self.elicitor = elicitor

    async def approve(self, request: ApprovalRequest) -> ApprovalResult:
        if self.elicitor is None:
            return ApprovalResult(False, self.name, "approval by elicitation is not available on this frontend")
        answer = await self.elicitor(request)
        if answer == "input_required":
            raise InputRequired(request)
        if answer == "accept":
            return ApprovalResult(True, self.name, "approved by the client")
        if answer == "unsupported":
            return ApprovalResult(False, self.name, "the client does not support elicitation")
        return ApprovalResult(False, self.name, f"the client answered {answer}")


class BoundApprover:
    """Binds grants to a `GrantKey` (identity, session, exposed name, args digest, policy digest)
    with an expiry; fails closed.

    ``clock`` is wall time (``time.time``) so ``expires_at`` means the same to every reader; tests
    pass a fake. ``grants`` is where grants live (default: `InProcessGrants` holding at most
    ``max_grants``, oldest dropped first).
    """

    def __init__(
        self,
        inner: Approver,
        *,
        ttl_s: float,
        timeout_s: float,
        clock: Clock,
        max_grants: int = 10_000,
        grants: GrantStore | None = None,
    ) -> None:
        self.inner = inner
        self.ttl_s = ttl_s
        self.timeout_s = timeout_s
        self.clock = clock
        self._grants: GrantStore = grants if grants is not None else InProcessGrants(max_grants)
        self.failures = 0
        """Count of approver errors and timeouts (each denied the call)."""

    @property
    def name(self) -> str:
        return str(getattr(self.inner, "name", type(self.inner).__name__))

    async def approve(self, request: ApprovalRequest) -> ApprovalResult:
        """A cached or fresh answer. Raises `ApprovalError` on a digest mismatch, timeout or error."""
        call = request.call
        if digest(call.arguments) != request.args_digest:
            self.failures += 1
            raise ApprovalError("the approval request's args_digest does not match the call's arguments")
        key = GrantKey.of(call, request.args_digest, request.policy_digest)
        grant = await self._grants.get(key, self.clock())
        if grant is not None and not grant.granted:
            return grant  # an answered "no" (an input_required round) stands until it expires
        if grant is not None:
            return ApprovalResult(True, grant.approver, f"{grant.reason} (reused grant)".strip(), grant.expires_at)
        try:
            with anyio.fail_after(self.timeout_s):
                result = await self.inner.approve(request)
        except TimeoutError as exc:
            self.failures += 1
            raise ApprovalError(f"no approval answer within {self.timeout_s:g} s") from exc
        except InputRequired:
            raise
        except ApprovalError:
            self.failures += 1
            raise
        except Exception as exc:  # fail closed: any approver failure denies (re-raised as ApprovalError)
            self.failures += 1
            raise ApprovalError(f"the {self.name} approver failed ({type(exc).__name__}: {exc})") from exc
        if not result.granted:
            return result
        granted = ApprovalResult(True, result.approver, result.reason, self.clock() + self.ttl_s)
        await self._grants.put(key, granted)
        return granted


    async def answer(self, key: GrantKey, granted: bool, approver: str, reason: str) -> ApprovalResult:
        """Record an answer given outside `approve` (an ``input_required`` round): a grant, or a
        refusal that stands for the same call until it expires."""
        result = ApprovalResult(granted, approver, reason, self.clock() + self.ttl_s)
        await self._grants.put(key, result)
        return result


def _asks_by_input_required(session: Any) -> bool:
    """A 2026-07-28 client that declared form elicitation: it answers approvals by input_required."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    if getattr(session, "protocol_version", None) not in MODERN_PROTOCOL_VERSIONS:
        return False
    caps = getattr(session, "client_capabilities", None)
    return caps is not None and caps.elicitation is not None


def build_approver(
    settings: ApprovalSettings,
    *,
    clock: Clock,
    elicitor: Elicitor | None = None,
    tty_path: str = "/dev/tty",
    grants: GrantStore | None = None,
) -> BoundApprover:
    """The approver ``[approval]`` asks for, wrapped in `BoundApprover`.

    Raises ``ConfigError`` when mode ``webhook`` has no URL. (``${VAR}`` references in the
    webhook headers were resolved when the config was loaded.)
    """
    inner: Approver
    if settings.mode == "auto":
        inner = AutoApprover(settings.auto_max_risk)
    elif settings.mode == "deny":
        inner = DenyApprover()
    elif settings.mode == "cli":
        inner = CliApprover(tty_path, settings.timeout_s)
    elif settings.mode == "webhook":
        if not settings.webhook_url:
            raise ConfigError("approval mode 'webhook' needs `webhook_url`", key="approval.webhook_url")
        inner = WebhookApprover(settings.webhook_url, dict(settings.webhook_headers), settings.timeout_s)
    else:
        inner = ElicitApprover(elicitor)
    return BoundApprover(inner, ttl_s=settings.ttl_s, timeout_s=settings.timeout_s, clock=clock, grants=grants)
