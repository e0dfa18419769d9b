"""Find secrets written inline in a client config and replace them with `${VAR}` references.

The importer never copies a secret into checkrein's config: each one becomes a reference to an
environment variable whose name is derived from the server and the key, and the operator is told
which variables to set. Detection is deliberately generous (a credential-looking key name, or a
value shaped like a well-known token): a false positive costs one environment variable, a false
negative leaks a credential into a file that gets committed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = [
    "CREDENTIAL_KEY",
    "contains_reference",
    "env_var_name",
    "is_credential_key",
    "is_inline_secret",
    "looks_like_token",
    "SecretMover",
]

CREDENTIAL_KEY = re.compile(
    r"(?i)(token|secret|passw(or)?d|passwd|api[_-]?key|apikey|auth|credential|private[_-]?key|"
    r"access[_-]?key|session|cookie|bearer|(^|[_-])pat($|[_-])|client[_-]?secret)"
)
"""Key names (env variables, headers, flags, query parameters) that hold credentials."""

_TOKEN_SHAPES = re.compile(
    r"(sk-[A-Za-z0-9_-]{16,}|sk_(live|test)_[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|"
    r"xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|glpat-[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{35}|"
    r"eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}|npm_[A-Za-z0-9]{30,}|hf_[A-Za-z0-9]{30,})"
)
_REF = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}")
_REF_WITH_DEFAULT = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):-([^}]*)\}")
_BEARER = re.compile(r"^(?i:(bearer|token|basic))\s+(\S.*)$")


def contains_reference(value: str) -> bool:
    """True when ``value`` already uses a ``${VAR}`` reference (so it holds no literal secret)."""
    return bool(_REF.search(value))


def is_credential_key(key: str) -> bool:
    return bool(CREDENTIAL_KEY.search(key))


_NOT_SECRET = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null", "0", "1", "oauth", "bearer", "basic"})


def is_inline_secret(key: str, value: str) -> bool:
    """True when ``value`` (stored under ``key``) is a literal credential rather than a reference
    or a setting that merely has a credential-sounding name (``AUTH_MODE = "oauth"``). A reference
    is no secret, but its ``${VAR:-default}`` may be: see `SecretMover`."""
    if not value or contains_reference(value):
        return False
    if looks_like_token(value):
        return True
    return is_credential_key(key) and value.strip().lower() not in _NOT_SECRET and len(value.strip()) >= 6


def looks_like_token(value: str) -> bool:
    """True when ``value`` contains something shaped like a well-known API token."""
    return bool(_TOKEN_SHAPES.search(value))


def env_var_name(*parts: str) -> str:
    """An environment variable name from ``parts``: upper case, non-alphanumerics as ``_``."""
    name = "_".join(re.sub(r"[^A-Za-z0-9]+", "_", p).strip("_").upper() for p in parts if p)
    name = re.sub(r"_+", "_", name) or "SECRET"
    return "_" + name if name[0].isdigit() else name


class SecretMover:
    """Replaces literal secrets by references, remembering each (server, where, variable).

    One instance serves one import so variable names stay unique across servers: the same
    variable is reused only for the same value.
    """

    def __init__(self, on_moved: Callable[[str, str, str], None]) -> None:
        self._on_moved = on_moved
        self._values: dict[str, str] = {}  # variable -> value it stands for

    def _variable(self, preferred: str, value: str, fallback: str) -> str:
        for var, known in self._values.items():
            if known == value:  # the same secret used twice gets one variable
                return var
        for candidate in (preferred, fallback):
            if self._values.get(candidate, value) == value:
                self._values[candidate] = value
                return candidate
        n = 2
        while self._values.get(f"{fallback}_{n}", value) != value:
            n += 1
        self._values[f"{fallback}_{n}"] = value
        return f"{fallback}_{n}"

    def _drop_secret_defaults(self, server: str, where: str, key: str, value: str) -> str:
        """``value`` with every ``${VAR:-<literal secret>}`` cut to ``${VAR}``: a default is a
        value written in the file, so a credential there is as inline as any other."""

        def cut(m: re.Match[str]) -> str:
            if not is_inline_secret(key, m.group(2)):
                return m.group(0)
            self._on_moved(server, where, m.group(1))
            return "${" + m.group(1) + "}"

        return _REF_WITH_DEFAULT.sub(cut, value)

    def env(self, server: str, key: str, value: str) -> str:
        """The value to write for env variable ``key``: a reference named after the key itself."""
        value = self._drop_secret_defaults(server, f"env.{key}", key, value)
        if not is_inline_secret(key, value):
            return value
        var = self._variable(env_var_name(key), value, env_var_name(server, key))
        self._on_moved(server, f"env.{key}", var)
        return "${" + var + "}"

    def header(self, server: str, key: str, value: str) -> str:
        """The value to write for HTTP header ``key``; keeps an auth scheme (``Bearer ${VAR}``)."""
        value = self._drop_secret_defaults(server, f"headers.{key}", key, value)
        m = _BEARER.match(value)
        if not (is_inline_secret(key, value) or (m and is_inline_secret("token", m.group(2)))):
            return value
        scheme, secret = (m.group(1) + " ", m.group(2)) if m else ("", value)
        suffix = "TOKEN" if key.lower() == "authorization" else key
        var = self._variable(env_var_name(server, suffix), secret, env_var_name(server, key))
        self._on_moved(server, f"headers.{key}", var)
        return scheme + "${" + var + "}"

    def args(self, server: str, args: list[str]) -> list[str]:
        """Arguments with secret values (``--token=x``, ``--api-key x``, bare tokens) replaced."""
        args = [self._drop_secret_defaults(server, f"args[{i}]", a.partition("=")[0] if a.startswith("-") else "arg", a) for i, a in enumerate(args)]
        out = list(args)
        for i, arg in enumerate(args):
            if contains_reference(arg):
                continue
            flag, eq, val = arg.partition("=")
            if eq and flag.startswith("-") and is_inline_secret(flag, val):
                var = self._variable(env_var_name(server, flag), val, env_var_name(server, flag, str(i)))
                out[i] = f"{flag}=${{{var}}}"
                self._on_moved(server, f"args[{i}]", var)
                continue
            prev = args[i - 1] if i else ""
            is_value_of_flag = prev.startswith("-") and "=" not in prev and is_credential_key(prev)
            if (is_value_of_flag and not arg.startswith("-") and is_inline_secret(prev, arg)) or looks_like_token(arg):
                name = prev if is_value_of_flag else "arg"
                var = self._variable(env_var_name(server, name), arg, env_var_name(server, name, str(i)))
                out[i] = "${" + var + "}"
                self._on_moved(server, f"args[{i}]", var)
        return out

    def url(self, server: str, url: str) -> str:
        """``url`` with a password in its userinfo and credential query parameters replaced."""
        url = self._drop_secret_defaults(server, "url", "url", url)
        if contains_reference(url):
            return url
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, _, hostport = netloc.rpartition("@")
            user, colon, password = userinfo.partition(":")
            if colon and password:
                var = self._variable(env_var_name(server, "PASSWORD"), password, env_var_name(server, "URL_PASSWORD"))
                netloc = f"{user}:${{{var}}}@{hostport}"
                self._on_moved(server, "url.password", var)
        query = parse_qsl(parts.query, keep_blank_values=True)
        changed = False
        new_query: list[tuple[str, str]] = []
        for k, v in query:
            if is_inline_secret(k, v):
                var = self._variable(env_var_name(server, k), v, env_var_name(server, "URL", k))
                self._on_moved(server, f"url.query.{k}", var)
                new_query.append((k, "${" + var + "}"))
                changed = True
            else:
                new_query.append((k, v))
        q = urlencode(new_query, safe="${}:") if changed else parts.query
        return urlunsplit((parts.scheme, netloc, parts.path, q, parts.fragment))
