"""The `Model` seam: what the agent loop needs from a language model, and nothing more.

Messages are OpenAI chat-completions dicts (``{"role": ..., "content": ..., "tool_calls": ...}``),
the format every OpenAI-compatible endpoint speaks; tools are OpenAI function definitions.

    AgentError            agent.error
    ├── ModelError        agent.model_error      (endpoint refused, unreachable, or answered nonsense)
    │   └── ModelConfigError  agent.model_config (no key, bad base URL)
    └── ScriptError       agent.script_invalid   (a scripted model's file is malformed)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias

from checkrein.errors import CheckreinError

__all__ = [
    "AgentError",
    "Message",
    "Model",
    "ModelConfigError",
    "ModelError",
    "ModelReply",
    "Purpose",
    "ScriptError",
    "ToolRequest",
    "ToolSpec",
    "Usage",
]

Message: TypeAlias = dict[str, Any]
"""One OpenAI chat message."""
ToolSpec: TypeAlias = dict[str, Any]
"""One OpenAI tool definition: ``{"type": "function", "function": {name, description, parameters}}``."""
Purpose: TypeAlias = Literal["turn", "summary"]
"""``turn``: the next step of the conversation; ``summary``: write a summary for context compression."""


class AgentError(CheckreinError):
    code = "agent.error"


class ModelError(AgentError):
    code = "agent.model_error"


class ModelConfigError(ModelError):
    code = "agent.model_config"


class ScriptError(AgentError):
    code = "agent.script_invalid"


@dataclass(frozen=True)
class ToolRequest:
    """A tool call the model asked for. ``arguments`` is the raw JSON text the model wrote."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class ModelReply:
    """One model answer: text, tool calls, or both."""

    text: str | None
    tool_calls: tuple[ToolRequest, ...] = ()
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    model: str = ""
    retries: int = 0
    """How many rate-limit or transient-failure retries this reply took."""

    def as_message(self) -> Message:
        """The assistant message to append to the conversation."""
        msg: Message = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            msg["tool_calls"] = [
                {"id": t.id, "type": "function", "function": {"name": t.name, "arguments": t.arguments}}
                for t in self.tool_calls
            ]
        return msg


class Model(Protocol):
    """A chat model. Implementations raise `ModelError` (never anything else on purpose)."""

    @property
    def name(self) -> str: ...

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, purpose: Purpose = "turn"
    ) -> ModelReply: ...
