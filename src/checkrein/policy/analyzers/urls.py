"""`urls`: server-side request forgery. Internal hosts in every spelling, credentials in URLs,
non-HTTP schemes, hosts outside `ctx.allowed_hosts`, and (with a resolver) names that resolve to
internal addresses.

URLs are parsed by hand, leniently, and every host a plausible parser could pick is checked: the
RFC 3986 authority (after the last `@`) and the WHATWG one (backslash ends the authority), so parser
differentials (`http://a\\@b/`) cannot hide a host. A WHATWG parser also deletes every TAB, CR and
LF before parsing, so `http://allowed.example\t@127.0.0.1/` is read both ways too. Hosts are
compared and classified after IDNA / UTS-46 mapping (`hosts.canonical_host`). Nothing is fetched.

A `url` argument gets every check. Other strings only get high-confidence ones: dangerous schemes,
metadata hosts, obfuscated IPs and internal-IP DNS names anywhere; internal hosts when the whole
value is one URL (prose that mentions `http://localhost:3000` stays clean).
"""

from __future__ import annotations

import re
from collections.abc import Sequence, Set

from checkrein.config.policy import ArgKind
from checkrein.policy.decision import Finding

from .api import ScanContext
from .evidence import excerpt
from .hosts import HostVerdict, canonical_host, classify_host, classify_ip, parse_ipv4_lenient

__all__ = ["check_url", "host_allowed", "may_find", "url_hosts"]

NAME = "urls"

_WEB_SCHEMES = frozenset({"http", "https"})
# Schemes whose only use in a fetched URL is to talk raw protocols to internal services or read files.
_DANGEROUS_SCHEMES = frozenset(
    {
        "file", "gopher", "dict", "ldap", "ldaps", "ldapi", "sftp", "tftp", "ftp", "ftps", "jar",
        "netdoc", "php", "phar", "expect", "glob", "zip", "smb", "telnet", "ssh", "scp", "rtsp",
        "jdbc", "redis", "mysql", "postgres", "postgresql", "mongodb", "memcached", "imap", "pop3",
        "smtp", "data", "ws", "wss", "vnc", "rmi", "iiop", "nfs", "afp",
    }
)  # fmt: skip
_SPACE = re.compile(r"\s")
_METADATA_LITERALS = (
    "169.254.169.254", "169.254.170.2", "100.100.100.200", "168.63.129.16", "fd00:ec2::254", "fd20:ce::254",
    "metadata.google.internal",
)  # fmt: skip
_URL_TOKEN = re.compile(r"[a-zA-Z][a-zA-Z0-9+.\-]{0,20}:/{0,3}[^\s\"'<>`]+")
_SCHEME = re.compile(r"([a-zA-Z][a-zA-Z0-9+.\-]{0,30}):")


def _strip_port(hostport: str) -> str:
    if hostport.startswith("["):
        close = hostport.find("]")
        return hostport[: close + 1] if close != -1 else hostport
    return hostport.split(":", 1)[0]


def url_hosts(url: str) -> tuple[str, list[str], bool]:
    """(scheme, candidate hosts, has_password) for one URL-ish string. Scheme is lowercased or ''.

    A scheme-less value is read as a host (`127.0.0.1`, `10.0.0.1.nip.io:80/x`) unless it starts
    with a single `/` (a relative reference).
    """
    s = url.strip()
    m = _SCHEME.match(s)
    scheme = ""
    rest = s
    if m is not None and not (len(m.group(1)) == 1 and s[2:3] in ("\\", "/")):
        scheme = m.group(1).lower()
        rest = s[m.end() :]
    if scheme and scheme not in _WEB_SCHEMES and not rest.startswith(("//", "\\\\")):
        if scheme in ("jar", "netdoc"):
            return scheme, url_hosts(rest.split("!", 1)[0])[1], False
        # `mailto:x`, `urn:x`, `localhost:8080` (a host with a port, not a scheme).
        if rest[:1].isdigit() and scheme not in _DANGEROUS_SCHEMES:
            return "", [scheme], False
        return scheme, [], False
    if not scheme and rest.startswith("/") and not rest.startswith("//"):
        return "", [], False
    # Special schemes accept any run of slashes and backslashes before the authority.
    rest = rest.lstrip("/\\")
    rfc = re.split(r"[/?#]", rest, maxsplit=1)[0]
    whatwg = re.split(r"[/?#\\]", rest, maxsplit=1)[0]
    hosts: list[str] = []
    has_password = False
    for auth in (rfc, whatwg):
        if "@" in auth:
            userinfo, _, hostport = auth.rpartition("@")
            secret = userinfo.split("@")[-1].partition(":")[2].rstrip("\\")
            # `host:80\@other` is a parser-confusion trick, not a password: a port is not a secret.
            if secret and not secret.isdigit():
                has_password = True
            hosts.append(_strip_port(hostport))
            hosts.append(_strip_port(userinfo.split("@", 1)[0].split(":", 1)[0]))
        else:
            hosts.append(_strip_port(auth))
    seen: list[str] = []
    for h in hosts:
        h = h.strip().lower().rstrip("\\")
        if h and h not in seen:
            seen.append(h)
    return scheme, seen, has_password


