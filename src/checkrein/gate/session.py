"""Per-session state kept by the gate, bounded so a flood of session ids cannot grow memory."""

from __future__ import annotations

from collections import OrderedDict

from checkrein.policy import SessionState

__all__ = ["SessionTable"]


class SessionTable:
    """``session id -> SessionState``, least recently used evicted beyond ``max_sessions``.

    Eviction forgets taint; the limit is high enough that only abandoned sessions go.
    """

    def __init__(self, max_sessions: int = 10_000) -> None:
        self._max = max_sessions
        self._states: OrderedDict[str, SessionState] = OrderedDict()

    def get(self, session_id: str) -> SessionState:
        state = self._states.get(session_id)
        if state is None:
            state = SessionState(session_id)
            self._states[session_id] = state
            if len(self._states) > self._max:
                self._states.popitem(last=False)
        else:
            self._states.move_to_end(session_id)
        return state

    def peek(self, session_id: str) -> SessionState | None:
        return self._states.get(session_id)

    def __len__(self) -> int:
        return len(self._states)

    def record_forwarded(self, session_id: str, exposed: str) -> None:
        state = self.get(session_id)
        state.calls += 1
        state.calls_by_tool[exposed] = state.calls_by_tool.get(exposed, 0) + 1

    def taint(self, session_id: str, source: str) -> None:
        state = self.get(session_id)
        state.tainted = True
        if source not in state.taint_sources:
            state.taint_sources.append(source)
