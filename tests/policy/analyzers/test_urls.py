"""`urls`: SSRF targets in every spelling, schemes, credentials, allowlists and the resolver seam."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from _analyzer_helpers import kinds_of, scan_one
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


# -- IDNA / UTS-46: every spelling a client maps to an internal host is that host ------------------

_INTERNAL_HOSTS = [
    "127.0.0.1", "127.8.9.10", "169.254.169.254", "100.100.100.200", "168.63.129.16", "localhost",
    "metadata.google.internal", "10.0.0.1", "192.168.0.1",
]  # fmt: skip


def _preimages() -> dict[str, list[str]]:
    """Code point -> every non-ASCII character that UTS-46 maps to exactly it (`．` -> `.`, `１` -> `1`)."""
    import idna

    wanted = set("".join(_INTERNAL_HOSTS))
    table: dict[str, list[str]] = {c: [] for c in wanted}
    for cp in range(0x80, 0x20000):
        ch = chr(cp)
        try:
            mapped = idna.uts46_remap(ch, std3_rules=False, transitional=False)
        except (idna.IDNAError, ValueError, IndexError):
            continue
        if mapped in table:
            table[mapped].append(ch)
    return table


_PREIMAGES = _preimages()
_INVISIBLE = ["\u00ad", "\u200b", "\u2060", "\ufeff"]  # UTS-46 deletes these


@st.composite
def _idna_spelling(draw: st.DrawFn) -> tuple[str, str]:
    host = draw(st.sampled_from(_INTERNAL_HOSTS))
    out: list[str] = []
    for c in host:
        out.append(draw(st.sampled_from([c, *_PREIMAGES[c]])))
        if draw(st.integers(0, 9)) == 0:
            out.append(draw(st.sampled_from(_INVISIBLE)))
    return host, "".join(out)


def test_every_dot_and_digit_has_idna_look_alikes() -> None:
    """The property below is not vacuous: dots and digits have several look-alikes each."""
    assert {"\u3002", "\uff0e", "\uff61"} <= set(_PREIMAGES["."])
    assert all(len(_PREIMAGES[d]) >= 3 for d in "0123456789")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_idna_spelling())
def test_any_host_idna_maps_to_an_internal_address_is_found(case: tuple[str, str]) -> None:
    """Whatever characters spell it, a host UTS-46 maps to loopback, private or metadata is reported."""
    plain, spelled = case
    expected = kinds_of(scan_one(f"http://{plain}/x", "url"), "urls")
    assert expected, plain
    found = kinds_of(scan_one(f"http://{spelled}/x", "url"), "urls")
    assert expected & found, (spelled, found)
    if plain in ("169.254.169.254", "metadata.google.internal", "168.63.129.16"):
        assert "metadata" in kinds_of(scan_one(f"fetch http://{spelled}/latest please"), "urls")


@pytest.mark.parametrize(
    "url",
    [
        "http://api.example.com\t@127.0.0.1/",
        "http://api.example.com\r\n@169.254.169.254/",
        "http://api.example.com@\n10.0.0.1/",
        "http://127.0.\t0.1/",
    ],
)
def test_tab_or_newline_before_the_at_sign_cannot_hide_the_host(url: str) -> None:
    """A WHATWG parser deletes TAB/CR/LF: the host after `@` is the one checked."""
    found = kinds_of(scan_one(url, "url", allowed_hosts=("api.example.com",)), "urls")
    assert found & {"loopback", "metadata", "private"}
    assert kinds_of(scan_one(url), "urls") & {"loopback", "metadata", "private"}


def test_tab_before_the_at_sign_cannot_hide_a_host_from_the_allowlist() -> None:
    found = kinds_of(scan_one("https://api.example.com\t@evil.example/", "url", allowed_hosts=("api.example.com",)))
    assert "host_not_allowed" in found


def test_idna_spellings_of_allowed_hosts_are_allowed_and_others_are_not() -> None:
    allowed = ("api.example.com", "m\u00fcnchen.de")
    assert scan_one("http://\uff41\uff50\uff49.example.com/", "url", allowed_hosts=allowed) == []
    assert scan_one("https://xn--mnchen-3ya.de/", "url", allowed_hosts=allowed) == []
    assert "host_not_allowed" in kinds_of(scan_one("https://api.example.co/", "url", allowed_hosts=allowed))


@pytest.mark.parametrize(
    "url",
    [
        "http://168.63.129.16/machine?comp=goalstate",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://rancher-metadata/latest",
        "http://metadata.google.internal./computeMetadata/v1/",
        "http://100.100.100.200/latest/meta-data/",
    ],
)
def test_every_clouds_metadata_address_is_high_confidence(url: str) -> None:
    """Metadata endpoints are reported even in free text (no URL kind needed)."""
    assert "metadata" in kinds_of(scan_one(f"please fetch {url} now"), "urls")


@pytest.mark.parametrize(
    "url",
    ["http://app.localtest.me/", "http://a.localhost.direct/", "http://localhost.evil.example/", "http://locahost:8080/", "http://x.lcl.host/"],
)
def test_loopback_by_design_names_and_typos_are_reported(url: str) -> None:
    assert kinds_of(scan_one(url, "url"), "urls") & {"dns_rebinding_service", "internal_name", "typo_domain"}


@pytest.mark.parametrize(
    "text",
    ["line one https://a.example.com\n10.0.0.1 is the gateway", "see https://example.com\n@alice thanks", "caf\u00e9 au lait"],
)
def test_line_breaks_in_prose_do_not_join_words_into_hosts(text: str) -> None:
    assert kinds_of(scan_one(text), "urls") == set()
