"""checkrein.state: where shared state lives: in process, or on Redis for a fleet.

`build_state([state])` returns the backend the config asks for: `MemoryState` without a URL,
else `RedisState` behind a `FallbackState` (deny, or local fallback when allowed).
"""

from __future__ import annotations

from checkrein.config import Config
from checkrein.errors import ConfigError

from .base import Admission, JsonChange, LimitCheck, SharedState
from .fallback import FallbackState, OnFallback
from .memory import MemoryState

__all__ = [
    "Admission",
    "FallbackState",
    "JsonChange",
    "LimitCheck",
    "MemoryState",
    "OnFallback",
    "SharedState",
    "build_state",
]


def build_state(config: Config, *, on_fallback: OnFallback | None = None) -> SharedState:
    """The backend `[state]` names. Raises ``ConfigError`` when Redis is configured but the
    ``redis`` package (``checkrein[redis]``) is missing, or the URL names an unset variable."""
    settings = config.state
    if settings.url is None:
        return MemoryState()
    try:
        from .redis import RedisState
    except ImportError:
        raise ConfigError(
            "[state] url needs the redis client: pip install 'checkrein[redis]'", file=config.source, key="state.url"
        ) from None
    primary = RedisState(settings.url, prefix=settings.key_prefix, timeout_s=settings.timeout_s)
    return FallbackState(primary, MemoryState(), mode=settings.on_unavailable, on_fallback=on_fallback)
