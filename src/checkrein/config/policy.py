"""The `[policy]`, `[approval]` and `[budgets]` sections.

The policy engine (`checkrein.policy`) compiles these into a `CompiledPolicy`; here they are only
validated, including contradictions (a tool allowed and denied by exact name, unknown analyzers).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "ANALYZERS",
    "ApprovalSettings",
    "ArgConstraint",
    "ArgKind",
    "BudgetLimit",
    "BudgetSettings",
    "FindingEffect",
    "FlowEffect",
    "FlowLabel",
    "FlowSettings",
    "LimitSettings",
    "PolicySettings",
    "ResultSettings",
    "Risk",
    "ToolCategory",
    "ToolRule",
    "UrlSettings",
]

Risk = Literal["low", "medium", "high", "critical"]
FindingEffect = Literal["deny", "ask", "off"]
ArgKind = Literal["path", "url", "command", "query", "text", "secret"]
FlowLabel = Literal["untrusted", "private", "sink"]
"""Session flow labels of a tool (see `checkrein.policy.flow`)."""
FlowEffect = Literal["ask", "deny", "off"]
ToolCategory = Literal["read", "write", "delete", "exec"]
"""What a tool does, for templates (see `checkrein.policy.templates` for how it is derived)."""

ANALYZERS: tuple[str, ...] = ("paths", "urls", "shell", "sql", "secrets")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ArgConstraint(_Strict):
    """Constraints for one argument (a JSON pointer or a top-level name) of one tool."""

    kind: ArgKind | None = None
    enum: tuple[str | int | float | bool, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    max_length: int | None = Field(None, ge=0)
    pattern: str | None = None
    roots: tuple[str, ...] | None = None
    """Allowed path roots for a `path` argument (relative to the upstream's working directory)."""
    hosts: tuple[str, ...] | None = None
    """Allowed URL hosts for a `url` argument (exact, or a leading `*.` wildcard)."""
    read_only_sql: bool = False

    @field_validator("pattern")
    @classmethod
    def _pattern_compiles(cls, v: str | None) -> str | None:
        # Config patterns are trusted (written by the operator); they are still compiled here so a
        # typo is a config error at load time, not a denial at call time.
        if v is not None:
            try:
                re.compile(v)
            except re.error as exc:
                raise ValueError(f"pattern does not compile: {exc}") from exc
        return v

    @field_validator("hosts")
    @classmethod
    def _host_shapes(cls, v: tuple[str, ...] | None) -> tuple[str, ...] | None:
        for h in v or ():
            bare = h[2:] if h.startswith("*.") else h
            if not bare or any(c in bare for c in "*/:@?# ") or bare != bare.lower():
                raise ValueError(f"host {h!r} must be a lower-case host name, or `*.` followed by one")
        return v

    @model_validator(mode="after")
    def _range(self) -> ArgConstraint:
        if self.minimum is not None and self.maximum is not None and self.minimum > self.maximum:
            raise ValueError("minimum is greater than maximum")
        if self.roots is not None and not self.roots:
            raise ValueError("`roots` is empty: no path could ever be allowed (omit it instead)")
        if self.hosts is not None and not self.hosts:
            raise ValueError("`hosts` is empty: no URL could ever be allowed (omit it instead)")
        return self


class ToolRule(_Strict):
    """`[policy.tools."<exposed name or glob>"]`."""

    risk: Risk | None = None
    roles: tuple[str, ...] = ()
    """When set, only identities with one of these roles (or these names) may call the tool."""
    read_only: bool | None = None
    args: dict[str, ArgConstraint] = Field(default_factory=dict)
    commands: tuple[str, ...] | None = None
    """Command allowlist (first word of the command) for tools that run commands."""
    findings: dict[str, FindingEffect] = Field(default_factory=dict)
    """Per-analyzer effect for this tool, overriding `[policy.analyzers]`."""
    approval: Literal["auto", "ask", "deny"] | None = None
    """`ask`: always ask before calling; `deny`: deny wherever the policy would ask; `auto`: high or
    critical risk alone does not ask (findings configured to ask still do)."""
    category: ToolCategory | None = None
    """What the tool does (read/write/delete/exec), overriding annotations and name heuristics."""
    flow: tuple[FlowLabel, ...] | None = None
    """The tool's session flow labels, overriding annotations and inference (`[]`: none)."""
    flow_effect: FlowEffect | None = None
    """What the session flow rules (Rule of Two, provenance) do for a call of this tool."""

    @field_validator("flow")
    @classmethod
    def _flow_unique(cls, v: tuple[FlowLabel, ...] | None) -> tuple[FlowLabel, ...] | None:
        if v is not None and len(set(v)) != len(v):
            raise ValueError(f"flow labels {list(v)} repeat a label")
        return v

    @field_validator("args")
    @classmethod
    def _arg_keys(cls, v: dict[str, ArgConstraint]) -> dict[str, ArgConstraint]:
        for key in v:
            if not key or (key.startswith("/") is False and "/" in key):
                raise ValueError(f"argument key {key!r} must be a top-level name or a JSON pointer ('/a/b')")
        return v

    @model_validator(mode="after")
    def _known_analyzers(self) -> ToolRule:
        unknown = sorted(set(self.findings) - set(ANALYZERS))
        if unknown:
            raise ValueError(f"unknown analyzer(s) {unknown}; known: {list(ANALYZERS)}")
        if self.read_only is True and self.category not in (None, "read"):
            raise ValueError(f"read_only = true contradicts category = {self.category!r}")
        return self


class UrlSettings(_Strict):
    allowed_hosts: tuple[str, ...] = ()
    resolve_dns: bool = False


class ResultSettings(_Strict):
    """`[policy.results]`: what result inspection does with everything that comes back."""

    max_bytes: int = Field(262_144, ge=1024)
    """Cap on the bytes the client would receive (the result's JSON: text, images, blobs, `_meta`)."""
    oversize: Literal["truncate", "deny"] = "truncate"
    injection: Literal["withhold", "wrap", "off"] = "withhold"
    redact_secrets: bool = True
    link_tokens: Literal["keep", "mask"] = "keep"
    """A `token=` style value in the path or query of a link (a password-reset or sign-in
    link the user asked for): `keep` delivers it to the model, `mask` masks it like every other
    secret. Either way the audit log masks it, the argument analyzers flag it in a call, and the
    flow rules ask before a value only an untrusted result held reaches a sink. Known credential
    formats in a URL (provider keys, JWTs, `user:password@`) are always masked."""
    max_depth: int = Field(64, ge=4, le=256)
    """Deepest nesting of objects and arrays accepted in a result (counted from the result itself);
    a deeper one is refused (`result.too_deep`)."""


class FlowSettings(_Strict):
    """`[policy.flow]`: session flow rules (`checkrein.policy.flow`). ``None`` takes the template's."""

    rule_of_two: FlowEffect | None = None
    """A call that would complete untrusted input + private data + a sink: `ask` (default), `deny`
    (default under the `strict` template) or `off`."""
    provenance: FlowEffect | None = None
    """A sink argument carrying a value that only untrusted results held: `ask`, `deny` (`strict`), `off`."""
    min_value_chars: int = Field(6, ge=3, le=64)
    """Values shorter than this (letters and digits) are too common to trace."""
    max_untrusted_bytes: int = Field(524_288, ge=4096)
    """Per session: the most text of untrusted results remembered for provenance (oldest dropped first)."""
    max_trusted_bytes: int = Field(524_288, ge=4096)
    """Per session: the most text of the user's task, the caller's arguments and trusted results remembered."""
    resume_window_s: float = Field(3600.0, ge=0)
    """A new session of an identity within this many seconds of its last call inherits that flow state."""
    max_sessions: int = Field(10_000, ge=1)


class LimitSettings(_Strict):
    max_args_bytes: int = Field(1_048_576, ge=64)
    max_depth: int = Field(32, ge=1, le=256)
    max_strings: int = Field(10_000, ge=1)


class PolicySettings(_Strict):
    template: Literal["development", "production", "strict"] | None = None
    default: Literal["deny", "allow"] | None = None
    """Effect for tools matched by no allow/deny glob. Default: the template's, else `deny`."""
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    tools: dict[str, ToolRule] = Field(default_factory=dict)
    analyzers: dict[str, FindingEffect] = Field(default_factory=dict)
    """Effect of each analyzer's findings: `deny` (default), `ask`, or `off`."""
    path_roots: tuple[str, ...] = ()
    urls: UrlSettings = UrlSettings()
    results: ResultSettings = ResultSettings()
    limits: LimitSettings = LimitSettings()
    flow: FlowSettings = FlowSettings()

    @model_validator(mode="after")
    def _no_contradictions(self) -> PolicySettings:
        both = sorted(n for n in set(self.allow) & set(self.deny) if not any(c in n for c in "*?["))
        if both:
            raise ValueError(f"tool(s) {both} are both allowed and denied by name")
        unknown = sorted(set(self.analyzers) - set(ANALYZERS))
        if unknown:
            raise ValueError(f"unknown analyzer(s) {unknown}; known: {list(ANALYZERS)}")
        return self


class ApprovalSettings(_Strict):
    mode: Literal["auto", "cli", "webhook", "elicit", "deny"] = "auto"
    timeout_s: float = Field(60.0, gt=0, le=86_400)
    webhook_url: str | None = None
    webhook_headers: dict[str, str] = Field(default_factory=dict)
    ttl_s: float = Field(300.0, gt=0)
    """How long a granted approval stays valid for the same arguments and policy."""
    auto_max_risk: Literal["low", "medium", "high", "critical"] = "medium"
    """Mode `auto` grants calls up to this risk without a human (every grant is audited)."""
    state_key: str | None = Field(None, min_length=32)
    """The secret that seals 2026-era approval rounds (`input_required`), as a ``${VAR}``: every
    replica of a fleet sets the same one, so a retry answered on another replica is honoured.
    Unset: a random key per process (a retry that lands on another process is asked again)."""

    @model_validator(mode="after")
    def _webhook_needs_url(self) -> ApprovalSettings:
        if self.mode == "webhook" and not self.webhook_url:
            raise ValueError("approval mode 'webhook' needs `webhook_url`")
        return self


class BudgetLimit(_Strict):
    scope: Literal["tool", "server", "identity"]
    match: str = "*"
    """Glob over the exposed tool name, the server name, or the identity name."""
    rate_per_s: float | None = Field(None, gt=0)
    burst: int | None = Field(None, ge=1)
    max_calls_per_session: int | None = Field(None, ge=1)
    max_calls_per_identity: int | None = Field(None, ge=1)
    """A cap per caller over all its sessions, so reconnecting does not reset it (and a sessionless
    2026-era client, whose every request is its own session to the SDK, is capped too)."""
    identity_window_s: float | None = Field(None, gt=0)
    """The period `max_calls_per_identity` counts over (a fixed window from the first call);
    unset: the gateway's lifetime."""

    @model_validator(mode="after")
    def _limits_something(self) -> BudgetLimit:
        if self.rate_per_s is None and self.max_calls_per_session is None and self.max_calls_per_identity is None:
            raise ValueError("a budget limit needs `rate_per_s`, `max_calls_per_session` or `max_calls_per_identity`")
        if self.identity_window_s is not None and self.max_calls_per_identity is None:
            raise ValueError("`identity_window_s` needs `max_calls_per_identity`")
        if self.burst is not None and self.rate_per_s is None:
            raise ValueError("`burst` needs `rate_per_s`")
        return self


class BudgetSettings(_Strict):
    limits: tuple[BudgetLimit, ...] = ()
