"""`BrowserLogin` in front of the real `HttpGuard` (the gateway's token and Origin rules): how a
browser gets in, what it keeps, and what is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from checkrein.frontend import HttpGuard
from checkrein.frontend.auth import Authenticator
from checkrein.policy import Identity
from checkrein.ui import BrowserLogin, build_ui_app

from .helpers import call, write_audit

TOKEN = "s3cret-gateway-token"
CI_TOKEN = "ci-identity-token"


@pytest.fixture(scope="module")
def audit_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ui-login") / "audit"
    write_audit(d, [call(i) for i in range(5)])
    return d


@pytest.fixture
def client(audit_dir: Path) -> Iterator[TestClient]:
    auth = Authenticator(TOKEN, {CI_TOKEN: Identity("ci", ("bot",), "token")})
    app = BrowserLogin(HttpGuard(build_ui_app(audit_dir), auth, ("https://app.example",)), login_hint="ask ops")
    with TestClient(app, base_url="http://127.0.0.1:8766") as c:
        yield c


def test_no_token_is_refused_with_a_login_page_for_browsers(client: TestClient) -> None:
    """Without a token a browser gets a 401 page saying how to log in; scripts get the guard's JSON."""
    page = client.get("/", headers={"accept": "text/html"})
    assert page.status_code == 401 and "needs a token" in page.text and "ask ops" in page.text
    assert page.headers["content-type"].startswith("text/html")
    api = client.get("/events.json", headers={"accept": "application/json"})
    assert api.status_code == 401 and api.json()["error"] == "unauthorized"


def test_token_in_the_address_becomes_a_session_cookie(client: TestClient) -> None:
    """?token=T (valid) redirects without it and sets an HttpOnly, SameSite=Strict session cookie
    that is not the token; the cookie alone then gets in."""
    r = client.get("/", params={"token": TOKEN, "outcome": "denied"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/?outcome=denied"
    cookie = r.headers["set-cookie"]
    assert cookie.startswith("checkrein_ui_8766=") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert TOKEN not in cookie and "Path=/;" in cookie
    assert client.get("/", headers={"accept": "text/html"}).status_code == 200  # the client kept the cookie


def test_an_identity_token_works_like_the_gateway_token(client: TestClient) -> None:
    """Any token the gateway accepts ([[identities]] too) opens the view."""
    assert client.get("/", params={"token": CI_TOKEN}, follow_redirects=False).status_code == 303
    assert client.get("/health").status_code == 200
    assert client.get("/", headers={"authorization": f"Bearer {CI_TOKEN}"}).status_code == 200


def test_a_wrong_token_sets_no_cookie(client: TestClient) -> None:
    """An invalid ?token= is a 401 and leaves no session behind."""
    r = client.get("/", params={"token": "guess"}, headers={"accept": "text/html"}, follow_redirects=False)
    assert r.status_code == 401 and "set-cookie" not in r.headers
    assert client.get("/", headers={"accept": "text/html"}).status_code == 401


def test_a_forged_session_cookie_is_no_credential(client: TestClient) -> None:
    """Only session ids this process issued count; anything else is refused."""
    client.cookies.set("checkrein_ui_8766", "made-up")
    assert client.get("/", headers={"accept": "text/html"}).status_code == 401
    client.cookies.clear()
    client.cookies.set("checkrein_ui_8766", TOKEN)  # the token itself is not a session id either
    assert client.get("/", headers={"accept": "text/html"}).status_code == 401


def test_foreign_origins_are_refused_like_on_mcp(client: TestClient) -> None:
    """The guard's Origin rule applies: loopback and configured origins pass, others get 403."""
    auth = {"authorization": f"Bearer {TOKEN}"}
    assert client.get("/", headers={**auth, "origin": "https://evil.example"}).status_code == 403
    assert client.get("/", headers={**auth, "origin": "https://app.example"}).status_code == 200
    assert client.get("/", headers={**auth, "origin": "http://localhost:9999"}).status_code == 200
