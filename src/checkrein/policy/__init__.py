"""checkrein's policy: pure decisions over calls, arguments and results."""

from .call import Identity, RequestKind, SessionState, ToolCall
from .decision import Decision, Effect, Finding, RiskLevel
from .engine import CompiledPolicy, compile_policy, decide, may_see
from .results import ErrorInspection, Inspection, ResultInspector, ResultView

__all__ = [
    "CompiledPolicy",
    "Decision",
    "Effect",
    "ErrorInspection",
    "Finding",
    "Identity",
    "Inspection",
    "ResultInspector",
    "RequestKind",
    "ResultView",
    "RiskLevel",
    "SessionState",
    "ToolCall",
    "compile_policy",
    "decide",
    "may_see",
]
