"""Exposed names: how each server's tools, prompts and resources are named to the client.

Every server has a prefix (`[[servers]] prefix`, default its `name`):

- tools and prompts are ``<prefix><separator><name>``; with ``prefix = ""`` the upstream's own name;
- resources are ``checkrein://<prefix>/<percent-encoded original URI>`` (a valid URI whatever the
  upstream's scheme, reversible without a lookup table); with ``prefix = ""`` the original URI.

For policy and audit a resource is named ``<prefix><separator><original URI>`` (`resource_policy_name`),
or the bare URI with an empty prefix, so the globs that cover a server's tools (``files__*``) cover
its resources too.

Several servers may use ``prefix = ""``; a name (or URI) two of them expose is then ambiguous, and the
catalog refuses it rather than pick one (`Names.passthrough` lists the candidates).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

__all__ = [
    "RESOURCE_SCHEME",
    "Names",
    "exposed_resource_uri",
    "exposed_uri_template",
    "resource_policy_name",
    "split_resource_uri",
]

RESOURCE_SCHEME = "checkrein"
_URI_PREFIX = f"{RESOURCE_SCHEME}://"


def exposed_resource_uri(prefix: str, uri: str) -> str:
    """The URI a client sees for ``uri`` of the server exposed under ``prefix``."""
    if not prefix:
        return uri
    return f"{_URI_PREFIX}{prefix}/{quote(uri, safe='')}"


_EXPRESSION = re.compile(r"\{[^}]*\}")


def exposed_uri_template(prefix: str, template: str) -> str:
    """The exposed form of an RFC 6570 URI template: its literal parts percent-encoded as in
    `exposed_resource_uri`, its ``{...}`` expressions kept, so the URI a client expands from it
    is the exposed form of the URI the upstream's template would give."""
    if not prefix:
        return template
    out, pos = [], 0
    for m in _EXPRESSION.finditer(template):
        out.append(quote(template[pos : m.start()], safe=""))
        out.append(m.group())
        pos = m.end()
    out.append(quote(template[pos:], safe=""))
    return f"{_URI_PREFIX}{prefix}/{''.join(out)}"


def split_resource_uri(exposed: str) -> tuple[str, str]:
    """``(prefix, original uri)`` of a prefixed resource URI. Raises ``ValueError`` if it is not one."""
    if not exposed.startswith(_URI_PREFIX):
        raise ValueError(f"{exposed!r} is not a checkrein resource URI ({_URI_PREFIX}<server>/<uri>)")
    prefix, slash, rest = exposed[len(_URI_PREFIX) :].partition("/")
    if not prefix or not slash or not rest:
        raise ValueError(f"{exposed!r} is not a checkrein resource URI ({_URI_PREFIX}<server>/<uri>)")
    return prefix, unquote(rest)


def resource_policy_name(prefix: str, uri: str, separator: str = "__") -> str:
    return f"{prefix}{separator}{uri}" if prefix else uri


@dataclass(frozen=True)
class Names:
    """The naming of one gateway: server -> prefix, and the separator. Pure and immutable."""

    separator: str = "__"
    prefixes: Mapping[str, str] = field(default_factory=dict)
    """Server name -> prefix. A server missing here is exposed under its own name."""

    @classmethod
    def of(cls, servers: Iterable[tuple[str, str]], separator: str = "__") -> Names:
        """From ``(server name, prefix)`` pairs."""
        return cls(separator, dict(servers))

    def prefix(self, server: str) -> str:
        return self.prefixes.get(server, server)

    def name(self, server: str, original: str) -> str:
        """The exposed name of a tool or prompt."""
        prefix = self.prefix(server)
        return f"{prefix}{self.separator}{original}" if prefix else original

    def uri(self, server: str, original: str) -> str:
        """The exposed URI of a resource (or a resource template's URI template)."""
        return exposed_resource_uri(self.prefix(server), original)

    def template(self, server: str, original: str) -> str:
        """The exposed form of a resource template's URI template."""
        return exposed_uri_template(self.prefix(server), original)

    def policy_name(self, server: str, original_uri: str) -> str:
        """What policy globs and the audit call a resource of ``server``."""
        return resource_policy_name(self.prefix(server), original_uri, self.separator)

    @property
    def passthrough(self) -> tuple[str, ...]:
        """Servers exposed with their own names (``prefix = ""``), in name order."""
        return tuple(sorted(s for s, p in self.prefixes.items() if not p))

    def split_name(self, exposed: str) -> tuple[str, str] | None:
        """``(server, original)`` for a prefixed tool or prompt name, or ``None`` (then the name can
        only belong to a passthrough server, see `passthrough`)."""
        head, sep, rest = exposed.partition(self.separator)
        if sep and head and rest:
            for server, prefix in self.prefixes.items():
                if prefix == head:
                    return server, rest
            if head not in self.prefixes and head not in self.prefixes.values():
                # Unknown to this map (a server added by a test or a caller without a Names):
                # exposed under its own name by default.
                return head, rest
        return None

    def split_uri(self, exposed: str) -> tuple[str, str] | None:
        """``(server, original uri)`` for a prefixed resource URI, or ``None`` (passthrough)."""
        try:
            prefix, original = split_resource_uri(exposed)
        except ValueError:
            return None
        for server, p in self.prefixes.items():
            if p == prefix:
                return server, original
        if prefix not in self.prefixes.values() and prefix not in self.prefixes:
            return prefix, original
        return None
