"""C2SP tlog-policy files: the grammar, its refusals, and quorum evaluation over groups."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from checkrein.audit.note import ALG_COSIGNATURE_V1, VerifierKey
from checkrein.audit.tlog_policy import PolicyFileError, parse_tlog_policy


def _vkey(name: str, alg: int = ALG_COSIGNATURE_V1) -> str:
    return VerifierKey.for_key(name, Ed25519PrivateKey.generate().public_key(), alg).encode()


LOG = _vkey("example/log", 0x01)


def test_nested_groups_decide_the_quorum() -> None:
    text = (f"# comment\nlog {LOG} https://log.example\n"
            f"witness X1 {_vkey('x1')}\nwitness X2 {_vkey('x2')} http://127.0.0.1:1\nwitness X3 {_vkey('x3')}\n"
            "group X 2 X1 X2 X3\n"
            f"witness Y1 {_vkey('y1')}\n\twitness Y2 {_vkey('y2')}\ngroup Y any Y1 Y2\n"
            "group XY all X Y\nquorum XY\n")
    p = parse_tlog_policy(text)
    assert p.log_key("example/log") is not None and p.witnesses["X2"].url == "http://127.0.0.1:1"
    assert p.satisfied({"X1", "X3", "Y2"}) and not p.satisfied({"X1", "Y1"}) and not p.satisfied({"X1", "X2"})
    assert parse_tlog_policy("quorum none\n").satisfied(set())


@pytest.mark.parametrize(("text", "why"), [
    ("", "no quorum"),
    ("quorum w\n", "not a witness"),
    (f"witness w {_vkey('w')}\ngroup g 3 w\nquorum g\n", "threshold"),
    (f"witness w {_vkey('w')}\ngroup g any w w\nquorum g\n", "twice"),
    (f"witness w {LOG}\nquorum w\n", "cosignature key"),
    (f"log {_vkey('l')}\nquorum none\n", "log key"),
    (f"witness w {_vkey('w')}\nwitness w {_vkey('v')}\nquorum none\n", "already defined"),
    ("quorum none\nquorum none\n", "second quorum"),
    ("quorum none\nfrobnicate\n", "unknown line"),
])
def test_bad_policies_name_the_line_and_why(text: str, why: str) -> None:
    with pytest.raises(PolicyFileError, match=why):
        parse_tlog_policy(text)
