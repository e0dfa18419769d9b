"""Which identity opened each Streamable HTTP session, so a session id works only for it.

The SDK's session manager binds a session to nothing but its id: a caller holding another
identity's session id (leaked, logged, guessed) would act inside that session, with its flow
state, caps and approvals. `SessionOwners` records the owner (`identity_key`: source and user) when
the gateway's answer to an ``initialize`` carries a new ``mcp-session-id``, and `HttpGuard` answers
a request that presents the id with another identity's token with 404, as the spec says for a
session the server does not know. A DELETE by the owner forgets it.

Bounded: past ``max_sessions`` the oldest record is dropped, and a session whose record is gone is
refused (404: the client starts a new session) rather than served unbound. A fleet member that
adopts sessions opened on other replicas checks owners in the shared state instead and passes
``strict=False`` (ids it never saw go on to that check).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

__all__ = ["SESSION_HEADER", "SessionOwners"]

SESSION_HEADER = "mcp-session-id"


class SessionOwners:
    """session id -> owner key; thread-safe, bounded."""

    def __init__(self, *, max_sessions: int = 100_000, strict: bool = True) -> None:
        self.max_sessions = max_sessions
        self.strict = strict
        self._owners: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()
        self.refused = 0

    def record(self, session_id: str, owner: str) -> None:
        with self._lock:
            self._owners[session_id] = owner
            self._owners.move_to_end(session_id)
            while len(self._owners) > self.max_sessions:
                self._owners.popitem(last=False)

    def forget(self, session_id: str) -> None:
        with self._lock:
            self._owners.pop(session_id, None)

    def admits(self, session_id: str, owner: str) -> bool:
        """May ``owner`` use ``session_id``? An unknown id is refused when ``strict``."""
        with self._lock:
            found = self._owners.get(session_id)
        ok = found == owner if found is not None else not self.strict
        if not ok:
            self.refused += 1
        return ok

    def __len__(self) -> int:
        return len(self._owners)
