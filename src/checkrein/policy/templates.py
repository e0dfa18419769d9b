"""Policy templates (`[policy] template`) and the tool classification they rest on.

Classification: what a tool does
--------------------------------
Every tool gets one category, ``read`` < ``write`` < ``delete`` < ``exec`` (or ``unknown``), plus a
``shared`` flag for writes. The rules, in order:

1. ``[policy.tools."<name>"] category`` wins outright; ``read_only = true`` means ``read`` and
   ``read_only = false`` means at least ``write``.
2. Otherwise two signals are computed and the MORE dangerous one wins, because annotations are
   hints from an untrusted server (a tool called ``delete_file`` that claims ``readOnlyHint`` is
   still a delete):

   - annotations: ``readOnlyHint: true`` -> read; ``destructiveHint: true`` -> delete;
     ``readOnlyHint: false`` with ``destructiveHint: false`` -> write; ``readOnlyHint: false`` alone
     -> delete (the MCP default of ``destructiveHint`` is true); no annotations -> no signal.
   - the tool's own name (not the server's), split into lower-case words at ``_ - . /``, spaces,
     digits and camelCase humps, each word looked up in these lists:

     - exec: exec, execute, run, shell, command, cmd, bash, sh, zsh, powershell, eval, spawn,
       subprocess, terminal, script
     - delete: delete, remove, rm, drop, destroy, purge, truncate, erase, unlink, wipe, kill, revoke
     - write: write, add, create, update, insert, put, set, edit, modify, patch, save, upload, move,
       rename, append, commit, push, send, post, publish, merge, replace, apply, grant, deploy,
       upsert, copy, mkdir, touch, store
     - read: get, list, read, search, find, query, fetch, show, describe, view, lookup, stat,
       count, head, tail, cat, inspect, browse, ls, check, status, diff, log, logs, explain

3. Neither signal -> ``unknown``.

A write is ``shared`` when a word of the tool name or of the server name is one of: db, database,
sql, table, row, rows, record, records, bucket, s3, gcs, blob, kv, redis, cache, queue, topic,
index, repo, repository, git, github, gitlab, branch, issue, pr, wiki, sheet, spreadsheet, drive,
channel, message, slack, email, mail, calendar, ticket, jira, crm, publish, push, post, send,
commit, merge, deploy, knowledge, kb, document, documents, docs, notes, memory (a store other people read, as opposed to a local scratch file).

Templates
---------
A template maps each category to an effect (used when no explicit ``allow``/``deny`` glob matches)
and a risk (used when the config gives the tool none), and sets analyzer defaults:

=============  ===================  ===================  ===================
category       development          production           strict
=============  ===================  ===================  ===================
read           allow, low           allow, low           allow, low
write          allow, medium        allow, high (asks)   deny, medium
write shared   allow, medium        deny, high           deny, high
delete         allow, high (asks)   deny, high           deny, high
exec           deny, critical       deny, critical       deny, critical
unknown        allow, medium        allow, high (asks)   deny, medium
secrets        ask                  deny                 deny
=============  ===================  ===================  ===================

``production`` and ``strict`` also require every ``query``-kind argument (from the tool's schema or
the config) that has no explicit constraint to hold read-only SQL (`read_only_sql`, which means no
side effect at all, judged on the parsed statement): a query argument is a write channel of its
own. Which arguments hold SQL is decided from the schema *and* the tool, never the name alone
(`checkrein.policy.analyzers.schema.query_is_sql`): the ``query`` of a search tool
(``search_documents``, "Words to look for") is text and stays free, the ``query`` of ``run_sql``
is SQL; a config ``kind = "query"`` or ``kind = "text"`` for the argument wins either way.

Every key stays overridable by the explicit config: ``deny``/``allow`` globs are checked before the
template's category effects; ``[policy] default`` replaces them all; a tool's ``risk`` replaces the
template risk; ``[policy.analyzers]`` and per-tool ``findings`` replace the analyzer defaults.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from checkrein.config.policy import FindingEffect, Risk, ToolRule

__all__ = [
    "TEMPLATES",
    "CategoryRule",
    "Classification",
    "Template",
    "classify",
    "name_category",
    "name_words",
]

Category = Literal["read", "write", "delete", "exec", "unknown"]
TemplateKey = Literal["read", "write", "write_shared", "delete", "exec", "unknown"]

_EXEC = frozenset(
    "exec execute run shell command cmd bash sh zsh powershell eval spawn subprocess terminal script".split()
)
_DELETE = frozenset("delete remove rm drop destroy purge truncate erase unlink wipe kill revoke".split())
_WRITE = frozenset(
    (
        "write add create update insert put set edit modify patch save upload move rename append commit push "
        "send post publish merge replace apply grant deploy upsert copy mkdir touch store"
    ).split()
)
_READ = frozenset(
    (
        "get list read search find query fetch show describe view lookup stat count head tail cat inspect "
        "browse ls check status diff log logs explain"
    ).split()
)
_SHARED = frozenset(
    (
        "db database sql table row rows record records bucket s3 gcs blob kv redis cache queue topic index "
        "repo repository git github gitlab branch issue pr wiki sheet spreadsheet drive channel message "
        "slack email mail calendar ticket jira crm publish push post send commit merge deploy "
        "knowledge kb document documents docs notes memory"
    ).split()
)
_RANK: dict[Category, int] = {"unknown": 0, "read": 1, "write": 2, "delete": 3, "exec": 4}
_WORD = re.compile(r"[A-Z]+(?![a-z])[0-9]*|[A-Z]?[a-z]+[0-9]*|[0-9]+")


def name_words(name: str) -> tuple[str, ...]:
    """Lower-case words of a tool or server name (``listS3Objects`` -> list, s3, objects)."""
    return tuple(w.lower() for w in _WORD.findall(name) if not w.isdigit())


def _name_category(words: tuple[str, ...]) -> Category:
    found: Category = "unknown"
    for w in words:
        if w in _EXEC:
            return "exec"
        if w in _DELETE:
            found = "delete"
        elif w in _WRITE and _RANK[found] < _RANK["write"]:
            found = "write"
        elif w in _READ and found == "unknown":
            found = "read"
    return found


def name_category(tool_name: str) -> Category:
    """What a tool's own name says it does (rule 2's name signal), ignoring annotations and config."""
    return _name_category(name_words(tool_name))


def _annotation_category(annotations: Mapping[str, Any] | None) -> Category:
    if not annotations:
        return "unknown"
    read_only = annotations.get("readOnlyHint")
    destructive = annotations.get("destructiveHint")
    if destructive is True:
        return "delete"
    if read_only is True:
        return "read"
    if read_only is False:
        return "write" if destructive is False else "delete"
    return "unknown"


@dataclass(frozen=True, slots=True)
class Classification:
    category: Category
    shared: bool
    source: str
    """Why: ``config``, ``annotations``, ``name`` or ``none`` (for explanations and tests)."""

    @property
    def template_key(self) -> TemplateKey:
        if self.category == "write" and self.shared:
            return "write_shared"
        return self.category


def classify(
    server: str,
    tool_name: str,
    annotations: Mapping[str, Any] | None,
    rule: ToolRule | None = None,
) -> Classification:
    """Classify one tool by the rules in this module's docstring."""
    words = name_words(tool_name)
    shared = any(w in _SHARED for w in words + name_words(server))
    if rule is not None:
        if rule.category is not None:
            return Classification(rule.category, shared, "config")
        if rule.read_only is True:
            return Classification("read", shared, "config")
    by_name = _name_category(words)
    by_annotations = _annotation_category(annotations)
    category, source = by_name, "name"
    if _RANK[by_annotations] > _RANK[by_name] or (by_annotations == by_name != "unknown"):
        category, source = by_annotations, "annotations"
    if rule is not None and rule.read_only is False and _RANK[category] < _RANK["write"]:
        category, source = "write", "config"
    if category == "unknown":
        source = "none"
    return Classification(category, shared, source)


