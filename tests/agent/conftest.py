"""A local OpenAI-compatible HTTP server for the agent tests (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from mcp import StdioServerParameters
from mcp.server.mcpserver import MCPServer

from checkrein.servers import knowledge, sandbox
from checkrein.servers.sandbox_paths import seed_sandbox


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Canned:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def completion(text: str | None = None, tool_calls: list[tuple[str, str, dict[str, Any]]] | None = None,
               *, prompt_tokens: int = 50, completion_tokens: int = 10) -> Canned:
    """A 200 chat.completion answer with ``text`` and/or ``(id, name, arguments)`` tool calls."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for cid, name, args in tool_calls
        ]
    return Canned(200, {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1_700_000_000, "model": "fake-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    })


def error(status: int, message: str, headers: dict[str, str] | None = None) -> Canned:
    return Canned(status, {"error": {"message": message, "type": "test_error", "code": str(status)}}, headers or {})


class FakeOpenAI:
    """Answers POST /v1/chat/completions with queued `Canned` replies and records each request."""

    def __init__(self) -> None:
        self.queue: list[Canned] = []
        self.requests: list[dict[str, Any]] = []
        self.auth: list[str] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with fake._lock:
                    fake.requests.append(body)
                    fake.auth.append(self.headers.get("authorization", ""))
                    canned = fake.queue.pop(0) if fake.queue else error(500, "no canned reply left")
                data = json.dumps(canned.body).encode()
                self.send_response(canned.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in canned.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        # A short poll interval: shutdown() waits for it, once per test.
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    fake.thread.start()
    try:
        yield fake
    finally:
        fake.close()


@pytest.fixture
def server_env(tmp_path: Path) -> dict[str, str]:
    from checkrein.servers.knowledge_seed import seed_knowledge_base

    seed_knowledge_base(tmp_path / "kb.db")
    return {
        "PATH": "/usr/bin:/bin",
        "CHECKREIN_STATE_DIR": str(tmp_path / "state"),
        "CHECKREIN_SANDBOX_DIR": str(tmp_path / "sandbox"),
        "CHECKREIN_KB_PATH": str(tmp_path / "kb.db"),
        "CHECKREIN_MONITOR_AUDIT": str(tmp_path / "monitor-audit.jsonl"),
    }


def bundled(name: str, env: dict[str, str]) -> StdioServerParameters:
    """A bundled server as a stdio subprocess."""
    return StdioServerParameters(command=sys.executable, args=["-m", f"checkrein.servers.{name}"], env=env)


def inproc(name: str, env: dict[str, str]) -> MCPServer[Any]:
    """A bundled server object, served in-process over JSON-RPC memory streams (no process start:
    keeps the suite fast where the transport is not what a test is about)."""
    if name == "sandbox":
        root = Path(env["CHECKREIN_SANDBOX_DIR"])
        seed_sandbox(root)
        return sandbox.build_server(root.resolve())
    if name == "knowledge":
        return knowledge.build_server(Path(env["CHECKREIN_KB_PATH"]))
    raise ValueError(name)
