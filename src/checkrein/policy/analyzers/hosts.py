"""Host classification for the `urls` analyzer: IP literals in every spelling and internal names.

Parsing only: nothing here resolves or connects. `classify_host` answers "would a fetch of this
host reach something internal (loopback, private, link-local, metadata...)?" for literal IPs,
lenient IPv4 forms (`2130706433`, `0177.0.0.1`, `0x7f000001`, `127.1`), IPv6 with embedded IPv4,
DNS names that are internal by convention or that embed an internal IP (`10.0.0.1.nip.io`),
public wildcard-DNS families that answer with loopback by design (`*.localtest.me`), and typos
of those names. Every host is first mapped the way an HTTP client maps it (IDNA / UTS-46 via the
`idna` package: `。` `｡` `．` are dots, fullwidth digits are digits, case and zero-width characters
are folded) by `canonical_host`.
"""

from __future__ import annotations

import functools
import ipaddress
from dataclasses import dataclass

import idna

__all__ = ["HostVerdict", "canonical_host", "classify_host", "classify_ip", "parse_ipv4_lenient"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_METADATA_IPS = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, DigitalOcean, OpenStack, Oracle, Hetzner, Huawei, Linode, Vultr
        "169.254.170.2",  # AWS ECS task metadata
        "169.254.170.23",  # AWS EKS pod identity agent
        "169.254.169.123",  # AWS time sync
        "169.254.169.253",  # AWS VPC DNS
        "169.254.42.42",  # Scaleway
        "169.254.0.23",  # Tencent Cloud
        "168.63.129.16",  # Azure WireServer (a public address, reachable only from inside Azure)
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud (legacy)
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "fd00:ec2::23",  # AWS EKS pod identity over IPv6
        "fd20:ce::254",  # GCP metadata over IPv6
        "fd00:c1::a9fe:a9fe",  # Oracle Cloud over IPv6
    )
)
_METADATA_NAMES = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.internal",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
        "metadata.packet.net",
        "metadata.platformequinix.com",
        "rancher-metadata",
        "api.metadata.cloud.ibm.com",
    }
)
_LOCAL_NAMES = frozenset(
    {
        "localhost",
        "localhost.localdomain",
        "localdomain",
        "ip6-localhost",
        "ip6-loopback",
        "broadcasthost",
        "kubernetes.default",
        "kubernetes.default.svc",
    }
)
_INTERNAL_SUFFIXES = (
    ".localhost",
    ".local",
    ".localdomain",
    ".internal",
    ".intranet",
    ".home.arpa",
    ".lan",
    ".corp",
    ".svc",
    ".cluster.local",
)
# Wildcard-DNS and rebinding services: any name under them resolves to an address chosen by the
# requester (usually spelled in the name itself) or to loopback by design, so they exist to reach
# internal hosts by name. Out-of-band testing services (`oast.*`, Burp Collaborator) receive the
# requests an SSRF probe sends.
_REBINDING_SUFFIXES = (
    "nip.io", "sslip.io", "xip.io", "nip.direct", "traefik.me", "1u.ms", "rbndr.us", "r3dir.me",
    "localtest.me", "lvh.me", "vcap.me", "lacolhost.com", "localh.st", "localho.st", "fuf.me",
    "ssrf.me", "localhost.direct", "lcl.host", "local.gd", "yoogle.com", "smackaho.st",
    "127-0-0-1.org.uk", "ulh.us", "readme.io.localtest.me", "burpcollaborator.net", "oastify.com",
    "oast.pro", "oast.live", "oast.site", "oast.online", "oast.fun", "oast.me", "interact.sh",
    "requestrepo.com",
)  # fmt: skip
# Labels that say "this host": a public name carrying one is a loopback alias (`localhost.evil.com`).
_LOOPBACK_LABELS = frozenset({"localhost", "loopback", "127-0-0-1", "ip6-localhost", "ip6-loopback"})
# Misspellings an attacker registers and points at 127.0.0.1 (`locahost.com`, `localtets.me`).
# Only long names: a one-letter change of a short name is too often another real domain.
_TYPO_LABEL = "localhost"
_TYPO_DOMAINS = ("localtest.me", "lacolhost.com", "localhost.direct", "localho.st")
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


