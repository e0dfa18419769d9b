"""`hosts.classify_host`: internal addresses in every notation, internal names, and public hosts."""

from __future__ import annotations

import pytest

from checkrein.policy.analyzers.hosts import canonical_host, classify_host


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


@pytest.mark.parametrize(
    ("host", "kind"),
    [
        ("127\u30020\u30020\u30021", "loopback"),  # ideographic full stops
        ("169\uff61254\uff61169\uff61254", "metadata"),  # halfwidth ideographic full stops
        ("\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11", "loopback"),  # fullwidth digits and dots
        ("\u24db\u24de\u24d2\u24d0\u24db\u24d7\u24de\u24e2\u24e3", "internal_name"),  # circled letters
        ("loc\u200balhost", "internal_name"),  # a zero-width space inside the name
        ("168.63.129.16", "metadata"),  # Azure WireServer
        ("169.254.42.42", "metadata"),  # Scaleway
        ("[fd20:ce::254]", "metadata"),  # GCP over IPv6
        ("rancher-metadata", "metadata"),
        ("METADATA.GOOGLE.INTERNAL.", "metadata"),
        ("app.localhost.direct", "dns_rebinding_service"),
        ("x.lvh.me", "dns_rebinding_service"),
        ("abc.oast.fun", "dns_rebinding_service"),
        ("localhost.attacker.example", "internal_name"),
        ("locahost", "typo_domain"),
        ("lcoalhost.com", "typo_domain"),
        ("api.localtets.me", "typo_domain"),
    ],
)
def test_idna_spellings_clouds_and_loopback_families(host: str, kind: str) -> None:
    verdict = classify_host(host)
    assert verdict is not None and verdict.kind == kind, verdict


@pytest.mark.parametrize("host", ["google.com", "location.example.com", "localhost-news.com", "lvh.com", "news.ycombinator.com", "m\u00fcnchen.de"])
def test_public_names_near_internal_ones_stay_clean(host: str) -> None:
    assert classify_host(host) is None


def test_canonical_host_maps_like_an_http_client() -> None:
    assert canonical_host("EXAMPLE\u3002COM.") == "example.com"
    assert canonical_host("\uff41\uff50\uff49.example.com") == "api.example.com"
