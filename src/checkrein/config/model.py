"""The one validated `Config` object and `load_config`."""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from checkrein.errors import ConfigError

from ._locate import locate
from .audit import AuditSettings
from .gateway import GatewaySettings, IdentityConfig, ServerConfig
from .policy import ApprovalSettings, BudgetSettings, PolicySettings

__all__ = ["Config", "expand_env", "load_config", "parse_config"]

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class Config(BaseModel):
    """Everything checkrein reads from one TOML file, validated once."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gateway: GatewaySettings = GatewaySettings()
    servers: tuple[ServerConfig, ...] = ()
    identities: tuple[IdentityConfig, ...] = ()
    policy: PolicySettings = PolicySettings()
    approval: ApprovalSettings = ApprovalSettings()
    budgets: BudgetSettings = BudgetSettings()
    audit: AuditSettings = AuditSettings()

    source: str | None = Field(None, exclude=True)
    """Path of the file this config was read from (not part of the TOML)."""

    @model_validator(mode="after")
    def _cross_checks(self) -> Config:
        seen: set[str] = set()
        prefixes: dict[str, str] = {}
        for s in self.servers:
            if s.name in seen:
                raise ValueError(f"duplicate server name {s.name!r}")
            seen.add(s.name)
            prefix = s.exposed_prefix
            if self.gateway.separator in prefix:
                what = "server name" if s.prefix is None else "prefix"
                raise ValueError(f"{what} {prefix!r} of server {s.name!r} contains the separator {self.gateway.separator!r}")
            if prefix and prefix in prefixes:
                raise ValueError(
                    f"servers {prefixes[prefix]!r} and {s.name!r} both expose their tools under the prefix "
                    f"{prefix!r}; give one of them another `prefix`"
                )
            if prefix:
                prefixes[prefix] = s.name
        names = [i.name for i in self.identities]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate identity name(s) {dup}")
        return self

    @property
    def base_dir(self) -> Path:
        return Path(self.source).resolve().parent if self.source else Path.cwd()

    @property
    def lock_path(self) -> Path:
        if self.gateway.lock_file:
            return self.base_dir / self.gateway.lock_file
        return self.base_dir / "checkrein.lock"

    @property
    def audit_dir(self) -> Path | None:
        return self.base_dir / self.audit.dir if self.audit.dir else None

    def server(self, name: str) -> ServerConfig:
        for s in self.servers:
            if s.name == name:
                return s
        raise KeyError(name)


def expand_env(value: str, env: Mapping[str, str] | None = None) -> str:
    """Replace `${VAR}` and `${VAR:-default}` in ``value``; an unset variable without a default
    raises ``ConfigError`` naming it."""
    environ = os.environ if env is None else env

    def sub(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        raise ConfigError(f"environment variable {name} is not set", key=name, code="config.env_unset")

    return _ENV.sub(sub, value)


def _loc_str(loc: tuple[str | int, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out


def parse_config(text: str, *, source: str = "<config>") -> Config:
    """Validate TOML ``text``; raises ``ConfigError`` naming ``source``, the line and the key."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise ConfigError(f"malformed TOML: {exc}", file=source, line=int(m.group(1)) if m else None) from exc
    return config_from_mapping(data, source=source, text=text)


def config_from_mapping(data: Mapping[str, Any], *, source: str = "<config>", text: str = "") -> Config:
    try:
        return Config.model_validate({**data, "source": source if source != "<config>" else None})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        # pydantic adds the literal/union variant to the loc; drop names that are not config keys
        loc = tuple(p for p in loc if p not in ("literal['deny']",))
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key (not part of checkrein's config)"
        line = locate(text, loc) if text else None
        more = f" (and {len(exc.errors()) - 1} more error(s))" if len(exc.errors()) > 1 else ""
        raise ConfigError(msg + more, file=source, line=line, key=_loc_str(loc) or None) from exc


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and validate the TOML file at ``path``."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read config: {exc.strerror}", file=str(p)) from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError("config is not valid UTF-8", file=str(p)) from exc
    return parse_config(text, source=str(p))
