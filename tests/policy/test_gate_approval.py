"""Approvers and the binding of grants to arguments, policy and expiry (gate/approval.py)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import pytest
from _policy_helpers import call

from checkrein.canonical import digest
from checkrein.catalog.model import ToolDefinition
from checkrein.config import ApprovalSettings, config_from_mapping, parse_config
from checkrein.errors import ApprovalError
from checkrein.gate.approval import (
    AutoApprover,
    BoundApprover,
    CliApprover,
    DenyApprover,
    ElicitAnswer,
    ElicitApprover,
    WebhookApprover,
    build_approver,
    mask_secret_key,
    printable,
    request_summary,
)
from checkrein.gate.seams import ApprovalRequest, ApprovalResult
from checkrein.gate.steps import approval_text
from checkrein.policy import Decision, Finding, Identity, SessionState, compile_policy, decide

pytestmark = pytest.mark.anyio


def request(arguments: dict[str, Any] | None = None, risk: str = "high", policy_digest: str = "sha256:p1") -> ApprovalRequest:
    args = {"path": "/tmp/x"} if arguments is None else arguments
    d = Decision("ask", f"risk:{risk}", ("needs approval",), risk)  # type: ignore[arg-type]
    return ApprovalRequest(call("fs__rm", args), d, digest(args), policy_digest, "alice wants to call fs__rm")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Counting:
    name = "counting"

    def __init__(self, grant: bool = True) -> None:
        self.asked = 0
        self.grant = grant

    async def approve(self, req: ApprovalRequest) -> ApprovalResult:
        self.asked += 1
        return ApprovalResult(self.grant, self.name, "ok")


@pytest.mark.parametrize(("risk", "granted"), [("low", True), ("medium", True), ("high", False), ("critical", False), ("unknown", False)])
async def test_auto_approves_low_and_medium_only(risk: str, granted: bool) -> None:
    assert (await AutoApprover().approve(request(risk=risk))).granted is granted


@pytest.mark.parametrize(("risk", "granted"), [("high", True), ("critical", False), ("unknown", False)])
async def test_auto_max_risk_raises_the_automatic_threshold_but_never_for_unknown(risk: str, granted: bool) -> None:
    assert (await AutoApprover("high").approve(request(risk=risk))).granted is granted


async def test_auto_never_approves_an_ask_caused_by_argument_findings() -> None:
    finding = Finding("secrets", "aws_access_key", "/text")
    req = request(risk="low")
    req = replace(req, decision=replace(req.decision, findings=(finding,)))
    result = await AutoApprover("critical").approve(req)
    assert not result.granted and "secrets:aws_access_key" in result.reason


async def test_deny_mode_refuses() -> None:
    assert not (await DenyApprover().approve(request())).granted


async def test_a_grant_is_reused_for_the_same_arguments_and_policy_until_it_expires() -> None:
    clock, inner = FakeClock(), Counting()
    bound = BoundApprover(inner, ttl_s=300, timeout_s=5, clock=clock)
    first = await bound.approve(request())
    assert first.granted and first.expires_at == 1300.0
    again = await bound.approve(request())
    assert again.granted and "reused" in again.reason
    assert inner.asked == 1
    clock.now = 1300.0
    await bound.approve(request())
    assert inner.asked == 2


async def test_a_grant_cannot_be_replayed_for_other_arguments() -> None:
    inner = Counting()
    bound = BoundApprover(inner, ttl_s=300, timeout_s=5, clock=FakeClock())
    await bound.approve(request({"path": "/tmp/x"}))
    await bound.approve(request({"path": "/etc/passwd"}))
    assert inner.asked == 2


async def test_a_grant_cannot_be_replayed_by_another_identity() -> None:
    inner = Counting()
    bound = BoundApprover(inner, ttl_s=300, timeout_s=5, clock=FakeClock())
    mine = request()
    theirs = ApprovalRequest(call("fs__rm", {"path": "/tmp/x"}, Identity("mallory")), mine.decision, mine.args_digest, "sha256:p1", "")
    await bound.approve(mine)
    await bound.approve(theirs)
    assert inner.asked == 2


async def test_a_grant_does_not_survive_a_policy_change() -> None:
    inner = Counting()
    bound = BoundApprover(inner, ttl_s=300, timeout_s=5, clock=FakeClock())
    await bound.approve(request(policy_digest="sha256:p1"))
    await bound.approve(request(policy_digest="sha256:p2"))
    assert inner.asked == 2


async def test_a_refusal_is_not_cached() -> None:
    inner = Counting(grant=False)
    bound = BoundApprover(inner, ttl_s=300, timeout_s=5, clock=FakeClock())
    assert not (await bound.approve(request())).granted
    assert not (await bound.approve(request())).granted
    assert inner.asked == 2


async def test_a_request_whose_digest_lies_about_the_arguments_is_refused() -> None:
    inner = Counting()
    bound = BoundApprover(inner, ttl_s=300, timeout_s=5, clock=FakeClock())
    honest = request({"path": "/tmp/x"})
    forged = ApprovalRequest(call("fs__rm", {"path": "/etc"}), honest.decision, honest.args_digest, "sha256:p1", "")
    with pytest.raises(ApprovalError):
        await bound.approve(forged)
    assert inner.asked == 0


async def test_grants_are_bounded_in_number() -> None:
    bound = BoundApprover(Counting(), ttl_s=300, timeout_s=5, clock=FakeClock(), max_grants=2)
    for i in range(5):
        await bound.approve(request({"i": i}))
    assert len(bound._grants) == 2


@pytest.mark.parametrize(
    ("answer", "granted"), [("accept", True), ("decline", False), ("cancel", False), ("unsupported", False)]
)
async def test_elicit_grants_only_on_accept(answer: ElicitAnswer, granted: bool) -> None:
    seen: list[str] = []

    async def elicitor(req: ApprovalRequest) -> ElicitAnswer:
        seen.append(req.summary)
        return answer

    assert (await ElicitApprover(elicitor).approve(request())).granted is granted
    assert seen == ["alice wants to call fs__rm"]


async def test_elicit_without_a_frontend_seam_denies() -> None:
    assert not (await ElicitApprover(None).approve(request())).granted


# --- webhook: a real HTTP server on 127.0.0.1 ----------------------------------------------------


class _Hook(BaseHTTPRequestHandler):
    replies: list[tuple[int, bytes]] = []
    bodies: list[dict[str, Any]] = []
    headers_seen: list[dict[str, str]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        type(self).bodies.append(json.loads(self.rfile.read(length)))
        type(self).headers_seen.append(dict(self.headers))
        status, body = type(self).replies.pop(0)
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def webhook() -> Iterator[tuple[str, type[_Hook]]]:
    handler = type("Hook", (_Hook,), {"replies": [], "bodies": [], "headers_seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/approve", handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


async def test_webhook_allow_and_deny_answers(webhook: tuple[str, type[_Hook]]) -> None:
    url, hook = webhook
    hook.replies += [(200, b'{"decision": "allow", "reason": "looks fine"}'), (200, b'{"decision": "deny"}')]
    approver = WebhookApprover(url, {"authorization": "Bearer t0k"}, timeout_s=5)
    with_finding = request()
    with_finding = replace(with_finding, decision=replace(with_finding.decision, findings=(Finding("paths", "absolute", "/path"),)))
    with anyio.fail_after(10):
        yes = await approver.approve(with_finding)
        no = await approver.approve(request())
    assert (yes.granted, yes.reason) == (True, "looks fine")
    assert not no.granted
    body = hook.bodies[0]
    assert body["exposed_name"] == "fs__rm"
    assert body["args_digest"] == digest({"path": "/tmp/x"})
    assert body["risk"] == "high"
    assert body["findings"][0]["path"] == "/path"
    assert "/tmp/x" not in json.dumps(body)  # raw arguments only ever travel inside the gate's summary
    assert hook.headers_seen[0]["authorization"] == "Bearer t0k"


async def test_the_webhook_never_receives_a_secret_that_is_an_argument_key(webhook: tuple[str, type[_Hook]]) -> None:
    """Regression: a finding at a secret object key (`{"ghp_...": 1}`) went out with the raw key in
    its path, in the reason naming it and in the summary; they carry the masked key, as the audit's."""
    url, hook = webhook
    hook.replies.append((200, b'{"decision": "deny"}'))
    key = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    args = {"opts": {key: 1, "mode": "fast"}}
    tools = {"hr__edit": ToolDefinition("hr", "edit", "edit records", {"type": "object"})}
    toml = '[[servers]]\nname = "hr"\ncommand = "hr"\n[policy]\nallow = ["hr__*"]\n[policy.analyzers]\nsecrets = "ask"\n'
    the_call = call("hr__edit", args)
    d = decide(compile_policy(parse_config(toml), tools), the_call, SessionState("s1"), 0.0)
    assert d.effect == "ask" and [f.path for f in d.findings] == [f"/opts/{key}"]
    req = ApprovalRequest(the_call, d, digest(args), "sha256:p1", approval_text(the_call, d))
    with anyio.fail_after(10):
        assert not (await WebhookApprover(url, timeout_s=5).approve(req)).granted
    body = hook.bodies[0]
    assert key[4:] not in json.dumps(body)
    assert body["findings"][0]["path"] == "/opts/[REDACTED:github_token]"
    assert body["reasons"] == ["secrets found github_token at /opts/[REDACTED:github_token]"]
    assert '"mode":"fast"' in body["summary"] and "[REDACTED:github_token]" in body["summary"]


