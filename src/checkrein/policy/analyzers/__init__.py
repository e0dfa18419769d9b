"""Argument analyzers: paths, urls, shell, sql, secrets. Pure functions over strings.

`scan_arguments` is what `decide` calls; `kinds_from_schema` builds `ScanContext.kinds` from a
tool's input schema; `find_secrets` / `redact_secrets` serve result inspection and the audit log;
`classify_sql` serves the read-only-SQL constraint.
"""

from .api import Analyzer, Resolver, ScanContext, SecretSpan
from .decode import decoded_forms
from .scan import ANALYZERS, scan_arguments, scan_value
from .schema import kind_for, kind_from_name, kinds_from_schema
from .secrets import find_secrets, redact_secrets
from .sql import SqlClass, classify_sql

__all__ = [
    "ANALYZERS",
    "Analyzer",
    "Resolver",
    "ScanContext",
    "SecretSpan",
    "SqlClass",
    "classify_sql",
    "decoded_forms",
    "find_secrets",
    "kind_for",
    "kind_from_name",
    "kinds_from_schema",
    "redact_secrets",
    "scan_arguments",
    "scan_value",
]
