"""Canaries: generated secrets in arguments and results never reach any byte on disk or stderr."""

from __future__ import annotations

import base64
import json
import random
import string
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from checkrein.audit import open_audit_trail

from .helpers import make_record, settings


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def make_canaries(seed: int) -> dict[str, str]:
    """Secret values by kind; each value is unique to this run."""
    rng = random.Random(seed)
    up, alnum = string.ascii_uppercase + string.digits, string.ascii_letters + string.digits

    def b64(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    jwt = ".".join([b64({"alg": "HS256", "typ": "JWT"}), b64({"sub": _rand(rng, alnum, 12)}), _rand(rng, alnum + "-_", 43)])
    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return {
        "aws": "AKIA" + _rand(rng, up, 16),
        "github": "ghp_" + _rand(rng, alnum, 36),
        "github_pat": "github_pat_" + _rand(rng, alnum, 22) + "_" + _rand(rng, alnum, 59),
        "jwt": jwt,
        "pem": pem,
        "url_password": _rand(rng, alnum, 18),
        "form_password": _rand(rng, alnum, 14),
        "keyed": _rand(rng, alnum, 24),
        "json_in_string": _rand(rng, alnum, 20),
    }


def needles(c: dict[str, str]) -> list[bytes]:
    """What must not appear: every secret whole, and the key material line of the PEM."""
    out = [v.encode() for k, v in c.items() if k != "pem"]
    body = [line for line in c["pem"].splitlines() if line and not line.startswith("-----")]
    out += [line.encode() for line in body]
    return out


def planted_args(c: dict[str, str]) -> dict[str, Any]:
    return {
        "note": f"use {c['aws']} for the bucket",
        "list": ["x", {"deep": [f"token {c['github']}"]}],
        "pat": c["github_pat"],
        "headers": {"X-Auth": f"Bearer {c['jwt']}"},
        "key_file": c["pem"],
        "url": f"https://deploy:{c['url_password']}@git.example.com/repo.git",
        "form": f"user=bob&password={c['form_password']}&next=/",
        "Password": c["keyed"],
        "payload": json.dumps({"config": {"client_secret": c["json_in_string"], "ok": 1}}),
    }


def planted_result(c: dict[str, str]) -> dict[str, Any]:
    text = (f"found credentials: {c['aws']} and {c['jwt']}\n{c['pem']}\n"
            f"db url postgres://app:{c['url_password']}@db:5432/x password={c['form_password']}")
    return {"content": [{"type": "text", "text": text}], "structuredContent": {"token": c["github"]}, "isError": False}


def _all_bytes(d: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(d.iterdir()) if p.is_file())


def _policy_finder() -> Any:
    from checkrein.policy.analyzers import find_secrets

    return find_secrets


def _policy_view(args: dict[str, Any]) -> dict[str, Any]:
    """The `CallRecord` fields the gate fills from `decide`: the secrets analyzer's pointers as
    redactions, and whether it read every value (`Decision.secrets_scanned`)."""
    from checkrein.policy.analyzers import ScanContext, scan_arguments

    raw = scan_arguments(args, ScanContext())
    return {"redactions": tuple(dict.fromkeys(f.path for f in raw if f.analyzer == "secrets")),
            "args_scanned": not any(f.analyzer == "scan" for f in raw)}


@pytest.mark.parametrize("finder", ["builtin", "policy", "policy-scanned"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_planted_secrets_never_reach_jsonl_or_sqlite(tmp_path: Path, seed: int, finder: str) -> None:
    """Also when the policy's analyzer already scanned the arguments and passes its findings
    (``policy-scanned``): the trail then skips the injected finder on argument values."""
    c = make_canaries(seed)
    d = tmp_path / "audit"
    secret_finder = _policy_finder() if finder.startswith("policy") else None
    view = _policy_view(planted_args(c)) if finder == "policy-scanned" else {}
    if view:
        assert view["args_scanned"] and view["redactions"]

    async def run() -> bytes:
        trail = open_audit_trail(settings(d), tmp_path, secret_finder=secret_finder)
        for i in range(5):
            await trail.record_call(make_record(i, arguments=planted_args(c), result=planted_result(c),
                                                decision={"effect": "deny", "rule_id": "r", "risk": "high", "approval": None,
                                                          "reasons": [f"argument holds {c['aws']}"]}, **view))
        with anyio.fail_after(10):
            while trail.counters["events_written"] < 6:
                await anyio.sleep(0.01)
        live = _all_bytes(d)  # while open: includes index.sqlite-wal
        await trail.aclose()
        return live

    live = anyio.run(run)
    assert (d / "index.sqlite-wal").exists() or b"" != live
    final = _all_bytes(d)
    for needle in needles(c):
        assert needle not in live, needle[:12]
        assert needle not in final, needle[:12]
    # the events still say what was masked, by pointer
    call = next(json.loads(x) for x in (d / "segment-000001.jsonl").read_bytes().splitlines() if b'"type":"call"' in x)
    assert "/args_preview/Password" in call["redactions"]
    assert "/args_preview/payload" in call["redactions"]


def test_injected_secret_finder_is_used(tmp_path: Path) -> None:
    class Span:
        def __init__(self, start: int, end: int) -> None:
            self.start, self.end, self.kind = start, end, "custom"

    def finder(text: str) -> list[Span]:
        i = text.find("CUSTOM-")
        return [Span(i, i + 20)] if i >= 0 else []

    d = tmp_path / "audit"

    async def run() -> None:
        trail = open_audit_trail(settings(d), tmp_path, secret_finder=finder)
        await trail.record_call(make_record(1, arguments={"q": "value CUSTOM-abcdefghijklm end"}))
        await trail.aclose()

    anyio.run(run)
    data = (d / "segment-000001.jsonl").read_bytes()
    assert b"CUSTOM-abcdefghijklm" not in data and b"[REDACTED:custom]" in data


def test_a_crashing_secret_finder_masks_instead_of_leaking(tmp_path: Path) -> None:
    def finder(text: str) -> list[Any]:
        raise RuntimeError("boom " + text)

    d = tmp_path / "audit"

    async def run() -> dict[str, int]:
        trail = open_audit_trail(settings(d), tmp_path, secret_finder=finder)
        await trail.record_call(make_record(1, arguments={"q": "some-unmatched-secret-value"}))
        await trail.aclose()
        return trail.counters

    counters = anyio.run(run)
    data = (d / "segment-000001.jsonl").read_bytes()
    assert b"some-unmatched-secret-value" not in data
    assert counters["secret_finder_failures"] >= 1
    assert b"audit.secret_finder_failed" in data


_CHILD = textwrap.dedent(
    """
    import json, logging, sys
    from pathlib import Path
    import anyio
    sys.path.insert(0, sys.argv[3])
    from checkrein.audit import open_audit_trail
    from checkrein.config import AuditSettings
    from audit.helpers import make_record
    from audit.test_canary import make_canaries, planted_args, planted_result
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    c = make_canaries(int(sys.argv[2]))
    async def main():
        trail = open_audit_trail(AuditSettings(dir=sys.argv[1], checkpoint_every=3), Path("."))
        for i in range(5):
            await trail.record_call(make_record(i, arguments=planted_args(c), result=planted_result(c)))
        await trail.aclose()
        print(json.dumps(trail.counters), file=sys.stderr)
    anyio.run(main)
    """
)


def test_planted_secrets_never_reach_the_writer_processes_stderr(tmp_path: Path) -> None:
    tests_dir = str(Path(__file__).resolve().parent.parent)
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path / "audit"), "7", tests_dir],
        capture_output=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    c = make_canaries(7)
    for needle in needles(c):
        assert needle not in proc.stderr and needle not in proc.stdout
    for needle in needles(c):
        assert needle not in _all_bytes(tmp_path / "audit")


def test_results_are_scanned_by_the_injected_finder_even_when_arguments_were(tmp_path: Path) -> None:
    """`args_scanned` covers the arguments only: the result summary gets the injected finder."""
    class Span:
        def __init__(self, start: int) -> None:
            self.start, self.end, self.kind = start, start + 20, "custom"

    def finder(text: str) -> list[Span]:
        i = text.find("CUSTOM-")
        return [Span(i)] if i >= 0 else []

    d = tmp_path / "audit"
    result = {"content": [{"type": "text", "text": "value CUSTOM-abcdefghijklm end"}], "isError": False}

    async def run() -> None:
        trail = open_audit_trail(settings(d), tmp_path, secret_finder=finder)
        await trail.record_call(make_record(1, arguments={"q": "plain"}, result=result, args_scanned=True))
        await trail.aclose()

    anyio.run(run)
    data = (d / "segment-000001.jsonl").read_bytes()
    assert b"CUSTOM-abcdefghijklm" not in data and b"[REDACTED:custom]" in data