@pytest.mark.parametrize(
    "reply",
    [(500, b'{"decision": "allow"}'), (200, b"not json"), (200, b'{"decision": "maybe"}'), (200, b"[]")],
    ids=["http-500", "not-json", "bad-decision", "not-object"],
)
async def test_webhook_errors_fail_closed(webhook: tuple[str, type[_Hook]], reply: tuple[int, bytes]) -> None:
    url, hook = webhook
    hook.replies.append(reply)
    bound = BoundApprover(WebhookApprover(url, timeout_s=5), ttl_s=60, timeout_s=5, clock=FakeClock())
    with anyio.fail_after(10), pytest.raises(ApprovalError):
        await bound.approve(request())


async def test_webhook_unreachable_fails_closed() -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    bound = BoundApprover(WebhookApprover(f"http://127.0.0.1:{port}/", timeout_s=5), ttl_s=60, timeout_s=5, clock=FakeClock())
    with anyio.fail_after(10), pytest.raises(ApprovalError):
        await bound.approve(request())


# --- cli: a real pseudo-terminal stands in for /dev/tty -----------------------------------------


def _answer_on(master: int, text: bytes, shown: list[bytes] | None = None) -> threading.Thread:
    def answer() -> None:
        seen = b""
        while b"[y/N]" not in seen:  # bounded by the test's fail_after and the prompt timeout
            seen += os.read(master, 1024)
        if shown is not None:
            shown.append(seen)
        os.write(master, text)

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize(("typed", "granted"), [(b"y\n", True), (b"yes\n", True), (b"n\n", False), (b"\n", False)])
async def test_cli_prompts_on_the_terminal_not_stdio(typed: bytes, granted: bool) -> None:
    master, slave = os.openpty()
    try:
        t = _answer_on(master, typed)
        approver = CliApprover(os.ttyname(slave), timeout_s=10)
        with anyio.fail_after(15):
            result = await approver.approve(request())
        t.join(5)
        assert result.granted is granted
    finally:
        os.close(master)
        os.close(slave)


