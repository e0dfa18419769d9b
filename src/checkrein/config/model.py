"""The one validated `Config` object and `load_config`."""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from checkrein.errors import ConfigError

from ._locate import locate
from ._syntax import syntax_problem
from .audit import DEFAULT_AUDIT_DIR, AuditSettings
from .env import Location, resolve_references, written_form
from .fleet import StateSettings, TelemetrySettings
from .gateway import GatewaySettings, IdentityConfig, ServerConfig
from .policy import ApprovalSettings, BudgetSettings, PolicySettings
from .problems import key_string, problems_of, raise_problems

__all__ = [
    "CREDENTIALS",
    "LAUNCH",
    "WEBHOOK",
    "Config",
    "UnsetPolicy",
    "config_from_mapping",
    "load_config",
    "parse_config",
]

CREDENTIALS: tuple[Location, ...] = (("gateway", "token"), ("identities", "*", "token"))
"""Where the HTTP frontend's tokens sit (``*`` matches any one part of a location)."""
LAUNCH: tuple[Location, ...] = tuple(("servers", "*", k) for k in ("command", "args", "env", "cwd", "url", "headers"))
"""How upstream servers are started or reached."""
WEBHOOK: tuple[Location, ...] = (("approval", "webhook_url"), ("approval", "webhook_headers"))
"""Where the approval webhook is and what it is sent."""


def _under(loc: Location, patterns: Collection[Location]) -> bool:
    return any(len(loc) >= len(p) and all(q in ("*", part) for q, part in zip(p, loc, strict=False)) for p in patterns)


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
    telemetry: TelemetrySettings = TelemetrySettings()
    state: StateSettings = StateSettings()

    source: str | None = Field(None, exclude=True)
    """Path of the file this config was read from (not part of the TOML)."""

    _written: dict[Location, str] = PrivateAttr(default_factory=dict)
    """Location -> the string as written, for each value a ``${VAR}`` reference gave."""
    _unresolved: dict[Location, str] = PrivateAttr(default_factory=dict)
    """Location -> the unset variable, where the loader was told the value is not used."""

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
        """Where the audit trail is written (`[audit] dir`, default `checkrein-audit` beside the
        config file); ``None`` only with ``[audit] enabled = false``."""
        if not self.audit.enabled:
            return None
        return (self.base_dir / (self.audit.dir or DEFAULT_AUDIT_DIR)).resolve()

    def server(self, name: str) -> ServerConfig:
        for s in self.servers:
            if s.name == name:
                return s
        raise KeyError(name)


    def require_resolved(self, where: Collection[Location], purpose: str) -> None:
        """Raise ``ConfigError`` naming each unset variable under ``where`` (location patterns
        such as `CREDENTIALS`) that the loader let through because it was declared unused:
        whatever is about to use those values (``purpose``) must not see a ``${VAR}`` instead."""
        missing = [(loc, var) for loc, var in self._unresolved.items() if _under(loc, where)]
        if missing:
            raise_problems(
                [ConfigError(f"environment variable {var} is not set; {purpose} needs it", file=self.source,
                             key=key_string(loc), code="config.env_unset") for loc, var in missing],
                file=self.source, code="config.env_unset",
            )

    def as_written(self) -> dict[str, Any]:
        """This config as a JSON-able mapping, with every string that came from a ``${VAR}``
        reference written as the reference, never its value.

        Use it for anything that leaves the process (the ledger, the audit's config digest,
        emitted configs): a secret read from the environment must not be copied out of it."""
        return written_form(self.model_dump(mode="json", exclude={"source"}), self._written)


_WHOLE_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")
_TOKEN_VARIABLE = "CHECKREIN_TOKEN"


def _as_written_checks(data: Mapping[str, Any], source: str | None, text: str) -> list[ConfigError]:
    """Rules about the text as written, checked before any reference is resolved."""
    out: list[ConfigError] = []
    identities = data.get("identities")
    for i, ident in enumerate(identities if isinstance(identities, list) else []):
        token = ident.get("token") if isinstance(ident, Mapping) else None
        if isinstance(token, str) and not _WHOLE_REFERENCE.fullmatch(token):
            loc: Location = ("identities", i, "token")
            out.append(ConfigError(
                "identity tokens must be a ${ENV_VAR} reference, never a literal secret",
                file=source, line=locate(text, loc) if text else None, key=key_string(loc),
                fix='Write token = "${VAR}" and set VAR in the gateway\'s environment.',
            ))
    approval = data.get("approval")
    key = approval.get("state_key") if isinstance(approval, Mapping) else None
    if isinstance(key, str) and not _WHOLE_REFERENCE.fullmatch(key):
        where: Location = ("approval", "state_key")
        out.append(ConfigError(
            "`state_key` must be a ${ENV_VAR} reference, never a literal secret",
            file=source, line=locate(text, where) if text else None, key=key_string(where),
            fix='Write state_key = "${VAR}" and set VAR (32 characters or more, the same on every replica).',
        ))
    return out