def ascii_host(host: str) -> str:
    """``host`` after `canonical_host`, with every non-ASCII label in its `xn--` form (so
    `münchen.de` and `xn--mnchen-3ya.de` compare equal). Never raises."""
    h = canonical_host(host)
    if h.isascii():
        return h
    labels: list[str] = []
    for label in h.split("."):
        if not label.isascii():
            try:
                label = "xn--" + label.encode("punycode").decode("ascii")
            except (UnicodeError, ValueError):
                return h
        labels.append(label)
    return ".".join(labels)


def host_allowed(host: str, allowed: Sequence[str]) -> bool:
    """Exact match, or a `*.example.com` entry matching any subdomain (not the apex), after IDNA
    mapping of both sides (`ascii_host`)."""
    h = ascii_host(host)
    for entry in allowed:
        if entry.startswith("*."):
            apex = ascii_host(entry[2:])
            if apex and h.endswith("." + apex):
                return True
        elif h == ascii_host(entry):
            return True
    return False


def _resolve(host: str, ctx: ScanContext) -> HostVerdict | None:
    if ctx.resolver is None or host.startswith("[") or parse_ipv4_lenient(host) is not None:
        return None
    import ipaddress

    try:
        addresses = list(ctx.resolver(host))
    except Exception as exc:  # noqa: BLE001 - fail closed: an unresolvable host is a finding, not a pass
        return HostVerdict("resolution_failed", f"could not resolve {host}: {type(exc).__name__}")
    for a in addresses:
        try:
            ip = ipaddress.ip_address(a.split("%", 1)[0])
        except ValueError:
            return HostVerdict("resolution_failed", f"resolver returned a non-address for {host}")
        verdict = classify_ip(ip)
        if verdict is not None:
            return HostVerdict("resolves_internal", f"{host} resolves to {verdict.message}")
    return None


# A host piece (between `/ ? # \ @` delimiters) that `parse_ipv4_lenient` could read as one number
# (`2852039166`, `0xa9fea9fe`), or digits joined by dashes (`10-0-0-1`, an embedded IPv4).
_NUMERIC_HOST = re.compile(r"(?:^|[/?#\\@])(?:0x[0-9a-f]*|\d+)(?:$|[/?#\\@])|\d-\d")


def may_find(value: str, kind: ArgKind | None, triggers: Set[str] | None = None) -> bool:
    """False only when `check_url([value], ...)` is certainly empty (the value itself, undecoded).
    ``triggers`` is accepted for a uniform signature (this prefilter's `:` test is one C call).

    An untyped value without a colon holds no scheme and no URL token; it can only be reported as a
    bare host (the whole value, no spaces) that is a metadata name, an IP written as one number,
    or a DNS name with a dot or with dash-separated digits."""
    if kind == "url" or ":" in value or not value.isascii():
        return True  # non-ASCII: `169。254。169。254` is a dotted host once IDNA-mapped
    s = value.strip().strip(_C0_AND_SPACE)  # as `check_url` strips it (`metadata\n\x00` is `metadata`)
    if not s or (s.startswith("/") and not s.startswith("//")):
        return False
    if _SPACE.search(s) is not None:
        # Not compact, unless a TAB or newline beside an `@` goes (`_whatwg_forms`: `x@\nmetadata`).
        return "@" in s
    low = s.lower()
    return "." in s or "metadata" in low or "instance-data" in low or _NUMERIC_HOST.search(low) is not None


