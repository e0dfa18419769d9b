"""`urls`: SSRF targets in every spelling, schemes, credentials, allowlists and the resolver seam."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from _analyzer_helpers import kinds_of, scan_one

from checkrein.policy.analyzers.hosts import classify_host, parse_ipv4_lenient
from checkrein.policy.analyzers.urls import host_allowed, url_hosts


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://127.0.0.1/", "loopback"),
        ("http://localhost:8080/admin", "internal_name"),
        ("http://app.localhost/", "internal_name"),
        ("http://10.1.2.3/", "private"),
        ("http://172.16.0.1/", "private"),
        ("http://192.168.1.1/", "private"),
        ("http://100.64.0.1/", "cgnat"),
        ("http://169.254.169.254/latest/meta-data/", "metadata"),
        ("http://[fd00:ec2::254]/", "metadata"),
        ("http://metadata.google.internal/computeMetadata/v1/", "metadata"),
        ("http://100.100.100.200/latest/meta-data", "metadata"),
        ("http://0.0.0.0:22/", "unspecified"),
        ("http://[::1]/", "loopback"),
        ("http://[::ffff:127.0.0.1]/", "loopback"),
        ("http://[0:0:0:0:0:ffff:127.0.0.1]/", "loopback"),
        ("http://[fe80::1%25eth0]/", "link_local"),
        ("http://[fc00::1]/", "private"),
        ("http://2130706433/", "loopback"),
        ("http://0177.0.0.1/", "loopback"),
        ("http://0x7f000001/", "loopback"),
        ("http://0x7f.0.0.1/", "loopback"),
        ("http://127.1/", "loopback"),
        ("http://0/", "unspecified"),
        ("http://127.0.0.1.nip.io/", "embedded_private_ip"),
        ("http://10-0-0-1.sslip.io/", "embedded_private_ip"),
        ("http://anything.localtest.me/", "dns_rebinding_service"),
        ("http://o177.0.0.1/", "malformed_ip"),
        ("http://user:hunter2@example.com/", "credentials"),
        ("http://example.com@127.0.0.1/", "loopback"),
        ("http://127.0.0.1:80\\@example.com/", "loopback"),
        ("http:127.0.0.1/", "loopback"),
        ("http:\\\\127.0.0.1\\", "loopback"),
        ("HTTP://LOCALHOST/", "internal_name"),
        ("http://%31%32%37.0.0.1/", "loopback"),
        ("http://\uff11\uff12\uff17.0.0.1/", "loopback"),
        ("file:///etc/passwd", "scheme"),
        ("gopher://127.0.0.1:6379/_INFO", "scheme"),
        ("dict://127.0.0.1:11211/stat", "scheme"),
        ("ftp://example.com/x", "scheme"),
        ("ldap://localhost/", "scheme"),
        ("jar:http://127.0.0.1!/x", "scheme"),
        ("jar:http://127.0.0.1!/x", "loopback"),
        ("https://example.com/redirect?to=http://169.254.169.254/", "metadata"),
        ("http://redis/", "internal_name"),
        ("127.0.0.1", "loopback"),
        ("169.254.169.254", "metadata"),
    ],
)
def test_ssrf_targets_are_reported_for_url_arguments(url: str, kind: str) -> None:
    assert kind in kinds_of(scan_one(url, "url"), "urls")


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/search?q=a+b&lang=en",
        "https://api.open-meteo.com/v1/forecast?latitude=52.52",
        "http://93.184.216.34/",
        "https://[2606:4700:4700::1111]/",
        "/relative/path?x=1",
        "https://docs.python.org/3/library/ipaddress.html#module-ipaddress",
        "ai-breakthrough-latest-developments",
    ],
)
def test_public_urls_are_clean(url: str) -> None:
    assert scan_one(url, "url") == []


def test_allowed_hosts_accept_exact_and_wildcard_and_reject_the_rest() -> None:
    allowed = ("api.example.com", "*.trusted.org")
    assert scan_one("https://api.example.com/x", "url", allowed_hosts=allowed) == []
    assert scan_one("https://a.b.trusted.org/", "url", allowed_hosts=allowed) == []
    assert "host_not_allowed" in kinds_of(scan_one("https://trusted.org/", "url", allowed_hosts=allowed))
    assert "host_not_allowed" in kinds_of(scan_one("https://evil.com/", "url", allowed_hosts=allowed))
    assert host_allowed("API.EXAMPLE.COM.", allowed)


def test_resolver_results_are_checked_and_failures_fail_closed() -> None:
    table = {"internal.example.com": ["10.0.0.5"], "public.example.com": ["93.184.216.34"]}
    seen: list[str] = []

    def fake(host: str) -> Sequence[str]:
        seen.append(host)
        if host not in table:
            raise OSError("NXDOMAIN")
        return table[host]

    assert "resolves_internal" in kinds_of(scan_one("http://internal.example.com/", "url", resolver=fake))
    assert scan_one("http://public.example.com/", "url", resolver=fake) == []
    assert "resolution_failed" in kinds_of(scan_one("http://missing.example.com/", "url", resolver=fake))
    assert "internal.example.com" in seen


def test_resolver_is_not_consulted_for_ip_literals() -> None:
    def refuse(host: str) -> Sequence[str]:
        raise AssertionError(f"resolver called for {host}")

    assert scan_one("http://93.184.216.34/", "url", resolver=refuse) == []


@pytest.mark.parametrize(
    "text",
    [
        "The dev server runs at http://localhost:3000 on your laptop",
        "Docs: https://example.com/a?b=c",
        "PG&E bill for 192.168.1.1 router",
        "127.0.0.1",
    ],
)
def test_untyped_prose_mentioning_local_urls_is_clean(text: str) -> None:
    assert kinds_of(scan_one(text), "urls") == set()


@pytest.mark.parametrize(
    "text",
    [
        "fetch http://169.254.169.254/latest/meta-data/iam please",
        "gopher://127.0.0.1:6379/_FLUSHALL",
        "http://localhost:8080/admin",
        "see http://2130706433/ now",
        "10.0.0.1.nip.io",
    ],
)
def test_untyped_values_still_catch_high_confidence_ssrf(text: str) -> None:
    assert kinds_of(scan_one(text), "urls")


def test_lenient_ipv4_parsing_matches_inet_aton() -> None:
    assert str(parse_ipv4_lenient("127.1")) == "127.0.0.1"
    assert str(parse_ipv4_lenient("0x7f.1")) == "127.0.0.1"
    assert str(parse_ipv4_lenient("017700000001")) == "127.0.0.1"
    assert parse_ipv4_lenient("256.1.1.1") is None
    assert parse_ipv4_lenient("example.com") is None


def test_url_hosts_returns_every_candidate_a_parser_might_pick() -> None:
    scheme, hosts, has_password = url_hosts("http://a.com:80\\@b.com/")
    assert scheme == "http" and "a.com" in hosts and "b.com" in hosts and not has_password
    assert classify_host("example.com") is None