async def test_cli_escapes_control_characters_in_the_summary() -> None:
    master, slave = os.openpty()
    try:
        shown: list[bytes] = []
        t = _answer_on(master, b"n\n", shown)
        hostile = ApprovalRequest(request().call, request().decision, request().args_digest, "sha256:p1", "rm \x1b[2Jharmless\u202e")
        with anyio.fail_after(15):
            await CliApprover(os.ttyname(slave), timeout_s=10).approve(hostile)
        t.join(5)
        assert b"\x1b" not in shown[0]
        assert b"\\x1b[2Jharmless\\u202e" in shown[0]
    finally:
        os.close(master)
        os.close(slave)


def test_printable_escapes_controls_and_caps_length() -> None:
    assert printable("a\nb\u200bc") == "a\\x0ab\\u200bc"
    assert len(printable("x" * 5000)) == 1000


async def test_cli_without_a_terminal_fails_closed(tmp_path: Any) -> None:
    approver = CliApprover(str(tmp_path / "no-tty"), timeout_s=1)
    bound = BoundApprover(approver, ttl_s=60, timeout_s=5, clock=FakeClock())
    with anyio.fail_after(10), pytest.raises(ApprovalError):
        await bound.approve(request())


@pytest.mark.parametrize("mode", ["auto", "deny", "cli", "elicit"])
def test_build_approver_picks_the_mode(mode: str) -> None:
    bound = build_approver(ApprovalSettings(mode=mode), clock=FakeClock())  # type: ignore[arg-type]
    assert bound.name == mode
    assert bound.ttl_s == 300.0


def test_webhook_headers_resolved_at_load_reach_the_approver() -> None:
    """`${VAR}` in `[approval] webhook_headers` is resolved by the loader, not by the approver."""
    approval = {"mode": "webhook", "webhook_url": "http://127.0.0.1:1/", "webhook_headers": {"x-token": "${HOOK_TOKEN}"}}
    cfg = config_from_mapping({"approval": approval}, environ={"HOOK_TOKEN": "s3cret"})
    assert cfg.as_written()["approval"]["webhook_headers"] == {"x-token": "${HOOK_TOKEN}"}
    bound = build_approver(cfg.approval, clock=FakeClock())
    assert isinstance(bound.inner, WebhookApprover)
    assert bound.inner.headers == {"x-token": "s3cret"}


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("https://hooks.slack.com/services/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", "qW3rT5yU7iO9pA1sD3fG5hJ7"),
        ("-u bob:Hunter2/Zq8x", "Hunter2"),
        ('password="Zq8!Lm2Xv7"', "Zq8!Lm2Xv7"),
    ],
)
def test_a_secret_key_the_escaped_pointer_or_the_json_hides_is_masked_too(key: str, secret: str) -> None:
    """Regression (found in review): the reasons name a finding by its escaped pointer
    (`https:~1~1hooks...`), which the finder no longer reads as the webhook URL, and the summary was
    masked as one JSON text, where `"-u bob:..."` has a quote where curl's `-u` needs a space."""
    args = {"opts": {key: 1, "mode": "fast"}}
    tools = {"hr__edit": ToolDefinition("hr", "edit", "edit records", {"type": "object"})}
    toml = '[[servers]]\nname = "hr"\ncommand = "hr"\n[policy]\nallow = ["hr__*"]\n[policy.analyzers]\nsecrets = "ask"\n'
    the_call = call("hr__edit", args)
    d = decide(compile_policy(parse_config(toml), tools), the_call, SessionState("s1"), 0.0)
    assert d.effect == "ask"
    body = request_summary(ApprovalRequest(the_call, d, digest(args), "sha256:p1", approval_text(the_call, d, mask_secret_key)))
    assert secret not in json.dumps(body)
    assert '"mode":"fast"' in body["summary"]
