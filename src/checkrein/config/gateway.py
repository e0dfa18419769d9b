"""The `[gateway]`, `[[servers]]` and `[[identities]]` sections."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["GatewaySettings", "IdentityConfig", "SecurityLevel", "ServerConfig", "Transport"]

Transport = Literal["stdio", "sse", "streamable-http"]
SecurityLevel = Literal["low", "medium", "high"]

_SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_EMPTY_TOKEN = "the token is empty; an empty token would leave HTTP authentication off"


def _keys(keys: list[str]) -> str:
    listed = ", ".join(f"`{k}`" for k in keys)
    return f"{listed} makes no sense" if len(keys) == 1 else f"{listed} make no sense"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GatewaySettings(_Strict):
    name: str = "checkrein"
    separator: str = Field("__", min_length=1, max_length=4)
    token: str | None = None
    """Bearer token for the HTTP frontend; a literal or a `${ENV}` reference. Unset: env
    CHECKREIN_TOKEN when it is set. Never empty (an empty token would mean no authentication)."""
    allowed_origins: tuple[str, ...] = ()
    """Origins allowed to call the HTTP frontend besides loopback ones."""
    lock_file: str | None = None
    """Path of the pin file; default `checkrein.lock` beside the config."""

    @field_validator("token")
    @classmethod
    def _token_not_empty(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError(_EMPTY_TOKEN)
        return v

    @field_validator("separator")
    @classmethod
    def _separator_chars(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", v):
            raise ValueError("separator may only use characters allowed in MCP tool names: A-Z a-z 0-9 _ . -")
        return v


class ServerConfig(_Strict):
    name: str
    transport: Transport = "stdio"
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    security_level: SecurityLevel = "low"
    timeout_s: float = Field(30.0, gt=0, le=3600)
    identities: tuple[str, ...] = ()
    """For `security_level = "high"`: the identities (or roles) that may call this server."""
    enabled: bool = True
    sampling: Literal["allow", "deny"] | None = None
    """May this server ask the calling client's model for a completion (sampling/createMessage)?
    Default: allow, deny for `security_level = "high"`. Each request is inspected and audited."""
    elicitation: Literal["allow", "deny"] | None = None
    """May this server ask the calling client's user a question (elicitation/create)? Default as `sampling`."""
    roots: Literal["allow", "deny"] | None = None
    """May this server ask the calling client for its roots (roots/list)? Default as `sampling`."""
    prefix: str | None = None
    """What the server's tool and prompt names (`<prefix><separator><name>`) and resource URIs
    (`checkrein://<prefix>/...`) are exposed under. Default: the server's `name`. `""` exposes the
    upstream's own names and URIs unchanged (a client with fixed names can then use checkrein)."""

    @property
    def exposed_prefix(self) -> str:
        return self.name if self.prefix is None else self.prefix

    @field_validator("prefix")
    @classmethod
    def _prefix_shape(cls, v: str | None) -> str | None:
        if v and not _SERVER_NAME.fullmatch(v):
            raise ValueError(
                'a prefix uses 1-64 characters A-Z a-z 0-9 _ . - and starts with a letter or digit (or is "")'
            )
        return v

    @field_validator("transport", mode="before")
    @classmethod
    def _alias_http(cls, v: object) -> object:
        return "streamable-http" if v == "http" else v

    @field_validator("name")
    @classmethod
    def _name_shape(cls, v: str) -> str:
        if not _SERVER_NAME.fullmatch(v):
            raise ValueError(
                "server names use 1-64 characters A-Z a-z 0-9 _ . - and start with a letter or digit"
            )
        return v

    @model_validator(mode="after")
    def _fields_fit_transport(self) -> ServerConfig:
        if self.transport == "stdio":
            if not self.command:
                raise ValueError("a stdio server needs `command`")
            wrong = [k for k in ("url", "headers") if getattr(self, k)]
            if wrong:
                raise ValueError(f"{_keys(wrong)} for a stdio server (use `command`)")
        else:
            if not self.url:
                raise ValueError(f"a {self.transport} server needs `url`")
            if not re.match(r"^(https?://|\$\{)", self.url):
                raise ValueError("`url` must start with http:// or https:// (or be a ${VAR} reference)")
            wrong = [k for k in ("command", "args", "env", "cwd") if getattr(self, k)]
            if wrong:
                raise ValueError(f"{_keys(wrong)} for a {self.transport} server (use `url`)")
        return self


class IdentityConfig(_Strict):
    name: str = Field(min_length=1, max_length=128)
    token: str
    """Always written as a ``${ENV_VAR}`` reference (checked by the loader before resolving it)."""
    roles: tuple[str, ...] = ()

    @field_validator("token")
    @classmethod
    def _token_not_empty(cls, v: str) -> str:
        if not v.strip():
            raise ValueError(_EMPTY_TOKEN)
        return v
