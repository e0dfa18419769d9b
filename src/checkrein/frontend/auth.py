"""Who may call the HTTP frontend: bearer tokens, identities, and allowed Origins.

Pure over headers, so it is testable without a server. Tokens come from the loaded config, whose
``${ENV}`` references (and the env ``CHECKREIN_TOKEN`` fallback) were resolved, and checked not
empty, when it was loaded: ``gateway.token``, and each ``[[identities]]`` token, which maps to a
named identity with roles.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from checkrein.config import CREDENTIALS, Config
from checkrein.errors import ConfigError
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
    def from_config(cls, config: Config) -> Authenticator:
        """The tokens of ``config``. Raises ``ConfigError`` when two identities share a token (one
        of them could never be told apart) or when a token's variable is unset."""
        config.require_resolved(CREDENTIALS, "HTTP authentication")
        table: dict[str, Identity] = {}
        for i, ident in enumerate(config.identities):
            if not ident.token.strip():  # the loader refuses these; a hand-built Config must too
                raise ConfigError("identity token is empty", file=config.source, key=f"identities[{i}].token")
            if ident.token in table:
                raise ConfigError(
                    f"identities {table[ident.token].user!r} and {ident.name!r} have the same token",
                    file=config.source, key=f"identities[{i}].token",
                )
            table[ident.token] = Identity(ident.name, tuple(ident.roles), "token")
        token = config.gateway.token
        if token is not None and not token.strip():
            raise ConfigError("gateway token is empty", file=config.source, key="gateway.token")
        return cls(token, table)

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
