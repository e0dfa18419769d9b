"""`OpenAIChatModel`: any OpenAI-compatible chat-completions endpoint through the official SDK.

Settings come from the environment, then a ``.env`` file in the working directory (the
environment wins): ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``CHECKREIN_MODEL``. When only
``DEEPSEEK_API_KEY`` is set, DeepSeek is the default: base URL ``https://api.deepseek.com`` and
model ``deepseek-chat``.

Retries are ours, not the SDK's (its own are turned off) so they are bounded and visible: a 429
waits for ``Retry-After`` (seconds or an HTTP date, or ``retry-after-ms``) when the server gives
one, else an exponential backoff; 5xx answers and connection failures are retried the same way.
A wait the server asks for that is longer than ``max_retry_wait_s`` fails at once with a clear
message instead of hanging. Error messages never carry the API key, even when an endpoint echoes it.
"""

from __future__ import annotations

import email.utils
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import openai

from .model import Message, ModelConfigError, ModelError, ModelReply, Purpose, ToolRequest, ToolSpec, Usage

__all__ = ["DEEPSEEK_BASE_URL", "DEEPSEEK_MODEL", "ModelSettings", "OpenAIChatModel", "read_dotenv", "resolve_settings"]

DEEPSEEK_BASE_URL = "https://api.deepseek.com"
DEEPSEEK_MODEL = "deepseek-chat"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class ModelSettings:
    api_key: str
    model: str
    base_url: str | None = None
    timeout_s: float = 120.0
    max_retries: int = 4
    max_retry_wait_s: float = 30.0
    temperature: float | None = 0.0

    def __repr__(self) -> str:  # never print the key
        return f"ModelSettings(model={self.model!r}, base_url={self.base_url!r}, api_key='***')"


def _dotenv_value(value: str) -> str:
    """``'v' # note`` -> ``v``; ``v # note`` -> ``v``; ``"a#b"`` -> ``a#b``."""
    if value[:1] in ("'", '"'):
        end = value.find(value[0], 1)
        if end > 0 and (end == len(value) - 1 or value[end + 1:].lstrip().startswith("#")):
            return value[1:end]
    if " #" in value:
        value = value.split(" #", 1)[0].rstrip()
    return value


