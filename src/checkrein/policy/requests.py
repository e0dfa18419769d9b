"""Decisions for the requests that are not tool calls: resource reads and subscriptions, prompt
gets, completions, and listings. Pure, like the rest of the policy.

They meet the same checks as a tool call, in the same order: bounds, governance (deny globs, the
server's security level, the roles of a matching `[policy.tools]` rule, allow globs, the default;
see `governance.govern_other`), then the argument analyzers with the effects the template, the
config and a matching rule give them:

- a resource URI is analyzed by its scheme: the path of a ``file:`` URI (and the whole URI of any
  scheme that is not a network one) as a ``path``, an ``http(s)``/``ws(s)``/``ftp`` URI as a ``url``;
- prompt arguments, and a completion's argument value and context arguments, by their names
  (``path``, ``url``, ``query``, ... as for tool schemas), every string also untyped.

Listings and unsubscriptions are always allowed here: a listing shows each item only when the
identity may use it (`may_see`), and dropping a subscription can harm nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from checkrein.config.policy import ANALYZERS, ArgKind
from checkrein.policy.analyzers.api import ScanContext

from .call import ToolCall
from .decision import Decision, Finding
from .governance import GovernanceTables, ToolGovernance, govern_other, identity_problem

if TYPE_CHECKING:
    from .engine import CompiledPolicy

__all__ = ["decide_request", "scan_target"]

_NETWORK_SCHEMES = frozenset({"http", "https", "ws", "wss", "ftp", "ftps", "gopher", "sftp", "ssh", "smb", "ldap", "ldaps"})
_MAX_GOVERNED = 4096
"""Governance of resource/prompt names is compiled lazily and memoised, up to this many names."""


def _uri_target(uri: str) -> tuple[str, ArgKind]:
    try:
        parts = urlsplit(uri)
    except ValueError:
        return uri, "path"
    scheme = parts.scheme.lower()
    if scheme == "file":
        # The path is what the server will open; `file:` itself is the resource's normal scheme.
        return unquote(parts.path) or uri, "path"
    if scheme in _NETWORK_SCHEMES:
        return uri, "url"
    return uri, "path"


def scan_target(call: ToolCall) -> tuple[dict[str, Any], dict[str, ArgKind]]:
    """What the analyzers read for a non-tool request, and the kinds of its strings."""
    from checkrein.policy.analyzers.schema import kind_from_name

    if call.kind in ("resource", "subscribe"):
        uri_value, uri_kind = _uri_target(str(call.arguments.get("uri", "")))
        return {"uri": uri_value}, {"/uri": uri_kind}
    if call.kind == "completion":
        argument = call.arguments.get("argument")
        context = call.arguments.get("context")
        out: dict[str, Any] = {}
        kinds: dict[str, ArgKind] = {}
        if isinstance(argument, Mapping):
            out["argument"] = {"value": argument.get("value", "")}
            k = kind_from_name(str(argument.get("name", "")))
            if k is not None:
                kinds["/argument/value"] = k
        if isinstance(context, Mapping):
            out["context"] = dict(context)
            args = context.get("arguments")
            if isinstance(args, Mapping):
                for name in args:
                    k = kind_from_name(str(name))
                    if k is not None:
                        kinds[f"/context/arguments/{name}"] = k
        return out, kinds
    kinds = {}
    target: dict[str, Any] = {}
    for name, value in call.arguments.items():
        k = kind_from_name(str(name))
        if k == "url" and isinstance(value, str):
            # A prompt's URI argument names a resource as often as a web page: judged like a
            # resource URI (a `test://` or `file:` URI by its path, a network URI as a URL).
            value, k = _uri_target(value)
        target[name] = value
        if k is not None:
            kinds["/" + str(name).replace("~", "~0").replace("/", "~1")] = k
    return target, kinds


def _governance(policy: CompiledPolicy, call: ToolCall) -> ToolGovernance:
    cache = policy.other_governance
    key = (call.exposed_name, call.server)
    g = cache.get(key)
    if g is None:
        tables = policy.tables if policy.tables is not None else GovernanceTables.build(policy.config)
        g = govern_other(tables, call.exposed_name, call.server)
        if len(cache) >= _MAX_GOVERNED:
            cache.clear()
        cache[key] = g
    return g


def decide_request(policy: CompiledPolicy, call: ToolCall) -> Decision:
    """Decide a request of kind resource, subscribe, prompt, completion, unsubscribe or list."""
    if call.kind == "list":
        return Decision("allow", "list:filtered", ("listings show only what the caller may use",), "low")
    if call.kind == "unsubscribe":
        return Decision("allow", "unsubscribe", ("dropping a subscription is always allowed",), "low")
    g = _governance(policy, call)
    if g.deny_glob is not None:
        return g.deny_glob
    who = identity_problem(g, call.identity)
    if who is not None:
        return who
    if g.base.effect != "allow":
        return g.base
    enabled = frozenset(a for a in ANALYZERS if g.finding_effects.get(a, "deny") != "off")
    if not enabled:
        return g.base
    if policy.scanner is None:
        return Decision(
            "deny", "policy.error", (policy.analyzers_missing or "analyzers are unavailable",), g.risk,
            error_code="policy.error", degraded=("policy.analyzers_missing",),
        )  # fmt: skip
    p = policy.config.policy
    rule = g.rule
    arg_specs = rule.args if rule is not None else {}
    target, kinds = scan_target(call)
    ctx = ScanContext(
        kinds=kinds,
        path_roots=tuple(dict.fromkeys([*p.path_roots, *(r for c in arg_specs.values() for r in (c.roots or ()))])),
        allowed_hosts=tuple(dict.fromkeys([*p.urls.allowed_hosts, *(h for c in arg_specs.values() for h in (c.hosts or ()))])),
        resolver=policy.resolver if p.urls.resolve_dns else None,
        enabled=enabled,
        verdicts=policy.verdicts,
    )
    try:
        raw = tuple(policy.scanner(target, ctx))
    except Exception as exc:  # noqa: BLE001 - fail closed: a crashing analyzer denies
        policy.counters.increment("policy.analyzer_failed")
        return Decision(
            "deny", "policy.error", (f"an argument analyzer failed ({type(exc).__name__}); the request is denied",),
            g.risk, error_code="policy.error", degraded=("policy.analyzer_failed",),
        )  # fmt: skip
    effects = g.finding_effects
    findings = tuple(f for f in raw if effects.get(f.analyzer, "deny") != "off")
    redactions = tuple(dict.fromkeys(f.path for f in raw if f.analyzer == "secrets"))
    for f in findings:
        if effects.get(f.analyzer, "deny") == "deny":
            return Decision(
                "deny", f"finding:{f.analyzer}:{f.kind}", (_finding_text(call, f),), g.risk, findings, redactions,
                error_code="policy.finding",
            )  # fmt: skip
    if findings:
        first = findings[0]
        return Decision(
            "ask", f"finding:{first.analyzer}:{first.kind}", tuple(_finding_text(call, f) for f in findings),
            g.risk, findings, redactions,
        )  # fmt: skip
    return g.base if not redactions else Decision(g.base.effect, g.base.rule_id, g.base.reasons, g.risk, (), redactions)


def _finding_text(call: ToolCall, f: Finding) -> str:
    where = {"resource": "the resource URI", "subscribe": "the resource URI"}.get(call.kind) or f.path or "(arguments)"
    return f"{f.analyzer} found {f.kind} in {where}" + (f": {f.message}" if f.message else "")
