"""`HttpWitnessTransport`: the one module of `audit/` that opens sockets.

It is used only by the checkpoint publisher's thread and the `checkrein audit witness|verify`
commands, never on a call's path, and nothing else in `audit/` imports it (a test checks). The
client keeps connections alive across pushes, as tlog-witness recommends.
"""

from __future__ import annotations

import threading

import httpx2

from .witness import WitnessUnreachable

__all__ = ["HttpWitnessTransport"]


class HttpWitnessTransport:
    """`checkrein.audit.witness.WitnessTransport` over httpx2 (the HTTP client the MCP SDK ships)."""

    def __init__(self) -> None:
        self._client: httpx2.Client | None = None
        self._lock = threading.Lock()

    def post(self, url: str, body: bytes, timeout_s: float) -> tuple[int, str, bytes]:
        with self._lock:
            if self._client is None:
                self._client = httpx2.Client(follow_redirects=False)  # honours HTTPS_PROXY / NO_PROXY
            client = self._client
        try:
            resp = client.post(url, content=body, timeout=timeout_s,
                               headers={"Content-Type": "text/plain; charset=utf-8"})
        except httpx2.HTTPError as exc:
            raise WitnessUnreachable(f"{type(exc).__name__}: {exc}") from None
        return resp.status_code, resp.headers.get("content-type", ""), resp.content[:65536]

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