def read_dotenv(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` lines of a ``.env`` file (``export``, quotes and ``#`` comments allowed);
    a missing file gives ``{}``."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ModelConfigError(f"cannot read {path}: {exc.strerror}") from exc
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        out[key.strip()] = _dotenv_value(value.strip())
    return out


def resolve_settings(
    model: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    dotenv: Path | None = None,
) -> ModelSettings:
    """Settings from ``env`` (default ``os.environ``) over ``dotenv`` (default ``./.env``);
    ``model`` overrides ``CHECKREIN_MODEL``. Raises `ModelConfigError` when no key is found."""
    values = dict(read_dotenv(dotenv if dotenv is not None else Path.cwd() / ".env"))
    values.update(os.environ if env is None else env)
    key = values.get("OPENAI_API_KEY", "").strip()
    base_url = values.get("OPENAI_BASE_URL", "").strip() or None
    default_model = DEFAULT_OPENAI_MODEL
    if not key and values.get("DEEPSEEK_API_KEY", "").strip():
        key = values["DEEPSEEK_API_KEY"].strip()
        # A DeepSeek key goes to DeepSeek (or DEEPSEEK_BASE_URL), never to an OPENAI_BASE_URL
        # meant for another provider.
        base_url = values.get("DEEPSEEK_BASE_URL", "").strip() or DEEPSEEK_BASE_URL
        default_model = DEEPSEEK_MODEL
    if not key:
        raise ModelConfigError(
            "no model API key: set OPENAI_API_KEY (with OPENAI_BASE_URL for a compatible endpoint) or "
            "DEEPSEEK_API_KEY, in the environment or in ./.env; or use --script FILE for the offline scripted model"
        )
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise ModelConfigError(f"OPENAI_BASE_URL must start with http:// or https:// (got {base_url[:40]!r})")
    chosen = model or values.get("CHECKREIN_MODEL", "").strip() or default_model
    return ModelSettings(api_key=key, model=chosen, base_url=base_url)


def _retry_after_s(exc: openai.APIStatusError) -> float | None:
    headers = exc.response.headers
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        when = email.utils.parsedate_to_datetime(raw) if raw else None
        return None if when is None else max(0.0, when.timestamp() - time.time())


def _describe(exc: openai.APIStatusError) -> str:
    detail = ""
    body = exc.body
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            detail = err["message"]
    return f"HTTP {exc.status_code}" + (f": {detail[:300]}" if detail else "")


def _without_userinfo(url: str | None) -> str | None:
    """``url`` with any ``user:password@`` removed, for messages."""
    if url is None:
        return None
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


class OpenAIChatModel:
    """A `Model` over ``/chat/completions``. ``sleep`` is injectable so tests need not wait."""

    def __init__(self, settings: ModelSettings, *, sleep: Sleep | None = None) -> None:
        self.settings = settings
        self._sleep: Sleep = sleep or anyio.sleep
        self._client = openai.AsyncOpenAI(
            api_key=settings.api_key, base_url=settings.base_url, timeout=settings.timeout_s, max_retries=0
        )

    @property
    def name(self) -> str:
        return self.settings.model

    async def aclose(self) -> None:
        await self._client.close()

    def _scrub(self, text: str) -> str:
        """``text`` without the API key: some endpoints echo the key they refused."""
        key = self.settings.api_key
        return text.replace(key, "***") if len(key) >= 4 else text

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, purpose: Purpose = "turn"
    ) -> ModelReply:
        try:
            return await self._complete(messages, tools)
        except ModelError as exc:
            raise type(exc)(self._scrub(str(exc)), code=exc.code) from None

    async def _complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelReply:
        retries = 0
        while True:
            try:
                reply = await self._create(messages, tools)
                return ModelReply(reply.text, reply.tool_calls, reply.usage, reply.finish_reason, reply.model, retries)
            except openai.RateLimitError as exc:
                wait = _retry_after_s(exc)
                why = "rate limited (HTTP 429)"
            except openai.InternalServerError as exc:
                wait, why = _retry_after_s(exc), _describe(exc)
            except openai.APITimeoutError:
                wait, why = None, f"no answer within {self.settings.timeout_s:g} s"
            except openai.APIConnectionError as exc:
                wait, why = None, f"cannot reach {_without_userinfo(self.settings.base_url) or 'api.openai.com'}: {exc.message}"
            except openai.AuthenticationError as exc:
                raise ModelError(f"the model endpoint refused the API key ({_describe(exc)})", code="agent.model_auth") from None
            except openai.APIStatusError as exc:
                raise ModelError(f"the model endpoint refused the request ({_describe(exc)})") from None
            if retries >= self.settings.max_retries:
                raise ModelError(f"{why}; gave up after {retries + 1} attempts", code="agent.model_unavailable")
            if wait is not None and wait > self.settings.max_retry_wait_s:
                raise ModelError(
                    f"{why}; the server asked to wait {wait:g} s, more than the {self.settings.max_retry_wait_s:g} s limit",
                    code="agent.model_unavailable",
                )
            retries += 1
            await self._sleep(wait if wait is not None else min(2.0 ** (retries - 1), self.settings.max_retry_wait_s))

    async def _create(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelReply:
        kwargs: dict[str, Any] = {"model": self.settings.model, "messages": list(messages)}
        if tools:
            kwargs["tools"] = list(tools)
        if self.settings.temperature is not None:
            kwargs["temperature"] = self.settings.temperature
        completion = await self._client.chat.completions.create(**kwargs)
        if not completion.choices:
            raise ModelError("the model endpoint answered with no choices")
        choice = completion.choices[0]
        calls = []
        for tc in choice.message.tool_calls or ():
            fn = getattr(tc, "function", None)
            if fn is None:  # custom (non-function) tool calls are not ours
                continue
            calls.append(ToolRequest(id=tc.id, name=fn.name, arguments=fn.arguments or "{}"))
        usage = completion.usage
        return ModelReply(
            text=choice.message.content,
            tool_calls=tuple(calls),
            usage=Usage(usage.prompt_tokens, usage.completion_tokens) if usage else Usage(),
            finish_reason=choice.finish_reason,
            model=completion.model or self.settings.model,
        )

