"""The OpenAI-compatible adapter: the real `openai` client over real HTTP to a local server."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkrein.agent.model import ModelConfigError, ModelError
from checkrein.agent.openai_model import (
    DEEPSEEK_BASE_URL,
    ModelSettings,
    OpenAIChatModel,
    read_dotenv,
    resolve_settings,
)

from .conftest import FakeOpenAI, completion, error

pytestmark = pytest.mark.anyio
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "w",
                                           "parameters": {"type": "object", "properties": {}}}}]


class Sleeps:
    """Records the waits the adapter asks for instead of sleeping."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def _model(fake: FakeOpenAI, sleeps: Sleeps | None = None, **kw: float) -> OpenAIChatModel:
    settings = ModelSettings(api_key="test-key", model="fake-model", base_url=fake.base_url, timeout_s=10, **kw)  # type: ignore[arg-type]
    return OpenAIChatModel(settings, sleep=sleeps)


async def test_text_and_tool_calls_come_back_with_usage(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue += [completion(tool_calls=[("c1", "get_weather", {"city": "Paris"})]), completion("Sunny.")]
    model = _model(fake_openai)
    first = await model.complete([{"role": "user", "content": "weather?"}], TOOLS)
    second = await model.complete([{"role": "user", "content": "weather?"}], [])
    assert first.tool_calls[0].name == "get_weather" and first.tool_calls[0].arguments == '{"city": "Paris"}'
    assert first.usage.prompt_tokens == 50 and first.finish_reason == "tool_calls"
    assert second.text == "Sunny." and not second.tool_calls
    assert fake_openai.requests[0]["tools"] == TOOLS and "tools" not in fake_openai.requests[1]
    assert fake_openai.auth[0] == "Bearer test-key"


async def test_a_429_waits_for_retry_after_then_succeeds(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue += [error(429, "slow down", {"retry-after": "2"}), error(429, "slow down"), completion("ok")]
    sleeps = Sleeps()
    reply = await _model(fake_openai, sleeps).complete([{"role": "user", "content": "hi"}], [])
    assert reply.text == "ok" and reply.retries == 2
    assert sleeps.waits == [2.0, 2.0]  # Retry-After honoured, then exponential backoff (1, 2, ...)
    assert len(fake_openai.requests) == 3


async def test_retry_after_ms_is_understood(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue += [error(429, "slow", {"retry-after-ms": "250"}), completion("ok")]
    sleeps = Sleeps()
    await _model(fake_openai, sleeps).complete([{"role": "user", "content": "hi"}], [])
    assert sleeps.waits == [0.25]


async def test_a_retry_after_longer_than_the_limit_fails_clearly(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue += [error(429, "quota", {"retry-after": "3600"})]
    with pytest.raises(ModelError, match="asked to wait 3600 s"):
        await _model(fake_openai, Sleeps()).complete([{"role": "user", "content": "hi"}], [])


async def test_rate_limits_are_retried_a_bounded_number_of_times(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue += [error(429, "slow", {"retry-after": "0"}) for _ in range(10)]
    with pytest.raises(ModelError, match="gave up after 3 attempts") as info:
        await _model(fake_openai, Sleeps(), max_retries=2).complete([{"role": "user", "content": "hi"}], [])
    assert info.value.code == "agent.model_unavailable" and len(fake_openai.requests) == 3


async def test_server_errors_are_retried_and_client_errors_are_not(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue += [error(500, "boom"), completion("recovered"), error(400, "bad tool schema")]
    model = _model(fake_openai, Sleeps())
    assert (await model.complete([{"role": "user", "content": "a"}], [])).text == "recovered"
    with pytest.raises(ModelError, match="HTTP 400: bad tool schema"):
        await model.complete([{"role": "user", "content": "b"}], [])


async def test_a_refused_key_is_an_auth_error(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue += [error(401, "invalid api key")]
    with pytest.raises(ModelError, match="refused the API key") as info:
        await _model(fake_openai, Sleeps()).complete([{"role": "user", "content": "a"}], [])
    assert info.value.code == "agent.model_auth"


async def test_an_unreachable_endpoint_is_reported_after_retries() -> None:
    settings = ModelSettings(api_key="k", model="m", base_url="http://127.0.0.1:9/v1", timeout_s=5, max_retries=1)
    with pytest.raises(ModelError, match="cannot reach"):
        await OpenAIChatModel(settings, sleep=Sleeps()).complete([{"role": "user", "content": "a"}], [])


def test_settings_come_from_env_over_dotenv(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text('# comment\nexport OPENAI_API_KEY="from-dotenv"\nCHECKREIN_MODEL=dotenv-model\n'
                      "OPENAI_BASE_URL=http://127.0.0.1:1/v1 # local\n")
    s = resolve_settings(env={}, dotenv=dotenv)
    assert (s.api_key, s.model, s.base_url) == ("from-dotenv", "dotenv-model", "http://127.0.0.1:1/v1")
    s = resolve_settings(env={"OPENAI_API_KEY": "from-env"}, dotenv=dotenv)
    assert s.api_key == "from-env"
    assert resolve_settings("cli-model", env={}, dotenv=dotenv).model == "cli-model"
    assert "from-env" not in repr(resolve_settings(env={"OPENAI_API_KEY": "from-env"}, dotenv=tmp_path / "none"))
    assert read_dotenv(tmp_path / "missing") == {}


def test_a_deepseek_key_is_never_sent_to_another_providers_base_url(tmp_path: Path) -> None:
    s = resolve_settings(env={"DEEPSEEK_API_KEY": "ds", "OPENAI_BASE_URL": "https://other.example/v1"}, dotenv=tmp_path / "none")
    assert (s.api_key, s.base_url) == ("ds", DEEPSEEK_BASE_URL)


def test_deepseek_is_the_default_when_only_its_key_is_set(tmp_path: Path) -> None:
    s = resolve_settings(env={"DEEPSEEK_API_KEY": "ds"}, dotenv=tmp_path / "none")
    assert (s.api_key, s.base_url, s.model) == ("ds", DEEPSEEK_BASE_URL, "deepseek-chat")


def test_no_key_is_a_clear_config_error(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError, match="--script"):
        resolve_settings(env={}, dotenv=tmp_path / "none")
    with pytest.raises(ModelConfigError, match="http"):
        resolve_settings(env={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "ftp://x"}, dotenv=tmp_path / "none")
