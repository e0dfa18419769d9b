"""`secrets`: credentials in text. Provider key formats, private key blocks (with or without their
header), JWTs (however they are spaced), credentials in URLs and `Authorization` headers,
`password=` / `token:` style assignments whose value is not a placeholder (the key in many
languages: `Passwort:`, `contraseña =`, `пароль:`, `密码：`, "the password is ..."), and secrets in
disguise (`secret_forms`: split by invisible characters or across adjacent string literals,
wrapped in base64 or hex, an AWS secret key beside its key id). `find_secrets` returns spans;
`redact_secrets` masks them.

Every pattern starts with a literal prefix or a keyword and uses only bounded quantifiers, and
each is skipped unless its prefix occurs in the text (a substring test), so scanning is linear.
"""

from __future__ import annotations

import base64
import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence, Set
from dataclasses import dataclass

from checkrein._trie import LiteralStarts, WordFinder
from checkrein.config.policy import ArgKind
from checkrein.policy.decision import Finding

from .api import ScanContext, SecretSpan, char_class
from .secret_forms import (
    _INVISIBLE,
    aws_secret_pairs,
    encoded_spans,
    headerless_private_keys,
    joined_forms,
    map_back,
)

__all__ = ["MAX_SECRET_SCAN", "TRIGGERS", "URL_TOKEN", "check_secrets", "find_secrets", "is_placeholder", "may_find", "redact_secrets", "shannon_entropy"]

NAME = "secrets"
MAX_SECRET_SCAN = 1_048_576
"""Characters scanned per text; the rest is not scanned (callers cap their inputs first)."""


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    prefilter: tuple[str, ...]
    """Lowercase substrings, one of which must occur for the rule to run."""
    pattern: re.Pattern[str]
    group: int = 0
    min_entropy: float = 0.0
    guard: tuple[str, ...] = ()
    """Case-sensitive substrings of the text, one of which every match contains (empty: none known)."""
    core: re.Pattern[str] | None = None
    """``pattern`` without its opening `_B` (searched instead, the boundary tested by hand)."""

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """``pattern.finditer(text)``. A pattern that opens with the `_B` lookbehind is tried by `re`
        at every position (~100 us per 4 KB); its ``core`` opens with a literal or a character
        class, which `re` scans for fast. The leftmost ``core`` match whose left neighbour is not
        a word character is the leftmost ``pattern`` match, and the same match (no pattern here
        matches the empty string; a test holds the two equal)."""
        core = self.core
        if core is None:
            yield from self.pattern.finditer(text)
            return
        pos = 0
        while (m := core.search(text, pos)) is not None:
            start = m.start()
            if start and text[start - 1] in _WORD_CHARS:
                pos = start + 1
                continue
            yield m
            pos = m.end()


def _r(
    kind: str, prefilter: tuple[str, ...], pattern: str, group: int = 0, min_entropy: float = 0.0, flags: int = 0, guard: tuple[str, ...] = ()
) -> _Rule:
    # Under IGNORECASE `[A-Za-z]` in the lookbehind also matches U+017F and U+212A, which
    # `_WORD_CHARS` does not hold: such a rule keeps the lookbehind.
    core = re.compile(pattern[len(_B) :], flags) if pattern.startswith(_B) and not flags & re.IGNORECASE else None
    return _Rule(kind, prefilter, re.compile(pattern, flags), group, min_entropy, guard, core)


_B = r"(?<![A-Za-z0-9_])"  # left boundary without a variable-width lookbehind
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")  # what `_B` excludes
_E = r"(?![A-Za-z0-9_])"

