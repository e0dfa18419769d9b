"""checkrein.audit: every decision on record, provably complete, nothing secret in it.

Write side: `open_audit_trail` (the `AuditTrail` the gate uses) takes `CallRecord` and
`LifecycleRecord` values, redacts, chains and writes them. Read side: `verify_log` (strict
verifier), `query_events`, `audit_stats`, `follow_events`. Keys: `generate_keypair`.

    audit/record.py     the seam with the gate (raw values in)
    audit/redact.py     masking and bounds;  audit/secrets.py  the secret-finder seam + built-in set
    audit/event.py      stored-event bodies;  audit/schema.py  exact schema, line form, strict parse
    audit/chain.py      seq, prev_hash, checkpoints;  audit/merkle.py  RFC 6962 roots
    audit/writer.py     the one writer thread;  audit/trail.py  `open_audit_trail`, recovery
    audit/segments.py   JSONL segment files;  audit/sqlite_index.py  the rebuildable index
    audit/verify.py     `checkrein audit verify`;  audit/query.py  query, stats, tail
"""

from .query import EventFilter, audit_stats, follow_events, query_events
from .record import AuditTrail, CallRecord, LifecycleRecord, Outcome
from .secrets import SecretFinder, SecretLike, find_builtin_secrets
from .signing import generate_keypair
from .trail import AuditTrailImpl, open_audit_trail, resolve_audit_dir
from .verify import VerifyReport, verify_log

__all__ = [
    "AuditTrail",
    "AuditTrailImpl",
    "CallRecord",
    "EventFilter",
    "LifecycleRecord",
    "Outcome",
    "SecretFinder",
    "SecretLike",
    "VerifyReport",
    "audit_stats",
    "find_builtin_secrets",
    "follow_events",
    "generate_keypair",
    "open_audit_trail",
    "query_events",
    "resolve_audit_dir",
    "verify_log",
]
