"""checkrein's one exception tree. Every error carries a stable ``code`` that reaches the client.

    CheckreinError                      checkrein.error
    ├── ConfigError                     config.invalid        (file, line, key in the message; every problem in `problems`)
    ├── CatalogError                    catalog.error
    │   ├── ToolNotFound                tool.not_found
    │   ├── ToolQuarantined             tool.quarantined      (definition drifted from checkrein.lock)
    │   └── LockFileError               catalog.lock_invalid
    ├── PolicyError                     policy.error          (an exception inside decide: the call is denied)
    │   ├── AnalyzerFailed              policy.analyzer_failed
    │   └── ArgumentsRejected           policy.arguments_rejected
    ├── ApprovalError                   approval.failed       (approver raised or timed out: denied)
    ├── BudgetExceeded                  budget.exceeded
    ├── UpstreamError                   upstream.error
    │   ├── UpstreamUnavailable         upstream.unavailable  (failed to start, crashed, reconnecting)
    │   ├── UpstreamTimeout             upstream.timeout
    │   └── UpstreamRequestFailed       upstream.request_failed (the upstream answered a JSON-RPC error)
    ├── AuditError                      audit.error
    │   └── AuditUnavailable            audit.unavailable     (cannot write: calls fail closed)
    ├── StateUnavailable                state.unavailable     (a shared state backend cannot answer: denied)
    └── FrontendError                   frontend.error
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "AnalyzerFailed",
    "ApprovalError",
    "ArgumentsRejected",
    "AuditError",
    "AuditUnavailable",
    "BudgetExceeded",
    "CatalogError",
    "CheckreinError",
    "ConfigError",
    "FrontendError",
    "LockFileError",
    "PolicyError",
    "StateUnavailable",
    "ToolNotFound",
    "ToolQuarantined",
    "UpstreamError",
    "UpstreamRequestFailed",
    "UpstreamTimeout",
    "UpstreamUnavailable",
]


class CheckreinError(Exception):
    """Base of every error checkrein raises on purpose."""

    code = "checkrein.error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message


class ConfigError(CheckreinError):
    """A config file is malformed or contradicts itself; the message names file, line and key."""

    code = "config.invalid"

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        key: str | None = None,
        code: str | None = None,
        fix: str | None = None,
        problems: Sequence[ConfigError] = (),
    ) -> None:
        self.file = file
        self.line = line
        self.key = key
        self.detail = message
        """The message without the file, line and key."""
        self.fix = fix
        """How to fix it, when there is something more specific to say than the message."""
        self.problems: tuple[ConfigError, ...] = tuple(problems)
        """When this error stands for several (a config with many mistakes): each of them."""
        where = ""
        if file is not None:
            where = file + (f":{line}" if line is not None else "")
        prefix = ", ".join(p for p in (where, f"key '{key}'" if key else "") if p)
        super().__init__(f"{prefix}: {message}" if prefix else message, code=code)

    def each(self) -> tuple[ConfigError, ...]:
        """Every problem this error reports: its `problems`, or itself alone."""
        return self.problems or (self,)


class CatalogError(CheckreinError):
    code = "catalog.error"


class ToolNotFound(CatalogError):
    code = "tool.not_found"


class ToolQuarantined(CatalogError):
    code = "tool.quarantined"


class LockFileError(CatalogError):
    code = "catalog.lock_invalid"


class PolicyError(CheckreinError):
    code = "policy.error"


class AnalyzerFailed(PolicyError):
    code = "policy.analyzer_failed"


class ArgumentsRejected(PolicyError):
    code = "policy.arguments_rejected"


class ApprovalError(CheckreinError):
    code = "approval.failed"


class BudgetExceeded(CheckreinError):
    code = "budget.exceeded"


class UpstreamError(CheckreinError):
    code = "upstream.error"


class UpstreamUnavailable(UpstreamError):
    code = "upstream.unavailable"


class UpstreamTimeout(UpstreamError):
    code = "upstream.timeout"


class UpstreamRequestFailed(UpstreamError):
    """The upstream answered with a JSON-RPC error (unknown tool, bad params, its own fault).

    ``rpc_code``/``rpc_message``/``rpc_data`` carry the upstream's error as it was sent.
    """

    code = "upstream.request_failed"

    def __init__(self, message: str, *, rpc_code: int, rpc_message: str, rpc_data: object = None) -> None:
        super().__init__(message)
        self.rpc_code = rpc_code
        self.rpc_message = rpc_message
        self.rpc_data = rpc_data


class AuditError(CheckreinError):
    code = "audit.error"


class AuditUnavailable(AuditError):
    code = "audit.unavailable"


class StateUnavailable(CheckreinError):
    """A shared state backend (budgets, grants, sessions, flow state) could not answer."""

    code = "state.unavailable"


class FrontendError(CheckreinError):
    code = "frontend.error"