def _with_token_variable(data: dict[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    """Env ``CHECKREIN_TOKEN`` is the gateway token when ``[gateway] token`` is not written."""
    gateway = data.get("gateway", {})
    if _TOKEN_VARIABLE in environ and isinstance(gateway, Mapping) and "token" not in gateway:
        return {**data, "gateway": {**gateway, "token": "${" + _TOKEN_VARIABLE + "}"}}
    return data


def _malformed_toml(exc: tomllib.TOMLDecodeError, text: str, source: str) -> ConfigError:
    found = syntax_problem(text, exc)
    return ConfigError(f"malformed TOML: {found.message}", file=source, line=found.line, key=found.key, fix=found.fix)


def parse_config(
    text: str,
    *,
    source: str = "<config>",
    environ: Mapping[str, str] | None = None,
    unset: UnsetPolicy = "error",
    unused: Collection[Location] = (),
) -> Config:
    """Validate TOML ``text``; raises ``ConfigError`` naming ``source``, the line and the key of
    every problem (see `config_from_mapping` for ``environ`` and ``unset``)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _malformed_toml(exc, text, source) from exc
    return config_from_mapping(data, source=source, text=text, environ=environ, unset=unset, unused=unused)


UnsetPolicy = Literal["error", "keep"]
"""What an unset ``${VAR}`` is: an ``error`` (loading a config to run it), or ``keep`` it as
written (checking a config for another machine, e.g. `checkrein import` and `lint`)."""


def config_from_mapping(
    data: Mapping[str, Any],
    *,
    source: str = "<config>",
    text: str = "",
    environ: Mapping[str, str] | None = None,
    unset: UnsetPolicy = "error",
    unused: Collection[Location] = (),
) -> Config:
    """Resolve every ``${VAR}`` in ``data`` against ``environ`` (default ``os.environ``), then
    validate it. ``text`` (the TOML source) locates problems by line.

    An unset variable is an error, except with ``unset="keep"``, under the ``unused`` location
    patterns (`CREDENTIALS`, `LAUNCH`, `WEBHOOK`: what the caller will not use, e.g. tokens for
    a stdio gateway) and in disabled servers; there the value is kept as written, and
    `Config.require_resolved` refuses it to whoever would use it.

    Raises one ``ConfigError`` listing every problem (each in its ``problems``): unset
    variables, unknown keys with the closest known one, bad values, contradictions."""
    env = os.environ if environ is None else environ
    file = source
    problems = _as_written_checks(data, file, text)
    body = dict(data)
    if "source" in body:
        problems.append(ConfigError("unknown key `source` (not part of checkrein's config)", file=file,
                                    line=locate(text, ("source",)) if text else None, key="source"))
        del body["source"]
    resolution = resolve_references(_with_token_variable(body, env), env)
    unset_at: list[Location] = []
    unresolved: dict[Location, str] = {}
    servers = body.get("servers")
    off = [("servers", i) for i, s in enumerate(servers if isinstance(servers, list) else [])
           if isinstance(s, Mapping) and s.get("enabled") is False]
    for u in resolution.unset:
        if _under(u.location, off):
            continue  # a disabled server is never started: its values are never used
        if unset == "keep" or _under(u.location, unused):
            unresolved[u.location] = u.variable
        else:
            unset_at.append(u.location)
            problems.append(ConfigError(
                f"environment variable {u.variable} is not set", file=file,
                line=locate(text, u.location) if text else None, key=key_string(u.location),
                code="config.env_unset",
                fix=f"Export {u.variable} before starting checkrein, or write ${{{u.variable}:-default}}.",
            ))
    config: Config | None = None
    try:
        config = Config.model_validate({**resolution.data, "source": source if source != "<config>" else None})
    except ValidationError as exc:
        found = problems_of(exc, root=Config, file=file, text=text, written=resolution.written, empty=resolution.empty)
        # A value left unresolved fails its own validation too; its unset variable says it all.
        problems += [p for p in found if not any(_within(p.key, at) for at in unset_at)]
    if problems or config is None:
        codes = {p.code for p in problems}
        raise_problems(problems, file=file, code=codes.pop() if len(codes) == 1 else None)
    config._written = resolution.written
    config._unresolved = unresolved
    return config


def _within(key: str | None, at: Location) -> bool:
    written = key_string(at)
    return key is not None and (key == written or written.startswith(key + ".") or written.startswith(key + "["))


def load_config(
    path: str | os.PathLike[str],
    *,
    environ: Mapping[str, str] | None = None,
    unset: UnsetPolicy = "error",
    unused: Collection[Location] = (),
) -> Config:
    """Read and validate the TOML file at ``path``, every ``${VAR}`` resolved against ``environ``
    (default ``os.environ``; see `config_from_mapping`)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read config: {exc.strerror}", file=str(p)) from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError("config is not valid UTF-8", file=str(p)) from exc
    return parse_config(text, source=str(p), environ=environ, unset=unset, unused=unused)
