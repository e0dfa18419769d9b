"""Namespacing of upstream resources and prompts (tools use `model.exposed_name`).

Resources: the client sees ``checkrein://<server>/<percent-encoded original URI>``, a valid URI
whatever the upstream's scheme, reversible without a lookup table. For policy and audit the
resource is named ``<server><separator><original URI>`` (`resource_policy_name`), so the same
allow/deny globs that cover a server's tools (``files__*``) cover its resources too.

Prompts: ``<server><separator><prompt name>``, exactly like tools.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

__all__ = ["RESOURCE_SCHEME", "exposed_resource_uri", "resource_policy_name", "split_resource_uri"]

RESOURCE_SCHEME = "checkrein"


def exposed_resource_uri(server: str, uri: str) -> str:
    return f"{RESOURCE_SCHEME}://{server}/{quote(uri, safe='')}"


def split_resource_uri(exposed: str) -> tuple[str, str]:
    """``(server, original uri)`` of an exposed resource URI. Raises ``ValueError`` if it is not one."""
    prefix = f"{RESOURCE_SCHEME}://"
    if not exposed.startswith(prefix):
        raise ValueError(f"{exposed!r} is not a checkrein resource URI ({prefix}<server>/<uri>)")
    server, slash, rest = exposed[len(prefix) :].partition("/")
    if not server or not slash or not rest:
        raise ValueError(f"{exposed!r} is not a checkrein resource URI ({prefix}<server>/<uri>)")
    return server, unquote(rest)


def resource_policy_name(server: str, uri: str, separator: str = "__") -> str:
    return f"{server}{separator}{uri}"
