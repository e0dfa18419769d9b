"""`Decision` and `Finding`: what the policy returns. Decisions are values, never sentinels."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Decision", "Effect", "Finding", "RiskLevel"]

Effect = Literal["allow", "deny", "ask"]
RiskLevel = Literal["low", "medium", "high", "critical", "unknown"]


@dataclass(frozen=True, slots=True)
class Finding:
    """Something an analyzer or check saw in the arguments (or a result).

    ``path`` is a JSON pointer into the arguments (RFC 6901), ``""`` for the whole object.
    ``evidence`` is a short, already-redacted excerpt safe to log.
    """

    analyzer: str
    kind: str
    path: str
    message: str = ""
    evidence: str = ""
    severity: Literal["low", "medium", "high"] = "high"

    def as_dict(self) -> dict[str, Any]:
        return {
            "analyzer": self.analyzer,
            "kind": self.kind,
            "path": self.path,
            "message": self.message,
            "severity": self.severity,
        }


@dataclass(frozen=True, slots=True)
class Decision:
    effect: Effect
    rule_id: str
    reasons: tuple[str, ...] = ()
    risk: RiskLevel = "unknown"
    findings: tuple[Finding, ...] = ()
    redactions: tuple[str, ...] = ()
    """JSON pointers of argument values that must be masked in logs; a ``*`` token (a `kind =
    "secret"` argument inside an array: `/users/*/code`) stands for every index there."""
    error_code: str | None = None
    """Stable code when the effect is deny (e.g. `policy.denied`, `policy.error`)."""
    degraded: tuple[str, ...] = ()
    """Named degradations that affected this decision (e.g. `policy.exception`)."""
    secrets_scanned: bool = field(default=False, compare=False)
    """The secrets analyzer read every argument value (no scan bound hit, no value of kind
    `secret` skipped), so each secret in a value has its pointer in `redactions`: the audit
    need not run the same finder over those values again. Not part of what the decision is
    (two decisions that differ only here are equal)."""

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons) if self.reasons else self.rule_id

    def as_dict(self) -> dict[str, Any]:
        return {
            "effect": self.effect,
            "rule_id": self.rule_id,
            "reasons": list(self.reasons),
            "risk": self.risk,
            "findings": [f.as_dict() for f in self.findings],
            "redactions": list(self.redactions),
            "error_code": self.error_code,
        }