@dataclass(frozen=True, slots=True)
class HostVerdict:
    kind: str
    """`metadata`, `loopback`, `private`, `link_local`, `unspecified`, `cgnat`, `reserved`,
    `internal_name`, `embedded_private_ip`, `dns_rebinding_service`, `typo_domain`, `malformed_ip`."""
    message: str
    obfuscated: bool = False
    """The host spelled an IPv4 address in a non-canonical form (decimal, octal, hex, short)."""


def _part(text: str) -> int | None:
    t = text.lower()
    if not t:
        return None
    if t.startswith("0x"):
        digits = t[2:] or "0"
        return int(digits, 16) if all(c in "0123456789abcdef" for c in digits) and len(digits) <= 8 else None
    if not (t.isascii() and t.isdigit()) or len(t) > 12:
        return None
    if len(t) > 1 and t[0] == "0":
        return int(t, 8) if all(c in "01234567" for c in t) else None
    return int(t)


def parse_ipv4_lenient(host: str) -> ipaddress.IPv4Address | None:
    """IPv4 as `inet_aton` reads it: 1-4 parts, each decimal, octal (`0` prefix) or hex (`0x`)."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values = [_part(p) for p in parts]
    if any(v is None for v in values):
        return None
    nums = [v for v in values if v is not None]
    *head, last = nums
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(nums)):
        return None
    value = 0
    for v in head:
        value = value * 256 + v
    value = (value << (8 * (5 - len(nums)))) | last
    return ipaddress.IPv4Address(value)


def classify_ip(ip: IPAddress) -> HostVerdict | None:
    """Why ``ip`` is internal, or None for a global unicast address."""
    if ip in _METADATA_IPS:
        return HostVerdict("metadata", f"cloud metadata address {ip}")
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is None and ip.teredo is not None:
            embedded = ip.teredo[1]
        if embedded is not None:
            inner = classify_ip(embedded)
            if inner is not None:
                return HostVerdict(inner.kind, f"IPv6 address embedding {embedded}: {inner.message}")
    if ip.is_loopback:
        return HostVerdict("loopback", f"loopback address {ip}")
    if ip.is_unspecified:
        return HostVerdict("unspecified", f"unspecified address {ip} (reaches this host)")
    if ip.is_link_local:
        return HostVerdict("link_local", f"link-local address {ip}")
    if isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT:
        return HostVerdict("cgnat", f"carrier-grade NAT address {ip}")
    if ip.is_private:
        return HostVerdict("private", f"private address {ip}")
    if ip.is_multicast or ip.is_reserved or not ip.is_global:
        return HostVerdict("reserved", f"non-global address {ip}")
    return None


def _ip_literal(host: str) -> tuple[IPAddress | None, bool]:
    """(address, obfuscated) for an IP literal host, else (None, False)."""
    if host.startswith("[") and host.endswith("]"):
        inner = host[1:-1].split("%", 1)[0]
        try:
            return ipaddress.IPv6Address(inner), False
        except ValueError:
            return None, False
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host.split("%", 1)[0]), False
        except ValueError:
            return None, False
    try:
        return ipaddress.IPv4Address(host), False
    except ValueError:
        pass
    v4 = parse_ipv4_lenient(host)
    return (v4, True) if v4 is not None else (None, False)


def _embedded_ipv4s(name: str) -> list[ipaddress.IPv4Address]:
    """Every dotted or dashed IPv4 spelled inside a DNS name (`127.0.0.1.nip.io`, `ip-10-0-0-1`,
    `make-1.2.3.4-rebind-169.254-169.254-rr.1u.ms`): each run of four numeric labels."""
    found: list[ipaddress.IPv4Address] = []
    run: list[str] = []
    for label in name.replace("-", ".").split("."):
        if label.isascii() and label.isdigit() and len(label) <= 3 and int(label) <= 255:
            run.append(label)
            if len(run) >= 4:
                found.append(ipaddress.IPv4Address(".".join(run[-4:])))
        else:
            run = []
    return found


def _hex_label_ipv4(name: str) -> ipaddress.IPv4Address | None:
    for label in name.split("."):
        if len(label) == 8 and all(c in "0123456789abcdef" for c in label):
            return ipaddress.IPv4Address(int(label, 16))
    return None


_MAX_HOST = 1024


@functools.lru_cache(maxsize=4096)
def canonical_host(host: str) -> str:
    """``host`` as an HTTP client maps it before resolving: UTS-46 (IDNA 2008, non-transitional,
    without the STD3 rules, as the WHATWG URL standard does), lowercased, trailing dot removed.

    Ideographic and fullwidth dots become `.`, fullwidth and circled characters their ASCII forms,
    zero-width characters vanish. A host UTS-46 rejects keeps its NFKC-lowercased form. Never raises."""
    h = host.strip()[:_MAX_HOST]
    if not h.isascii():
        try:
            h = idna.uts46_remap(h, std3_rules=False, transitional=False)
        except (idna.IDNAError, ValueError, IndexError):
            import unicodedata

            h = unicodedata.normalize("NFKC", h)
    return h.lower().rstrip(".")


def _near(a: str, b: str, limit: int) -> bool:
    """Whether the optimal-string-alignment distance of ``a`` and ``b`` is at most ``limit`` (and not 0)."""
    if a == b or abs(len(a) - len(b)) > limit or len(set(a) ^ set(b)) > 2 * limit:
        return False  # each edit changes at most two members of the character sets
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > limit:
            return False
        prev2, prev = prev, cur
    return prev[-1] <= limit


def _typo_of(h: str) -> str | None:
    """The internal or loopback-by-design name ``h`` misspells (`locahost`, `lvh.rne`), or None."""
    labels = h.split(".")
    if any(len(label) >= 7 and _near(label, _TYPO_LABEL, 2) for label in labels):
        return _TYPO_LABEL
    if len(labels) >= 2:
        registered = ".".join(labels[-2:])
        for domain in _TYPO_DOMAINS:
            if _near(registered, domain, 1):
                return domain
    return None


@functools.lru_cache(maxsize=4096)
def classify_host(host: str) -> HostVerdict | None:
    """Why fetching ``host`` (no port, brackets kept for IPv6; any case or IDNA spelling) reaches
    something internal, or None when nothing is known against it."""
    h = canonical_host(host)
    if not h:
        return None
    ip, obfuscated = _ip_literal(h)
    if ip is not None:
        verdict = classify_ip(ip)
        if obfuscated:
            msg = f"IPv4 address {ip} written as {h!r}"
            return HostVerdict(verdict.kind if verdict else "obfuscated_ip", msg if verdict is None else f"{verdict.message} written as {h!r}", True)
        return verdict
    if h in _METADATA_NAMES:
        return HostVerdict("metadata", f"cloud metadata host {h}")
    if h in _LOCAL_NAMES or h.endswith(_INTERNAL_SUFFIXES):
        return HostVerdict("internal_name", f"internal host name {h}")
    embedded = _embedded_ipv4s(h)
    rebinding = any(h == s or h.endswith("." + s) for s in _REBINDING_SUFFIXES)
    hex_label = _hex_label_ipv4(h) if rebinding else None
    if hex_label is not None:
        embedded.append(hex_label)
    for ip in embedded:
        inner = classify_ip(ip)
        if inner is not None:
            return HostVerdict("embedded_private_ip", f"host name {h} embeds {inner.message}")
    if rebinding:
        return HostVerdict("dns_rebinding_service", f"{h} is a wildcard-DNS / rebinding / out-of-band testing service")
    if "." in h and _LOOPBACK_LABELS.intersection(h.split(".")[:-1]):
        return HostVerdict("internal_name", f"host name {h} has a loopback label (public wildcard DNS maps such names to 127.0.0.1)")
    typo = _typo_of(h) if len(h) >= 6 else None
    if typo is not None:
        return HostVerdict("typo_domain", f"host name {h} looks like a misspelling of {typo}")
    last = h.rsplit(".", 1)[-1]
    if (last.isascii() and last.isdigit()) or (last.startswith("0x") and len(h.split(".")) <= 4):
        return HostVerdict("malformed_ip", f"{h!r} is neither a valid IP address nor a DNS name", True)
    return None
