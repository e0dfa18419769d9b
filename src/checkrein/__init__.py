"""checkrein: a security gateway and audit trail for AI agents' MCP tool calls."""

from checkrein.config import Config, load_config
from checkrein.errors import CheckreinError
from checkrein.policy import Decision, Finding, ToolCall, decide

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
