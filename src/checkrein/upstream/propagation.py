"""Trace context for the upstream request being sent: the gate sets it, the session sends it.

A context variable rather than a parameter, because it belongs to the request on its way out and
every `Upstream` implementation would otherwise grow the same argument. Read synchronously by
`UpstreamSession.forward_tool_call` in the calling task, so concurrent calls never see each
other's value.
"""

from __future__ import annotations

import contextvars

__all__ = ["OUTBOUND_TRACEPARENT"]

OUTBOUND_TRACEPARENT: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "checkrein_outbound_traceparent", default=None
)
"""W3C ``traceparent`` to put into the next upstream request's ``_meta`` (None: send none)."""
