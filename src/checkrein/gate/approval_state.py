"""Approvals for clients without a back channel: the 2026-07-28 multi-round ``input_required`` flow.

A 2026-era client cannot be sent an elicitation in the middle of a call. So when a call needs
approval by elicitation, the gate answers it with an ``InputRequiredResult`` holding the approval
form and a sealed ``requestState``; the client asks its user and retries the same call with the
answer. The seal binds the answer to exactly what was shown: the identity, the session, the tool,
the argument digest and the policy digest, with an expiry. A state that was altered, that belongs
to another call or caller, or that expired is refused, and the call is asked about again.

The seal is an HMAC-SHA256 (`RequestSealer`) under a key derived from `[approval] state_key` (a
``${VAR}`` every replica of a fleet shares), else under a key created per gateway process: then a
retry that lands on another replica is simply asked again.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp.types as types

from checkrein.canonical import digest
from checkrein.policy import ToolCall

from .approval import BoundApprover, approval_form, approval_message
from .grants import GrantKey
from .seams import ApprovalRequest, Approver

__all__ = ["APPROVAL_INPUT_KEY", "RequestSealer", "SealedApproval", "accept_input", "input_required"]

APPROVAL_INPUT_KEY = "checkrein.approval"
"""The key of the approval form in ``inputRequests`` (and of the answer in ``inputResponses``)."""

_VERSION = "cr1"


@dataclass(frozen=True, slots=True)
class SealedApproval:
    key: GrantKey
    expires_at: float


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class RequestSealer:
    def __init__(self, key: bytes | None = None) -> None:
        self._key = key if key else secrets.token_bytes(32)

    @classmethod
    def from_secret(cls, secret: str | None) -> RequestSealer:
        """A sealer keyed by ``secret`` (`[approval] state_key`), or by a random per-process key."""
        if not secret:
            return cls()
        return cls(hashlib.sha256(b"checkrein approval state v1\0" + secret.encode("utf-8")).digest())

    def seal(self, key: GrantKey, expires_at: float) -> str:
        body = json.dumps(
            {"i": key.identity, "s": key.session_id, "t": key.exposed, "a": key.args_digest, "p": key.policy_digest,
             "e": round(expires_at, 3), "n": secrets.token_hex(8)},  # fmt: skip
            separators=(",", ":"),
            sort_keys=True,
        ).encode("utf-8")
        mac = hmac.new(self._key, body, hashlib.sha256).digest()
        return f"{_VERSION}.{_b64(body)}.{_b64(mac)}"

    def open(self, state: str, now: float) -> SealedApproval | None:
        """The sealed approval in ``state``, or ``None`` when it is not ours, altered or expired."""
        try:
            version, body_text, mac_text = state.split(".")
            if version != _VERSION:
                return None
            body, mac = _unb64(body_text), _unb64(mac_text)
        except (ValueError, UnicodeError):
            return None
        if not hmac.compare_digest(hmac.new(self._key, body, hashlib.sha256).digest(), mac):
            return None
        try:
            doc = json.loads(body)
            key = GrantKey(str(doc["i"]), str(doc["s"]), str(doc["t"]), str(doc["a"]), str(doc["p"]))
            expires = float(doc["e"])
        except (ValueError, KeyError, TypeError):
            return None
        if expires <= now:
            return None
        return SealedApproval(key, expires)


def input_required(sealer: RequestSealer, pending: ApprovalRequest, timeout_s: float) -> types.InputRequiredResult:
    """The 2026-era answer to a call that needs approval: the form, and a state sealed for
    ``timeout_s`` that binds the answer to this identity, session, tool, argument digest and
    policy digest."""
    key = GrantKey.of(pending.call, pending.args_digest, pending.policy_digest)
    state = sealer.seal(key, time.time() + timeout_s)
    form = types.ElicitRequestFormParams(message=approval_message(pending), requested_schema=approval_form())
    return types.InputRequiredResult(
        input_requests={APPROVAL_INPUT_KEY: types.ElicitRequest(params=form)}, request_state=state
    )


async def accept_input(
    approver: Approver | None,
    sealer: RequestSealer,
    call: ToolCall,
    state: str | None,
    responses: Mapping[str, Any] | None,
    policy_digest: str,
) -> str:
    """Take a 2026-era client's answer to an approval form. Returns what happened (``granted``,
    ``declined``, or why the answer was ignored); the call then runs as usual, and is asked
    again when the answer was ignored. Never raises."""
    if not isinstance(approver, BoundApprover) or state is None:
        return "ignored: no approval state"
    sealed = sealer.open(state, time.time())
    if sealed is None:
        return "ignored: the approval state is not this gateway's, was altered, or expired"
    expected = GrantKey.of(call, digest(call.arguments), policy_digest)
    if sealed.key != expected:
        return "ignored: the approval state belongs to another call, caller, session or policy"
    answer = (responses or {}).get(APPROVAL_INPUT_KEY)
    if not isinstance(answer, types.ElicitResult):
        return "ignored: no answer to the approval form"
    approved = answer.action == "accept" and (answer.content or {}).get("approve") is True
    reason = "approved by the client (input_required)" if approved else f"the client answered {answer.action}"
    await approver.answer(expected, approved, "elicit", reason)
    return "granted" if approved else "declined"
