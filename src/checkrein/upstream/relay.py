"""Who an upstream's messages are for: the client request a relayed message belongs to.

An upstream server talks back while it works on a request: progress, log messages, and requests of
its own (sampling, elicitation, roots). Each must reach the client whose request caused it, and no
other. The frontend puts that client, as a `Downstream`, into `CURRENT_DOWNSTREAM` while the gate
handles its request; the upstream connection reads it when it forwards the request and keeps a
table of what is in flight (`InFlight`), so a message that arrives later can be attributed:

1. over Streamable HTTP the SDK delivers it in the sending task's context: `CURRENT_DOWNSTREAM`
   names the client exactly;
2. progress carries the token of one request: exact;
3. otherwise (stdio, legacy SSE) it belongs to the in-flight requests' client when they all came
   from one client session, and to nobody when there are none or several: then it is refused (a
   request) or dropped (a notification), and counted, never sent to a client that may be the
   wrong one.
"""

from __future__ import annotations

import contextvars
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal, Protocol

__all__ = ["CURRENT_DOWNSTREAM", "Downstream", "InFlight", "ServerRequestKind", "no_downstream"]

ServerRequestKind = Literal["sampling", "elicitation", "roots"]


class Downstream(Protocol):
    """One client request, as far as relaying to its client needs (implemented by the frontend)."""

    @property
    def session_key(self) -> str:
        """Identifies the client session (all requests of one client share it)."""
        ...

    @property
    def progress_token(self) -> str | int | None:
        """The client's ``_meta.progressToken`` for this request, if it asked for progress."""
        ...

    @property
    def upstream_meta(self) -> dict[str, Any]:
        """``_meta`` entries of the client's request that go on to the upstream (log level opt-in)."""
        ...

    def call(self) -> Any:
        """The gate's `ToolCall` for this request (identity, session, trace), for policy and audit."""
        ...

    def supports(self, kind: ServerRequestKind) -> bool:
        """Whether the client declared the capability, and its connection can carry the request."""
        ...

    async def progress(self, progress: float, total: float | None, message: str | None) -> None: ...

    async def log(self, level: str, data: Any, logger: str | None) -> None: ...

    async def request(self, kind: ServerRequestKind, params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Ask the client; its raw result. Raises on refusal, timeout or a client that went away."""
        ...


CURRENT_DOWNSTREAM: contextvars.ContextVar[Downstream | None] = contextvars.ContextVar(
    "checkrein_downstream", default=None
)


@contextmanager
def no_downstream() -> Iterator[None]:
    """Run with no current client: tasks started inside (an upstream's reader after a restart
    during some client's call) must not inherit that client."""
    token = CURRENT_DOWNSTREAM.set(None)
    try:
        yield
    finally:
        CURRENT_DOWNSTREAM.reset(token)


class _Holding:
    """`InFlight.holding` (a class rather than a generator: it runs on every upstream request)."""

    __slots__ = ("_downstream", "_key", "_open")

    def __init__(self, open_: dict[int, Downstream], key: int, downstream: Downstream | None) -> None:
        self._open, self._key, self._downstream = open_, key, downstream

    def __enter__(self) -> None:
        if self._downstream is not None:
            self._open[self._key] = self._downstream

    def __exit__(self, *exc: object) -> None:
        self._open.pop(self._key, None)


class InFlight:
    """The requests one upstream is working on, and whose they are."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._open: dict[int, Downstream] = {}

    def holding(self, downstream: Downstream | None) -> _Holding:
        """A context manager: ``downstream``'s request is in flight inside it (none: nothing)."""
        return _Holding(self._open, next(self._ids), downstream)

    def __len__(self) -> int:
        return len(self._open)

    def attribute(self) -> Downstream | None:
        """The one client that every in-flight request belongs to, else ``None``."""
        current = CURRENT_DOWNSTREAM.get()
        if current is not None:
            return current
        sessions = {d.session_key for d in self._open.values()}
        if len(sessions) != 1:
            return None
        # The most recent request of that client: its stream is the one most likely still open.
        return next(reversed(self._open.values()))


class RelayHooks(Protocol):
    """What an upstream connection hands on (implemented by the gate: policy, inspection, audit)."""

    def wants(self, server: str, kind: ServerRequestKind) -> bool:
        """Whether ``server`` may make ``kind`` requests at all (then the capability is advertised)."""
        ...

    async def server_request(
        self, server: str, kind: ServerRequestKind, params: dict[str, Any], target: Downstream | None
    ) -> dict[str, Any]:
        """Answer the upstream's request (raw result). Raises ``MCPError`` to refuse it."""
        ...

    async def log(self, server: str, params: dict[str, Any], target: Downstream | None) -> None: ...

    async def progress_message(self, server: str, message: str, target: Downstream) -> str:
        """The text of a progress notification as the client may see it (masked, or withheld)."""
        ...

    async def resource_updated(self, server: str, uri: str) -> None: ...

    async def list_changed(self, server: str, kind: Literal["resources", "prompts"]) -> None: ...


class SessionCallbacks:
    """The upstream `ClientSession`'s callbacks for one server, handing everything to the hooks.

    Only the callbacks the hooks want are passed to the session (`kwargs`), so an upstream is
    offered sampling, elicitation or roots only when the policy lets that server use them. A
    refusal or failure reaches the upstream as a JSON-RPC error, never as a hang.
    """

    def __init__(self, server: str, hooks: RelayHooks, inflight: InFlight) -> None:
        self.server = server
        self.hooks = hooks
        self.inflight = inflight

    def kwargs(self) -> dict[str, Any]:
        out: dict[str, Any] = {"logging_callback": self._log}
        if self.hooks.wants(self.server, "sampling"):
            out["sampling_callback"] = self._sampling
        if self.hooks.wants(self.server, "elicitation"):
            out["elicitation_callback"] = self._elicitation
        if self.hooks.wants(self.server, "roots"):
            out["list_roots_callback"] = self._roots
        return out

    async def _ask(self, kind: ServerRequestKind, params: Any) -> Any:
        import mcp.types as types
        from mcp.shared.exceptions import MCPError

        raw = params.model_dump(by_alias=True, mode="json", exclude_none=True) if params is not None else {}
        try:
            return await self.hooks.server_request(self.server, kind, raw, self.inflight.attribute())
        except MCPError as exc:
            return types.ErrorData(code=exc.code, message=exc.message, data=exc.error.data)

    async def _sampling(self, context: Any, params: Any) -> Any:
        import mcp.types as types

        result = await self._ask("sampling", params)
        if isinstance(result, dict):
            model = types.CreateMessageResultWithTools if params.tools or params.tool_choice else types.CreateMessageResult
            return model.model_validate(result, by_name=False)
        return result

    async def _elicitation(self, context: Any, params: Any) -> Any:
        import mcp.types as types

        result = await self._ask("elicitation", params)
        return types.ElicitResult.model_validate(result, by_name=False) if isinstance(result, dict) else result

    async def _roots(self, context: Any) -> Any:
        import mcp.types as types

        result = await self._ask("roots", None)
        return types.ListRootsResult.model_validate(result, by_name=False) if isinstance(result, dict) else result

    async def _log(self, params: Any) -> None:
        await self.log_json(params.model_dump(by_alias=True, mode="json", exclude_none=True))

    async def log_json(self, params: dict[str, Any]) -> None:
        """A ``notifications/message``'s params as JSON (the raw request lane hands them over so)."""
        await self.hooks.log(self.server, params, self.inflight.attribute())