_C0_AND_SPACE = "".join(map(chr, range(0x21)))
# A TAB, CR or LF between two visible characters: a WHATWG parser deletes it (and the two halves
# join), where a reader of the raw string sees two words. In free text only the ones beside a
# userinfo `@` are joined (a line that ends in a URL is followed by ordinary text).
_TAB_NEWLINE_INSIDE = re.compile(r"(?<=\S)[\t\r\n]+(?=\S)")
_TAB_NEWLINE_AT = re.compile(r"(?<=\S)[\t\r\n]+(?=[^\s@]{0,256}@)|(?<=@)[\t\r\n]+(?=\S)")


def _whatwg_forms(forms: Sequence[str], strict: bool) -> list[str]:
    """``forms``, plus each form with the TABs and newlines inside it deleted (when it has any)."""
    out = list(forms)
    pattern = _TAB_NEWLINE_INSIDE if strict else _TAB_NEWLINE_AT
    for form in forms:
        if ("\t" in form or "\n" in form or "\r" in form) and (strict or "@" in form):
            # Outside a URL value only a TAB or newline beside an `@` is deleted: without one the
            # regex (tried at every position, ~0.25 ms per 4 KB) cannot match.
            joined = pattern.sub("", form)
            if joined != form and joined not in out:
                out.append(joined)
    return out


def check_url(forms: Sequence[str], pointer: str, kind: ArgKind | None, ctx: ScanContext) -> list[Finding]:
    """URL findings for one argument value given its decoded forms (raw first)."""
    strict = kind == "url"
    found: dict[str, Finding] = {}

    def add(k: str, message: str, form: str, severity: str = "high") -> None:
        if k not in found:
            found[k] = Finding(NAME, k, pointer, message, excerpt(form), "high" if severity == "high" else "medium")

    def check_one(url: str, form: str, whole: bool, depth: int) -> None:
        scheme, hosts, has_password = url_hosts(url)
        if scheme and scheme not in _WEB_SCHEMES and (strict or scheme in _DANGEROUS_SCHEMES):
            add("scheme", f"non-HTTP scheme {scheme}:", form)
        if has_password:
            add("credentials", "credentials embedded in the URL", form)
        for host in dict.fromkeys(ascii_host(h) for h in hosts):
            verdict = classify_host(host)
            if verdict is not None:
                high_confidence = verdict.obfuscated or verdict.kind in (
                    "metadata",
                    "embedded_private_ip",
                    "dns_rebinding_service",
                )
                if strict or whole or high_confidence:
                    add(verdict.kind, verdict.message, form)
                    if verdict.obfuscated:
                        add("obfuscated_ip", f"IP address in a non-canonical form ({host})", form)
                continue
            if strict:
                if scheme and "." not in host and ":" not in host and not host.startswith("["):
                    # A single-label name only resolves through local search domains (`http://redis/`).
                    add("internal_name", f"single-label host name {host} (resolves only on the local network)", form)
                if ctx.allowed_hosts and not host_allowed(host, ctx.allowed_hosts):
                    add("host_not_allowed", f"host {host} is not in the allowed hosts", form)
                resolved = _resolve(host, ctx)
                if resolved is not None:
                    add(resolved.kind, resolved.message, form)
        if depth == 0 and "://" in url[8:]:
            # URLs carried inside the URL (open redirects, proxies): the inner target matters too.
            for m in _URL_TOKEN.finditer(url, 8):
                if "://" in m.group(0):
                    check_one(m.group(0), form, whole, 1)

    for form in _whatwg_forms(forms, strict):
        value = form.strip().strip(_C0_AND_SPACE)
        if not value:
            continue
        compact = _SPACE.search(value) is None
        if strict and compact:
            check_one(value, form, True, 0)
            if any(ip in value for ip in _METADATA_LITERALS):
                add("metadata", "cloud metadata address inside the URL (redirector or proxy target)", form)
            continue
        if "://" not in value and ":" not in value and not compact:
            continue
        for m in _URL_TOKEN.finditer(value):
            token = m.group(0)
            if "://" not in token and not token.lower().startswith(("jar:", "netdoc:", "http:", "https:")):
                continue
            check_one(token, form, compact and m.start() == 0 and m.end() == len(value), 0)
        if compact and not strict and "://" not in value:
            # A bare host as the whole value: only metadata and internal-IP DNS names are certain.
            for host in url_hosts(value)[1][:1]:
                verdict = classify_host(host)
                if verdict is not None and verdict.kind in ("metadata", "embedded_private_ip", "dns_rebinding_service"):
                    add(verdict.kind, verdict.message, form)
    return list(found.values())
