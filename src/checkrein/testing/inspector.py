"""``ScriptedInspector``: a `ResultInspector` whose verdict is set by the test.

    inspector = ScriptedInspector(replace={"hunter2": "[REDACTED]"}, flags=("secrets_redacted",))
    gate = Gate(config, upstreams, inspector=inspector)

Every string of the result (keys included) and of an upstream error has each ``replace`` key
substituted; the verdict is ``action`` with ``flags`` and ``reason`` (for an error that is not
delivered: ``reason`` in place of the message, ``withheld``). ``fail=True`` makes both
methods raise ``ValueError`` (a crashed scanner). ``seen`` records each view inspected and
``errors`` each ``(message, data)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from checkrein.policy import ErrorInspection, Inspection, ResultView, ToolCall

__all__ = ["ScriptedInspector"]


def _replace_all(value: Any, table: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        for old, new in table.items():
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {_replace_all(k, table): _replace_all(v, table) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_all(v, table) for v in value]
    return value


class ScriptedInspector:
    def __init__(
        self,
        action: Literal["deliver", "withhold", "deny"] = "deliver",
        *,
        fail: bool = False,
        flags: tuple[str, ...] = (),
        reason: str = "looks like an injection",
        replace: Mapping[str, str] | None = None,
        degraded: tuple[str, ...] = (),
    ) -> None:
        self.action, self.fail, self.flags, self.reason, self.degraded = action, fail, flags, reason, degraded
        self.replace = dict(replace or {})
        self.seen: list[ResultView] = []
        self.errors: list[tuple[str, Any]] = []

    def inspect(self, call: ToolCall, result: ResultView) -> Inspection:
        self.seen.append(result)
        if self.fail:
            raise ValueError("scanner crashed")
        if self.action != "deliver":
            return Inspection(self.action, None, flags=self.flags, reason=self.reason, degraded=self.degraded)
        new = _replace_all(result.json, self.replace) if self.replace else result.json
        return Inspection("deliver", new, flags=self.flags, degraded=self.degraded)

    def inspect_error(self, call: ToolCall, message: str, data: Any | None) -> ErrorInspection:
        self.errors.append((message, data))
        if self.fail:
            raise ValueError("scanner crashed")
        if self.action != "deliver":
            return ErrorInspection(self.reason, None, flags=self.flags, degraded=self.degraded, withheld=True)
        return ErrorInspection(
            _replace_all(message, self.replace), _replace_all(data, self.replace), flags=self.flags, degraded=self.degraded
        )
