"""`ScriptedModel`: replays a list of tool calls, then answers with a final text. Offline.

A script is data (JSON, TOML or YAML; a scenario file is a valid script)::

    {"steps": [{"tool": "knowledge__search_documents", "args": {"query": "running Shanghai"}}],
     "answer": "From the knowledge base: {result[0]}"}

``answer`` is a `str.format` template: ``{result[N]}`` is the text the model received for the
N-th call (0-based; a denial reason for a denied call), ``{last_result}`` the latest one,
``{query}`` the user's question. A tool name that is not listed but matches exactly one listed
tool by its ``__name`` suffix is mapped to it, so one script works against a bundled server
directly and behind the gateway. ``summary`` fixes the compression summary; ``fail_summary``
makes summaries fail (to exercise that path).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .model import Message, ModelError, ModelReply, Purpose, ScriptError, ToolRequest, ToolSpec, Usage

__all__ = ["ScriptStep", "ScriptedModel", "load_script", "render_answer", "script_from_data"]


@dataclass(frozen=True)
class ScriptStep:
    tool: str
    args: Mapping[str, Any]


class _Results(list[str]):
    """A list whose missing items format as empty text instead of raising."""

    def __getitem__(self, index: Any) -> Any:
        try:
            return super().__getitem__(index)
        except IndexError:
            return ""


def _tool_names(tools: Sequence[ToolSpec]) -> list[str]:
    return [str(t.get("function", {}).get("name", "")) for t in tools]


def _resolve(name: str, listed: list[str]) -> str:
    if name in listed or not listed:
        return name
    matches = [n for n in listed if n.endswith("__" + name) or name.endswith("__" + n)]
    return matches[0] if len(matches) == 1 else name


class ScriptedModel:
    """A `Model` that replays ``steps`` one call per turn, then answers ``answer``."""

    def __init__(
        self,
        steps: Sequence[ScriptStep],
        answer: str = "Done.",
        *,
        summary: str | None = None,
        fail_summary: bool = False,
        name: str = "scripted",
    ) -> None:
        self.steps = tuple(steps)
        self.answer = answer
        self.summary = summary
        self.fail_summary = fail_summary
        self._name = name
        self._next = 0
        self._results: dict[str, str] = {}
        self._order: list[str] = []

    @property
    def name(self) -> str:
        return self._name

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, purpose: Purpose = "turn"
    ) -> ModelReply:
        if purpose == "summary":
            return self._summarize(messages)
        self._collect(messages)
        if self._next < len(self.steps):
            step = self.steps[self._next]
            self._next += 1
            call_id = f"call_{self._next}"
            self._order.append(call_id)
            request = ToolRequest(call_id, _resolve(step.tool, _tool_names(tools)), json.dumps(dict(step.args)))
            return ModelReply(None, (request,), _usage(messages, 20), "tool_calls", self.name)
        text = self._render(messages)
        return ModelReply(text, (), _usage(messages, len(text) // 4 + 1), "stop", self.name)

    def _collect(self, messages: Sequence[Message]) -> None:
        # Results are remembered here because compression may drop old tool messages.
        for m in messages:
            if m.get("role") == "tool" and isinstance(m.get("tool_call_id"), str):
                self._results[m["tool_call_id"]] = str(m.get("content") or "")

    def _render(self, messages: Sequence[Message]) -> str:
        results = _Results(self._results.get(cid, "") for cid in self._order)
        query = next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "")
        return render_answer(self.answer, results, query)

    def _summarize(self, messages: Sequence[Message]) -> ModelReply:
        if self.fail_summary:
            raise ModelError("scripted summary failure (fail_summary is set)")
        if self.summary is not None:
            return ModelReply(self.summary, (), _usage(messages, 20), "stop", self.name)
        lines = []
        for m in messages:
            content = " ".join(str(m.get("content") or "").split())
            if m.get("role") in ("user", "assistant", "tool") and content:
                lines.append(f"- {m['role']}: {content[:160]}")
        text = "Earlier conversation (scripted summary):\n" + "\n".join(lines[-20:])
        return ModelReply(text, (), _usage(messages, len(text) // 4 + 1), "stop", self.name)


def render_answer(template: str, results: Sequence[str], query: str) -> str:
    """``template`` with ``{result[N]}``, ``{last_result}`` and ``{query}`` filled in; raises
    `ScriptError` for a template that names anything else or is malformed."""
    values = {"result": _Results(results), "last_result": results[-1] if results else "", "query": query}
    try:
        return template.format_map(values)
    except (KeyError, IndexError, ValueError, AttributeError, TypeError) as exc:
        raise ScriptError(f"the script's answer template is invalid: {type(exc).__name__}: {exc}") from None


def _usage(messages: Sequence[Message], completion: int) -> Usage:
    chars = sum(len(str(m.get("content") or "")) for m in messages)
    return Usage(prompt_tokens=chars // 4 + 1, completion_tokens=completion)


def _parse(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScriptError(f"cannot read script {path}: {exc.strerror}") from None
    try:
        if path.suffix == ".toml":
            return tomllib.loads(text)
        if path.suffix in (".yaml", ".yml"):
            return yaml.safe_load(text)
        return json.loads(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ScriptError(f"malformed script {path}: {exc}") from None


def script_from_data(data: Any, *, source: str = "<script>") -> ScriptedModel:
    """A `ScriptedModel` from parsed script data; raises `ScriptError` naming ``source``."""
    if isinstance(data, list):
        data = {"steps": data}
    if not isinstance(data, dict):
        raise ScriptError(f"{source}: a script is an object with `steps` and `answer`")
    raw_steps = data.get("steps") or []
    if not isinstance(raw_steps, list):
        raise ScriptError(f"{source}: `steps` must be a list of {{tool, args}} objects")
    steps = []
    for i, raw in enumerate(raw_steps):
        if not isinstance(raw, dict) or not isinstance(raw.get("tool"), str):
            raise ScriptError(f"{source}: steps[{i}] needs a `tool` name")
        args = raw.get("args", raw.get("arguments", {}))
        if not isinstance(args, dict):
            raise ScriptError(f"{source}: steps[{i}].args must be an object")
        steps.append(ScriptStep(raw["tool"], args))
    answer = data.get("answer", data.get("final", "Done."))
    summary = data.get("summary")
    if not isinstance(answer, str) or (summary is not None and not isinstance(summary, str)):
        raise ScriptError(f"{source}: `answer` and `summary` must be text")
    try:
        render_answer(answer, [""] * len(steps), "")  # a broken template fails now, not after the run
    except ScriptError as exc:
        raise ScriptError(f"{source}: {exc}") from None
    fail_summary = data.get("fail_summary", False)
    if not isinstance(fail_summary, bool):
        raise ScriptError(f"{source}: `fail_summary` must be true or false")
    return ScriptedModel(steps, answer, summary=summary, fail_summary=fail_summary)


def load_script(path: Path) -> ScriptedModel:
    """Read a script file (``.json``, ``.toml``, ``.yaml``); raises `ScriptError`."""
    return script_from_data(_parse(path), source=str(path))
