"""`hosts.classify_host`: internal addresses in every notation, internal names, and public hosts."""

from __future__ import annotations

import pytest

from checkrein.policy.analyzers.hosts import classify_host


@pytest.mark.parametrize(
    ("host", "kind"),
    [
        ("[64:ff9b::7f00:1]", "loopback"),  # NAT64 embedding 127.0.0.1
        ("[2002:7f00:1::]", "loopback"),  # 6to4 embedding 127.0.0.1
        ("[::ffff:a9fe:a9fe]", "metadata"),  # IPv4-mapped 169.254.169.254
        ("[::]", "unspecified"),
        ("[ff02::1]", "reserved"),
        ("2852039166", "metadata"),  # 169.254.169.254 as one decimal number
        ("0xa9fea9fe", "metadata"),
        ("0251.0376.0251.0376", "metadata"),
        ("192.0.0.192", "metadata"),
        ("224.0.0.1", "reserved"),
        ("ip-10-0-0-1.ec2.internal", "internal_name"),
        ("db-10-1-2-3.example.com", "embedded_private_ip"),
        ("7f000001.nip.io", "embedded_private_ip"),
        ("make-1.2.3.4-rebind-169.254-169.254-rr.1u.ms", "embedded_private_ip"),
        ("printer.local", "internal_name"),
        ("kubernetes.default.svc", "internal_name"),
    ],
)
def test_internal_hosts(host: str, kind: str) -> None:
    verdict = classify_host(host)
    assert verdict is not None and verdict.kind == kind, verdict


@pytest.mark.parametrize("host", ["example.com", "8.8.8.8", "[2606:4700:4700::1111]", "api.github.com", "xn--bcher-kva.example", "localhost-news.com"])
def test_public_hosts(host: str) -> None:
    assert classify_host(host) is None


def test_obfuscated_public_address_is_still_reported() -> None:
    verdict = classify_host("134744072")  # 8.8.8.8 as a decimal number
    assert verdict is not None and verdict.obfuscated
