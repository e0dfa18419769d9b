"""checkrein.audit: every decision on record, provably complete, nothing secret in it.

Public face: `open_audit_trail` (the writer the gate uses), the records it takes, the verifier and
the read side (`query_events`, `audit_stats`, `follow_events`), and key generation.
"""

from .record import AuditTrail, CallRecord, LifecycleRecord, Outcome
from .secrets import SecretFinder, SecretLike, find_builtin_secrets
from .trail import AuditTrailImpl, open_audit_trail, resolve_audit_dir

__all__ = [
    "AuditTrail",
    "AuditTrailImpl",
    "CallRecord",
    "LifecycleRecord",
    "Outcome",
    "SecretFinder",
    "SecretLike",
    "find_builtin_secrets",
    "open_audit_trail",
    "resolve_audit_dir",
]