_RULES: tuple[_Rule, ...] = (
    _r("private_key", ("private key",), r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"),
    _r("aws_access_key", ("akia", "asia", "abia", "acca", "a3t"), _B + r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}" + _E),
    _r(
        "aws_secret_key",
        ("aws",),
        r"(?i)aws[a-z0-9_.\-]{0,25}(?:secret|key)[a-z0-9_.\-]{0,15}[\"']?\s{0,4}(?::=|=>|=|:)\s{0,4}[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        1,
        3.5,
    ),
    _r("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), _B + r"gh[pousr]_[A-Za-z0-9]{36,255}" + _E, 0, 3.0),
    _r("github_token", ("github_pat_",), _B + r"github_pat_[A-Za-z0-9_]{50,255}", 0, 3.0),
    _r(
        "gitlab_token",
        ("glpat-", "gldt-", "glrt-", "glptt-", "glsoat-", "glft-", "glcbt-", "gloas-", "glimt-", "glagent-"),
        _B + r"(?:gl(?:pat|dt|rt|soat|ft|imt)-[A-Za-z0-9_\-]{20}|glpat-[A-Za-z0-9_\-]{27,300}\.[0-9a-z]{2}\.[0-9a-z]{7,9}"
        r"|glptt-[0-9a-f]{40}|gloas-[0-9a-f]{64}|glagent-[A-Za-z0-9_\-]{50,1024}|glcbt-[0-9a-f]{1,5}_[A-Za-z0-9_\-]{20})(?![A-Za-z0-9_\-])",
        0,
        3.0,
    ),
    _r("slack_token", ("xox",), _B + r"xox[abprs]-(?:\d{1,14}-){1,4}[A-Za-z0-9]{10,64}" + _E, 0, 3.0),
    _r("slack_token", ("xoxe",), _B + r"xoxe(?:\.xox[bp])?-\d-[A-Za-z0-9]{140,170}" + _E),
    _r("slack_token", ("xapp-",), _B + r"xapp-\d-[A-Z0-9]{8,}-\d{8,}-[a-z0-9]{16,}"),
    _r("slack_webhook", ("hooks.slack.com",), r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{20,120}"),
    _r("stripe_key", ("sk_live_", "rk_live_", "sk_test_", "rk_test_", "rk_prod_", "sk_prod_"), _B + r"(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,255}", 0, 3.0),
    _r("google_api_key", ("aiza",), _B + r"AIza[0-9A-Za-z_\-]{35}" + _E, 0, 3.0),
    _r("google_service_account", ("service_account",), r"\"type\"\s{0,3}:\s{0,3}\"service_account\""),
    _r("anthropic_key", ("sk-ant-",), _B + r"sk-ant-(?:api|admin|sid)\d{2}-[A-Za-z0-9_\-]{32,255}", 0, 3.0),
    _r("openai_key", ("sk-",), _B + r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,255}(?:T3BlbkFJ[A-Za-z0-9_\-]{10,255})?", 0, 3.5),
    _r(
        "jwt",
        ("eyj",),
        _B + r"eyJ[A-Za-z0-9_\-]{8,4096}[ \t\r\n]{0,4}\.[ \t\r\n]{0,4}eyJ[A-Za-z0-9_\-]{4,8192}(?:[ \t\r\n]{0,4}\.[ \t\r\n]{0,4}[A-Za-z0-9_\-]{1,4096})?",
        0,
        3.0,
    ),
    _r("stripe_webhook_secret", ("whsec_",), _B + r"whsec_[A-Za-z0-9+/]{24,128}" + _E, 0, 3.0),
    _r("google_oauth_token", ("ya29.",), _B + r"ya29\.[0-9A-Za-z_\-]{20,2048}", 0, 3.0),
    _r("google_client_secret", ("gocspx-",), _B + r"GOCSPX-[A-Za-z0-9_\-]{28}" + _E, 0, 3.0),
    _r("google_refresh_token", ("1//0",), _B + r"1//0[0-9A-Za-z_\-]{40,512}", 0, 3.5),
    _r("npm_token", ("npm_",), _B + r"npm_[A-Za-z0-9]{36}" + _E, 0, 3.0),
    _r("pypi_token", ("pypi-",), _B + r"pypi-AgE[A-Za-z0-9_\-]{50,}"),
    _r("sendgrid_key", ("sg.",), _B + r"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}"),
    _r("twilio_key", ("sk", "ac"), _B + r"(?:SK|AC)[0-9a-f]{32}" + _E, 0, 3.0, guard=("SK", "AC")),
    _r("mailchimp_key", ("-us",), _B + r"[0-9a-f]{32}-us\d{1,2}" + _E, 0, 3.0),
    _r("mailgun_key", ("key-",), _B + r"key-[0-9a-zA-Z]{32}" + _E, 0, 3.0),
    _r("square_token", ("sq0atp-", "sq0csp-", "eaaa"), _B + r"(?:sq0atp-[0-9A-Za-z_\-]{22}|sq0csp-[0-9A-Za-z_\-]{43}|EAAA[A-Za-z0-9_\-]{60})"),
    _r("shopify_token", ("shpat_", "shpca_", "shppa_", "shpss_"), _B + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    _r("digitalocean_token", ("do_v1_", "dop_v1_", "doo_v1_", "dor_v1_"), _B + r"do[opr]?_v1_[a-f0-9]{64}"),
    _r("huggingface_token", ("hf_", "api_org_"), _B + r"(?:hf_[A-Za-z]{34}|api_org_[A-Za-z]{34})" + _E, 0, 3.0),
    _r("databricks_token", ("dapi",), _B + r"dapi[a-f0-9]{32}(?:-\d)?" + _E),
    _r("vault_token", ("hvs.", "hvb.", "s."), _B + r"(?:hvs\.[A-Za-z0-9_\-]{90,120}|hvb\.[A-Za-z0-9_\-]{138,300})"),
    _r("telegram_token", (":aa",), _B + r"\d{8,10}:AA[A-Za-z0-9_\-]{33}" + _E),
    _r("discord_token", (".",), _B + r"[MNO][a-zA-Z\d_\-]{23,25}\.[a-zA-Z\d_\-]{6}\.[a-zA-Z\d_\-]{27,38}" + _E, 0, 3.5, guard=("M", "N", "O")),
    _r("facebook_token", ("eaa",), _B + r"EAA[MC][A-Za-z0-9]{100,}"),
    _r("grafana_token", ("glc_", "glsa_"), _B + r"(?:glc_[A-Za-z0-9+/]{32,400}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})"),
    _r("atlassian_token", ("atatt",), _B + r"ATATT3[A-Za-z0-9_\-=]{186}"),
    _r("notion_token", ("ntn_", "secret_"), _B + r"(?:ntn_\d{11}[A-Za-z0-9]{32}[A-Za-z0-9]{3}|secret_[A-Za-z0-9]{43})" + _E, 0, 3.0),
    _r("sourcegraph_token", ("sgp_",), _B + r"sgp_(?:(?:[a-fA-F0-9]{16}|local)_)?[a-fA-F0-9]{40}" + _E),
    _r("snyk_or_uuid_key", ("snyk",), r"(?i)snyk[a-z0-9_.\-]{0,20}[\"']?\s{0,3}(?::=|=>|=|:)\s{0,3}[\"']?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})", 1),
    _r("onepassword_key", ("a3-", "ops_"), _B + r"(?:A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}|ops_eyJ[A-Za-z0-9+/]{250,}={0,3})"),
    _r("intra42_secret", ("s-s4t2",), _B + r"s-s4t2(?:ud|af)-[a-f0-9]{64}" + _E),
    _r("sentry_token", ("sntrys_", "sntryu_"), _B + r"(?:sntrys_eyJ[A-Za-z0-9+/=_\-]{30,4096}|sntryu_[a-f0-9]{64})"),
    _r("flyio_token", ("flyv1 fm", "fo1_"), r"(?:FlyV1 fm[12][ar]?_[A-Za-z0-9+/=,_\-]{60,4096}|fo1_[A-Za-z0-9_\-]{43})"),
    _r("heroku_key", ("hrku-",), _B + r"HRKU-[A-Za-z0-9_\-]{58,64}"),
    _r("facebook_token", ("|",), _B + r"\d{15,16}\|[A-Za-z0-9_\-]{27}" + _E, 0, 3.0),
    _r("age_secret_key", ("age-secret-key-1",), r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    _r("azure_storage_key", ("accountkey=",), r"(?i)AccountKey=([A-Za-z0-9+/]{86}==)", 1),
    _r("azure_client_secret", ("q~",), _B + r"[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}" + _E, 0, 3.0),
    _r("bearer_token", ("bearer",), r"(?i)\bbearer\s{1,4}([A-Za-z0-9_\-.~+/]{16,2048}=*)", 1, 3.0),
    _r("basic_auth", ("basic",), r"(?i)\bauthorization:\s{0,4}basic\s{1,4}([A-Za-z0-9+/]{8,1024}={0,2})", 1, 2.5),
    _r(
        "authorization_header",
        ("authorization",),
        r"(?i)\bauthorization[\"']?\s{0,4}[:=]\s{0,4}[\"']?(?:(?:token|api-token|apikey|key|digest|sso-key)\s{1,4})?([A-Za-z0-9_\-.~+/@=]{16,2048})",
        1,
        3.0,
    ),
    _r("url_credentials", ("://",), r"[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^\s:/@\"'<>]{1,128}:([^\s:/@\"'<>]{3,128})@[A-Za-z0-9.\-\[\]]{1,255}", 1, 0.0),
    _r("curl_user", ("-u", "--user"), r"(?:\s|^)(?:-u|--user)[\s=]{1,3}[\"']?[^\s:\"'$]{1,64}:([^\s\"'$]{4,128})[\"']?", 1, 2.0),
)


# One pass over the text finds which rules can possibly match (a compiled Aho-Corasick scan that
# reports every prefix occurring anywhere, overlapping ones included: `s.` inside a token does not
# hide the `.` another rule needs); `_RULES_BY_PREFIX` then visits only those rules.
_PREFILTER = WordFinder({p for r in _RULES for p in r.prefilter})
_RULES_BY_PREFIX: dict[str, tuple[int, ...]] = {
    p: tuple(i for i, r in enumerate(_RULES) if p in r.prefilter) for r in _RULES for p in r.prefilter
}

_KEYWORDS = re.compile(
    r"(?i)(?:password|passwd|passphrase|pwd|pass|secret|token|api[_.\-]?key|apikey|access[_.\-]?key|auth[_.\-]?key"
    r"|private[_.\-]?key|client[_.\-]?secret|credentials?|api[_.\-]?token|auth|session[_.\-]?id|cookie"
    r"|(?<=[_.\-])(?:key|pw)(?![a-z])|(?-i:(?<=[a-z])(?:Key|Token|Secret)))"
)
_KEYWORD_PREFILTER = ("pass", "pw", "secret", "token", "key", "credential", "auth", "session", "cookie")
# Where a `_KEYWORDS` match can start in ASCII text: each alternative opens with one of these
# (lowercased; a test derives every alternative's opening letters from the regex and checks it).
_KEYWORD_STARTS = LiteralStarts(_KEYWORDS, ("pass", "pw", "secret", "token", "api", "access", "auth", "private", "client", "credential", "session", "cookie", "key"))
_PLACEHOLDER_WORDS = (
    "xxxx", "****", "fake", "example", "dummy", "placeholder", "changeme", "change_me", "change-me",
    "your_", "your-", "yourpass", "redacted", "todo", "sample", "insert", "replace", "...",
    "****", "mypassword", "password1", "secret123", "notreal", "not_real", "foobar", "lorem",
)  # fmt: skip
_REFERENCE_PREFIXES = ("os.", "process.", "env.", "config.", "settings.", "self.", "this.", "request.", "params.", "args.", "vault:", "secrets.")
_NON_SECRET_VALUES = frozenset(
    {
        "null", "none", "nil", "true", "false", "undefined", "password", "secret", "token", "string",
        "str", "bool", "int", "required", "optional", "empty", "env", "var", "value", "test", "tests",
        "testing", "admin", "root", "user", "username", "default", "hidden", "masked", "get", "set",
    }
)  # fmt: skip


def shannon_entropy(text: str) -> float:
    """Bits per character of ``text`` (0.0 for the empty string)."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


_CALL = re.compile(r"[A-Za-z_][\w.]{0,80}\(.{0,200}\)")


_RUN_OF_EIGHT = re.compile(r"(.)\1{7}", re.DOTALL)


def _dummy(value: str) -> bool:
    """Masked or dummy token bodies: `xxxx`, `EXAMPLE`, `<...>`, long runs of one character. A run
    of `A` in a long base64 body is zero bytes of real binary data (every OpenSSH key has one)."""
    lowered = value.lower()
    if "xxxx" in lowered or "example" in lowered or "****" in lowered or "####" in lowered or "<" in lowered:
        return True
    run = _RUN_OF_EIGHT.search(lowered)
    return run is not None and not (run.group(1) == "a" and len(value) >= 64 and len(set(value)) >= 16)


def is_placeholder(value: str, *, references: bool = True) -> bool:
    """Template variables, masks and well-known dummy values are not secrets. With ``references``,
    bare identifiers and calls (`db_password`, `os.getenv("X")`) also count as references to a
    secret rather than the secret itself."""
    v = value.strip()
    lowered = v.lower()
    if len(v) < 6 or lowered in _NON_SECRET_VALUES:
        return True
    if (v.startswith("${") and v.endswith("}")) or (v.startswith("{{") and v.endswith("}}")):
        return True
    if (v.startswith("<") and v.endswith(">")) or (v.startswith("[") and v.endswith("]")) or v.startswith(("%", "#{", "@{")):
        return True
    if v.startswith("$") and (v[1:].replace("_", "").isalnum() or v[1:2] == "("):
        return True
    if any(w in lowered for w in _PLACEHOLDER_WORDS) or len(set(lowered)) <= 2:
        return True
    if not references:
        return False
    if _CALL.fullmatch(v) is not None or lowered.startswith(_REFERENCE_PREFIXES):
        return True
    # An identifier (lower_snake, camelCase) names a variable; it is not the value.
    return v.replace("_", "").isalpha() and (v.islower() or v[0].islower()) and len(v) < 32 and shannon_entropy(v) < 3.6


_KEY_REST = re.compile(r"[A-Za-z0-9_.\-]{0,40}")
_KEY_CLOSE = re.compile(r"[\"'\]]{0,4}[ \t]{0,5}")
_OPERATOR = re.compile(r":::=|::=|:=|\?=|=>|===|==|!==|!=|=|:|[ ](?=[\"'])")
_VALUE_LEAD = re.compile(r"[ \t@]{0,12}")
_UNQUOTED_VALUE = re.compile(r"[^\s\"'`,;&]{1,512}")
_NON_KEY_SUFFIXES = (
    "_id", "id", "type", "name", "_url", "url", "length", "size", "file", "path", "policy", "count",
    "expiry", "_at", "format", "field", "hash", "header",
)  # fmt: skip


# A URL with no `user:password@` part: scheme, then a host with no `@` before the path.
_PLAIN_URL = re.compile(r"(?i)(?:https?|ftp)://[^\s/@:]+(?::\d{1,5})?(?:[/?#]|$)")


def _inside_mask(text: str, index: int) -> bool:
    opening = text.rfind("[REDACTED:", max(0, index - 40), index)
    return opening != -1 and "]" not in text[opening:index]


def _keyword_spans(text: str) -> list[SecretSpan]:
    """`key <op> value` assignments whose key names a secret. Each regex step is anchored at a
    position and bounded, and the search resumes after the value: linear in ``text``."""
    spans: list[SecretSpan] = []
    n = len(text)
    pos = 0
    search = _KEYWORD_STARTS.searcher(text)
    while pos < n:
        m = search(pos)
        if m is None:
            break
        pos = m.end()
        word = m.group(0)
        before = text[m.start() - 1] if m.start() else ""
        after = text[pos] if pos < n else ""
        # `passport`, `bypass`, `author`: the keyword must be a whole word of the key name.
        if after.islower() or (before.isalpha() and word[0].islower() and before.islower()):
            continue
        if _inside_mask(text, m.start()):
            continue  # `[REDACTED:github_token]`: our own mask, so redaction is a fixed point
        # The rest of the key name (`password_hash`, `token.value`), closing quotes or brackets.
        rest = _KEY_REST.match(text, pos)
        i = rest.end() if rest is not None else pos
        key = text[m.start() : i].lower()
        if key.endswith(_NON_KEY_SUFFIXES):
            continue
        close = _KEY_CLOSE.match(text, i)
        j = close.end() if close is not None else i
        op_match = _OPERATOR.match(text, j)
        if op_match is None or (op_match.group(0) == ":" and text.startswith("//", j + 1)):
            continue
        op = op_match.group(0)
        comparison = op in ("===", "==", "!==", "!=")
        lead = _VALUE_LEAD.match(text, op_match.end())
        j = lead.end() if lead is not None else op_match.end()
        if j >= n:
            continue
        quote = text[j] if text[j] in "\"'`" else ""
        start = j + 1 if quote else j
        if quote:
            end = text.find(quote, start, start + 512)
            if end == -1:
                continue
        else:
            v = _UNQUOTED_VALUE.match(text, start)
            if v is None:
                continue
            end = v.end()
        value = text[start:end]
        if _PLAIN_URL.match(value):
            # "reset your password: https://site/reset": a link, not the password. Credentials inside
            # the URL (`user:pw@host`, `?token=...`) are found on their own: search on from the key.
            continue
        pos = max(pos, end)
        if (comparison and not quote) or is_placeholder(value):
            continue
        if word.lower() in ("key", "pw") and (
            len(value) < 20 or shannon_entropy(value) < 2.5 or not any(c.isdigit() for c in value) or key.startswith(("public", "pub_"))
        ):
            continue  # a bare `_key` suffix names many non-secrets (`sort_key`); demand a key-like value
        if not quote and shannon_entropy(value) < 2.5:
            continue
        if "pass" in key or "pwd" in key:
            spans.append(SecretSpan(start, end, "password"))
        else:
            spans.append(SecretSpan(start, end, URL_TOKEN if _in_link(text, m.start()) else "credential"))
    return spans


URL_TOKEN = "url_token"
"""The kind of a `token=` / `code=` style value in the path or query of a link (a reset or sign-in
link): `[policy.results] link_tokens` decides whether results keep it for the model."""

_LINK_START = re.compile(r"[\s(<\[\"'`]")


def _in_link(text: str, key_at: int) -> bool:
    """Whether the key at ``key_at`` sits after the host of an `http(s)` URL (in its path or query)."""
    lo = max(0, key_at - 2048)
    start = lo
    for m in _LINK_START.finditer(text, lo, key_at):
        start = m.end()
    url = _PLAIN_URL.match(text, start)
    return url is not None and url.end() <= key_at + 1


_COMPARISON = re.compile(
    r"([\"'])([^\"'\n]{6,200})\1\s{0,3}(?:===?|!==?)\s{0,3}[A-Za-z_]{0,20}(?:password|passwd|secret|token|private_key|api_key)", re.IGNORECASE
)


def _comparison_spans(text: str) -> list[SecretSpan]:
    """`if ("hunter2..." == password)`: a literal compared with a secret-named variable."""
    spans: list[SecretSpan] = []
    if "==" not in text and "!=" not in text:
        return spans  # every match holds one of them (`===?|!==?`)
    for m in _COMPARISON.finditer(text):
        if not is_placeholder(m.group(2)):
            spans.append(SecretSpan(m.start(2), m.end(2), "credential"))
    return spans


def _jwt_header_ok(token: str) -> bool:
    """A real JWT's first segment is base64url JSON naming `alg` or `typ`."""
    head = token.split(".", 1)[0].strip()
    try:
        decoded = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return False
    return decoded.startswith("{") and ('"alg"' in decoded or '"typ"' in decoded)


def find_secrets(text: str) -> list[SecretSpan]:
    """Non-overlapping secret spans in ``text``, sorted by start: the direct pass, then the forms
    of `secret_forms` (joined, encoded, headerless keys, AWS pairs). Linear; never raises."""
    t = text[:MAX_SECRET_SCAN]
    spans = _direct(t)
    spans.extend(aws_secret_pairs(t, spans, shannon_entropy))
    spans.extend(headerless_private_keys(t))
    for form, index in joined_forms(t):
        spans.extend(map_back(_direct(form), index))
    if len(t) >= 20:
        spans.extend(encoded_spans(t, _direct))
    return _merge(spans)


def _merge(spans: list[SecretSpan]) -> list[SecretSpan]:
    spans.sort(key=lambda sp: (sp.start, -(sp.end - sp.start)))
    merged: list[SecretSpan] = []
    for sp in spans:
        if merged and sp.start < merged[-1].end:
            if sp.end > merged[-1].end:
                merged[-1] = SecretSpan(merged[-1].start, sp.end, merged[-1].kind)
            continue
        merged.append(sp)
    return merged


_CANDIDATES: dict[frozenset[str], tuple[_Rule, ...]] = {}
_MAX_CANDIDATE_SETS = 4096


def _candidates(prefixes: frozenset[str]) -> tuple[_Rule, ...]:
    """The rules one of whose prefixes is in ``prefixes``, in rule order (memoized: few distinct sets)."""
    found = _CANDIDATES.get(prefixes)
    if found is None:
        found = tuple(_RULES[i] for i in sorted({i for p in prefixes for i in _RULES_BY_PREFIX[p]}))
        if len(_CANDIDATES) < _MAX_CANDIDATE_SETS:
            _CANDIDATES[prefixes] = found
    return found


def _may_speak_password(text: str, lowered: str) -> bool:
    """False only when `_spoken_password_spans(text)` is certainly empty (``lowered`` is ``text.lower()``)."""
    if lowered.isascii():
        # A word first (one compiled pass; most texts name no password), then a separator.
        if not _FOREIGN_ASCII_WORDS.occurs(lowered):
            return False
        return any(map(text.__contains__, _ASCII_MARKS)) or _ASCII_COPULA.search(lowered) is not None
    folded = lowered.translate(_CASE_FOLD)
    return any(map(folded.__contains__, _FOREIGN_PREFILTER))


def _direct(t: str) -> list[SecretSpan]:
    """The pattern and keyword pass over ``t`` as it is (spans unsorted, may overlap)."""
    lowered = t.lower()
    spans: list[SecretSpan] = []
    for rule in _candidates(frozenset(_PREFILTER.present(lowered))):
        if rule.guard and not any(map(t.__contains__, rule.guard)):
            continue  # the pattern is case-sensitive and needs one of these substrings
        covered = 0
        for m in rule.finditer(t):
            s, e = m.span(rule.group)
            if s < covered:
                continue  # inside a private key block already reported
            value = t[s:e]
            if rule.min_entropy and shannon_entropy(value) < rule.min_entropy:
                continue
            if _inside_mask(t, s):
                continue  # `--user [REDACTED:github_token]`: our own mask, so redaction is a fixed point
            if rule.kind in ("url_credentials", "curl_user", "bearer_token", "basic_auth") and is_placeholder(value, references=False):
                continue
            if rule.kind == "jwt" and not _jwt_header_ok(value):
                continue
            if _dummy(value):
                continue
            if rule.kind == "private_key":
                end = t.find("-----END", e, e + 16384)
                stop = t.find("-----", end + 8) if end != -1 else -1
                e = stop + 5 if stop != -1 else min(len(t), e + 4096)
                body = t[m.end() : end if end != -1 else e]
                covered = e
                if sum(c.isalnum() for c in body[:256]) < 8 or _dummy(body):
                    continue
            spans.append(SecretSpan(s, e, rule.kind))
    if any(map(lowered.__contains__, _KEYWORD_PREFILTER)):
        spans.extend(_keyword_spans(t))
        if "=" in t:
            spans.extend(_comparison_spans(t))
    if _may_speak_password(t, lowered):
        spans.extend(_spoken_password_spans(t))
    return spans


# The word for "password" in many languages (English too: "my password is ...", "PIN: ..."), then a
# separator (a copula, a colon, `=`, `是`...), then the value, when it looks like a password (a digit or a
# symbol in it). Regex pieces: `\s` joins the words of a phrase, `(?:...)?` is an optional tail.
_SPOKEN_WORDS = (
    "passwort", "kennwort", "contraseña", "contrasena", "clave", r"mot\sde\spasse", "senha", "пароль", "密码", "密碼", "口令",
    "パスワード", "비밀번호", "암호", "wachtwoord", "hasło", "haslo", "şifre", "sifre", "lösenord", "losenord", "adgangskode",
    "salasana", "jelszó", "heslo", "parolă", "parola", r"κωδικός(?:\sπρόσβασης)?", "סיסמה", r"كلمة\sالمرور", "पासवर्ड",
    r"mật\skhẩu", r"kata\ssandi", "รหัสผ่าน", "password", "passphrase", "passcode", r"pin(?:\scode)?",
)  # fmt: skip
_SPOKEN_COPULAS = ("is", "ist", "es", "est", "é", "è", "är", "er", "jest", "je", "это", "equals")  # `\s` on both sides
_SPOKEN_MARKS = ("是", "は", "은", "는", ":", "：", "=")  # an optional `\s` on either side
_SPOKEN_PHRASES = ("lautet", r"ist\sjetzt", r"is\snow")  # `\s` on both sides
_SPOKEN_PASSWORD = re.compile(
    r"(?i)(?<![\w])(?:" + "|".join(_SPOKEN_WORDS) + ")"
    r"(?:\s(?:" + "|".join(_SPOKEN_COPULAS) + r")\s|\s?(?:" + "|".join(_SPOKEN_MARKS) + r")\s?|\s(?:" + "|".join(_SPOKEN_PHRASES) + r")\s)"
    r"[\"'«“„`]?([^\s\"'»”“`,;]{6,128})"
)
# `(?i)` equates a few characters that `str.lower` keeps apart (`ſ` and `s`, `ı` and `i`, `ς` and `σ`,
# Greek and Cyrillic symbol forms; `İ` lowers to `i` and a combining dot): `_may_speak_password` folds
# them in non-ASCII text. A test checks every code point against every character of the needles.
_CASE_FOLD = str.maketrans(
    {"ı": "i", "ſ": "s", "\u0345": "ι", "\u1fbe": "ι", "ς": "σ", "ϐ": "β", "ϖ": "π", "ϰ": "κ", "ϱ": "ρ", "\u1c82": "о", "\u0307": None}
)


def _needle(word: str) -> str:
    """The longest literal piece every match of the regex piece ``word`` holds, lowercased and folded."""
    return max(re.sub(r"\(\?:[^)]*\)\?", "", word).split(r"\s"), key=len).lower().translate(_CASE_FOLD)


# Every `_SPOKEN_PASSWORD` match holds one of these, derived from its words (`passe` for `mot de passe`,
# `pin` for `pin code`): a substring test in the lowercased, folded text.
_FOREIGN_PREFILTER = tuple(dict.fromkeys(_needle(w) for w in _SPOKEN_WORDS))
# An ASCII text can hold only the ASCII words (lowercasing ASCII stays ASCII; no non-ASCII character of
# the regex matches an ASCII one under `(?i)`, a test checks it).
_FOREIGN_ASCII = tuple(w for w in _FOREIGN_PREFILTER if w.isascii())
_FOREIGN_ASCII_WORDS = WordFinder(_FOREIGN_ASCII)
# Between a spoken-password word and its value, ASCII text holds an ASCII mark (`:`, `=`) or an ASCII
# copula (or the first word of a phrase) with whitespace on both sides: every ASCII separator the regex
# accepts. Searched in the lowercased text (for ASCII the same as `(?i)`, and ~3x faster).
_ASCII_MARKS = tuple(m for m in _SPOKEN_MARKS if m.isascii())
_ASCII_COPULA = re.compile(
    r"\s(?:" + "|".join(dict.fromkeys(w for w in (*_SPOKEN_COPULAS, *(p.split(r"\s")[0] for p in _SPOKEN_PHRASES)) if w.isascii())) + r")\s"
)


# Where a `_SPOKEN_PASSWORD` match can start in ASCII text: the first literal piece of each word
# that is ASCII (the other words hold a letter no ASCII character matches under `(?i)`).
_SPOKEN_STARTS = LiteralStarts(
    _SPOKEN_PASSWORD, {p for p in (re.split(r"\\s|\(", w)[0].lower() for w in _SPOKEN_WORDS) if p.isascii()}
)


def _spoken_password_spans(text: str) -> list[SecretSpan]:
    spans: list[SecretSpan] = []
    for m in _SPOKEN_STARTS.finditer(text):
        value = m.group(1).rstrip(".!?)")
        if len(value) < 6 or is_placeholder(value) or _PLAIN_URL.match(value):
            continue
        if not any(c.isdigit() or not c.isalnum() for c in value) or shannon_entropy(value) < 2.5:
            continue  # "das Passwort ist falsch": a word, not a password
        spans.append(SecretSpan(m.start(1), m.start(1) + len(value), "password"))
    return spans


def redact_secrets(text: str, mask: str = "[REDACTED:{kind}]") -> tuple[str, list[SecretSpan]]:
    """``text`` with every secret span replaced by ``mask`` (`{kind}` is filled in), and the spans
    (positions in the original text)."""
    spans = find_secrets(text)
    if not spans:
        return text, spans
    out: list[str] = []
    pos = 0
    for sp in spans:
        out.append(text[pos : sp.start])
        out.append(mask.replace("{kind}", sp.kind))
        pos = sp.end
    out.append(text[pos:])
    return "".join(out), spans


# Every rule needs an assignment or header operator (`:`, `=`), a quote, a PEM `-----` line, a
# JWT's `eyJ` (its segments may be spaced around the dots, `eyJ...\n.\neyJ...`, each shorter than
# 16), or a token of at least 16 non-space characters (the shortest provider format, `bearer`
# tokens included); prose made of ordinary words has none of these. Invisible characters, which
# `joined_forms` removes, only lengthen a run, but can split an `eyJ`.
TRIGGERS = frozenset(":=\"'`")
_SECRET_TRIGGER = char_class(TRIGGERS)
_DROP_INVISIBLE = dict.fromkeys(map(ord, _INVISIBLE))


def may_find(value: str, kind: ArgKind | None, triggers: Set[str] | None = None) -> bool:
    """False only when `check_secrets([value], ...)` is certainly empty (the value itself, undecoded).
    ``triggers``: see `paths.may_find`."""
    if kind == "secret":
        return False
    if (_SECRET_TRIGGER.search(value) is not None if triggers is None else not TRIGGERS.isdisjoint(triggers)) or "-----" in value:
        return True
    if _may_speak_password(value, value.lower()):
        return True
    if "eyJ" in value or (not value.isascii() and "eyJ" in value.translate(_DROP_INVISIBLE)):
        return True  # the `jwt` rule (case-sensitive), which allows whitespace around the dots
    # A run of 16 non-space characters (`str.split` and `\s` agree on what a space is).
    return len(value) >= 16 and max(map(len, value.split()), default=0) >= 16


def check_secrets(forms: Sequence[str], pointer: str, kind: ArgKind | None, ctx: ScanContext) -> list[Finding]:
    """Secret findings for one argument value. Arguments declared `secret` are expected to carry
    one and are not reported (the engine redacts them instead)."""
    del ctx
    if kind == "secret":
        return []
    found: dict[str, Finding] = {}
    for form in forms[:2]:
        for sp in find_secrets(form):
            if sp.kind not in found:
                found[sp.kind] = Finding(NAME, sp.kind, pointer, f"{sp.kind.replace('_', ' ')} in the arguments", f"[REDACTED:{sp.kind}]")
    return list(found.values())