@dataclass(frozen=True, slots=True)
class CategoryRule:
    effect: Literal["allow", "deny"]
    risk: Risk


@dataclass(frozen=True, slots=True)
class Template:
    name: str
    categories: Mapping[TemplateKey, CategoryRule]
    analyzers: Mapping[str, FindingEffect]


def _t(
    name: str, rules: dict[TemplateKey, tuple[Literal["allow", "deny"], Risk]], analyzers: dict[str, FindingEffect]
) -> Template:
    return Template(name, {k: CategoryRule(e, r) for k, (e, r) in rules.items()}, analyzers)


TEMPLATES: Mapping[str, Template] = {
    "development": _t(
        "development",
        {
            "read": ("allow", "low"),
            "write": ("allow", "medium"),
            "write_shared": ("allow", "medium"),
            "delete": ("allow", "high"),
            "exec": ("deny", "critical"),
            "unknown": ("allow", "medium"),
        },
        {"secrets": "ask"},
    ),
    "production": _t(
        "production",
        {
            "read": ("allow", "low"),
            "write": ("allow", "high"),
            "write_shared": ("deny", "high"),
            "delete": ("deny", "high"),
            "exec": ("deny", "critical"),
            "unknown": ("allow", "high"),
        },
        {},
    ),
    "strict": _t(
        "strict",
        {
            "read": ("allow", "low"),
            "write": ("deny", "medium"),
            "write_shared": ("deny", "high"),
            "delete": ("deny", "high"),
            "exec": ("deny", "critical"),
            "unknown": ("deny", "medium"),
        },
        {},
    ),
}
