"""checkrein: a security gateway and audit trail for AI agents' MCP tool calls.

The names below are loaded on first use, so a bundled server or the CLI that imports
``checkrein`` does not pay for the policy engine (and sqlglot) unless it uses them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from checkrein._lazy import lazy_exports

__version__ = "0.1.0"

__all__ = [
    "CheckreinError",
    "Config",
    "Decision",
    "Finding",
    "ToolCall",
    "__version__",
    "decide",
    "load_config",
]

_LAZY = {
    "CheckreinError": "checkrein.errors",
    "Config": "checkrein.config",
    "load_config": "checkrein.config",
    "Decision": "checkrein.policy",
    "Finding": "checkrein.policy",
    "ToolCall": "checkrein.policy",
    "decide": "checkrein.policy",
}

if TYPE_CHECKING:
    from checkrein.config import Config, load_config
    from checkrein.errors import CheckreinError
    from checkrein.policy import Decision, Finding, ToolCall, decide


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals(), __all__)
