"""Who may call the HTTP frontend: bearer tokens, identities, and allowed Origins.

Pure over headers, so it is testable without a server. Tokens come from config: ``gateway.token``
(a literal or ``${ENV}``) or env ``CHECKREIN_TOKEN``; each ``[[identities]]`` maps its own token
(always a ``${ENV}`` reference) to a named identity with roles.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from checkrein.config import Config, expand_env
from checkrein.policy import Identity

__all__ = ["LOOPBACK_HOSTS", "Authenticator", "origin_allowed"]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def origin_allowed(origin: str, allowed: tuple[str, ...]) -> bool:
    """True for loopback origins (any port, http or https) and for exact matches in ``allowed``."""
    normalized = origin.strip().rstrip("/").lower()
    if normalized in {a.strip().rstrip("/").lower() for a in allowed}:
        return True
    try:
        parts = urlsplit(normalized)
        host = parts.hostname
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and host in LOOPBACK_HOSTS


@dataclass(frozen=True)
class Authenticator:
    """Maps an ``Authorization`` header to an `Identity`, or ``None`` (-> HTTP 401)."""

    gateway_token: str | None
    identities: Mapping[str, Identity]
    """token -> identity, from ``[[identities]]``."""

    @property
    def required(self) -> bool:
        return bool(self.gateway_token or self.identities)

    @classmethod
    def from_config(cls, config: Config, environ: Mapping[str, str] | None = None) -> Authenticator:
        """Expand the configured tokens. Raises ``ConfigError`` naming an unset variable."""
        env = os.environ if environ is None else environ
        token = expand_env(config.gateway.token, env) if config.gateway.token else env.get("CHECKREIN_TOKEN")
        table: dict[str, Identity] = {}
        for ident in config.identities:
            secret = expand_env(ident.token, env)
            if secret:
                table[secret] = Identity(ident.name, tuple(ident.roles), "token")
        return cls(token or None, table)

    def identify(self, authorization: str | None) -> Identity | None:
        """The caller for this header; anonymous when no token is configured; ``None`` to refuse."""
        if not self.required:
            return Identity("anonymous", source="anonymous", authenticated=False)
        if not authorization:
            return None
        scheme, _, presented = authorization.partition(" ")
        if scheme.lower() != "bearer" or not presented.strip():
            return None
        presented = presented.strip()
        found: Identity | None = None
        # Compare against every token so timing does not reveal which one (or whether any) matched.
        for secret, ident in self.identities.items():
            if hmac.compare_digest(secret.encode(), presented.encode()):
                found = ident
        if self.gateway_token is not None and hmac.compare_digest(self.gateway_token.encode(), presented.encode()):
            found = found or Identity("token", source="token")
        return found
