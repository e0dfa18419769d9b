"""How a browser carries the bearer token the HTTP guard checks, and the view's mount point.

`BrowserLogin` sits outside the guard (`checkrein.frontend.http.HttpGuard`, which decides): a
visit to ``...?token=T`` is passed on as ``Authorization: Bearer T``; when the guard lets it
through, the view answers with a redirect that drops the token from the address bar, and this
middleware adds a cookie holding a random session id (``HttpOnly; SameSite=Strict``) that maps to
T in memory only. Later requests with that cookie are passed on with T again. The token itself
never goes into a cookie, which browsers would also send to every other port on the host.
A refused browser request (401) gets a page saying how to log in instead of JSON.
"""

from __future__ import annotations

import collections
import html
import secrets
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["BrowserLogin", "UiMount"]

_MAX_SESSIONS = 256


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def _under(path: str, prefix: str) -> bool:
    return not prefix or path == prefix or path.startswith(prefix + "/")


class BrowserLogin:
    """ASGI middleware for the paths under ``prefix`` ("" = all)."""

    def __init__(self, app: ASGIApp, *, prefix: str = "", login_hint: str = "") -> None:
        self.app = app
        self.prefix = prefix.rstrip("/")
        self.login_hint = login_hint
        """Shown on the 401 page, e.g. the command that prints the address with the token."""
        self._sessions: collections.OrderedDict[str, str] = collections.OrderedDict()

    def _cookie_name(self, headers: dict[str, str]) -> str:
        # One name per port: two checkrein views on one host must not overwrite each other's.
        port = headers.get("host", "").rpartition(":")[2]
        return f"checkrein_ui_{port}" if port.isdigit() else "checkrein_ui"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _under(scope.get("path", ""), self.prefix):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        name = self._cookie_name(headers)
        token = None
        if "authorization" not in headers:
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
            token = query.get("token") or None
            sid = None
            if token is None:
                cookie: SimpleCookie = SimpleCookie()
                try:
                    cookie.load(headers.get("cookie", ""))
                except Exception:  # noqa: BLE001 - a malformed Cookie header is no credential
                    cookie = SimpleCookie()
                sid = cookie[name].value if name in cookie else None
            stored = self._sessions.get(sid) if sid else None
            presented = token or stored
            if presented:
                scope = dict(scope)
                scope["headers"] = [*scope.get("headers", []), (b"authorization", f"Bearer {presented}".encode("latin-1"))]
        wants_html = "text/html" in headers.get("accept", "")
        login = token
        replaced = False

        async def send_wrapped(message: Message) -> None:
            nonlocal replaced
            if message["type"] == "http.response.start":
                status = message["status"]
                if status == 401 and wants_html:
                    replaced = True
                    await self._login_page(send)
                    return
                if login is not None and 300 <= status < 400:
                    message = dict(message)
                    message["headers"] = [*message.get("headers", []), (b"set-cookie", self._session_cookie(name, login, scope))]
            elif replaced:
                return  # the guard's JSON body: the login page was sent instead
            await send(message)

        await self.app(scope, receive, send_wrapped)

    def _session_cookie(self, name: str, token: str, scope: Scope) -> bytes:
        sid = secrets.token_urlsafe(32)
        self._sessions[sid] = token
        while len(self._sessions) > _MAX_SESSIONS:
            self._sessions.popitem(last=False)
        secure = "; Secure" if scope.get("scheme") == "https" else ""
        path = self.prefix or "/"
        return f"{name}={sid}; Path={path}; HttpOnly; SameSite=Strict{secure}".encode("latin-1")

    async def _login_page(self, send: Send) -> None:
        hint = f"<p>{html.escape(self.login_hint)}</p>" if self.login_hint else ""
        body = (
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>checkrein audit: log in</title></head>"
            "<body><h1>This audit view needs a token</h1>"
            "<p>Open the address with <code>?token=YOUR_TOKEN</code> once; the browser then keeps a session "
            "cookie for this view.</p>"
            f"{hint}</body></html>"
        ).encode()
        await send({"type": "http.response.start", "status": 401, "headers": [
            (b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(body)).encode()),
            (b"content-security-policy", b"default-src 'none'"), (b"cache-control", b"no-store"),
            (b"www-authenticate", b'Bearer realm="checkrein"'),
        ]})
        await send({"type": "http.response.body", "body": body})


class UiMount:
    """Routes ``prefix`` and everything under it to the view, everything else to ``app``."""

    def __init__(self, app: ASGIApp, ui: ASGIApp, *, prefix: str = "/ui") -> None:
        self.app = app
        self.prefix = prefix.rstrip("/")
        self._ui = Starlette(routes=[Mount(self.prefix, app=ui)])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and _under(scope.get("path", ""), self.prefix):
            await self._ui(scope, receive, send)
        else:
            await self.app(scope, receive, send)
