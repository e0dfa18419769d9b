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
from dataclasses import dataclass

from .grants import GrantKey

__all__ = ["APPROVAL_INPUT_KEY", "RequestSealer", "SealedApproval"]

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
