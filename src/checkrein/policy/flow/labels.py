"""Flow labels: what a tool means for a session's Rule of Two.

Three labels (Meta's "Agents Rule of Two"):

- ``untrusted``  its results carry text an outsider can write (mail, web, tickets, files, reviews,
                 search results), so the session may now hold instructions from someone else;
- ``private``    it reads private data or systems;
- ``sink``       it changes state or sends data out (send, post, write, delete, pay, book, share).

Each label of each tool is decided by the first source that speaks, and the reason is kept:

1. ``[policy.tools."<glob>"] flow = [...]`` (merged like every tool rule): exactly these labels.
2. ``sink`` comes from the tool's category (`checkrein.policy.templates.classify`, which already
   weighs the ``readOnlyHint``/``destructiveHint`` annotations against the tool's name, the more
   dangerous winning): ``read`` is no sink; ``write``, ``delete`` and ``exec`` are; ``unknown`` is
   a sink by default.
3. ``untrusted``: ``openWorldHint: true``, or a word of the tool's name that names a channel
   outsiders write to (mail, messages, web, tickets, files, reviews, search results, shared stores
   such as databases, repositories and wikis). ``openWorldHint: false`` does not clear a name like
   ``read_inbox`` (annotations are hints from a server checkrein does not trust). Neither signal:
   not untrusted. (The MCP default of ``openWorldHint`` is ``true``, but most servers never set
   it: reading that default would label every tool untrusted and make the leg meaningless; label
   such tools in the config. Whatever the labels, a result that result inspection flags makes
   the session untrusted.)
4. ``private`` for tools that read (category ``read``, ``exec`` or ``unknown``): a word of the name
   that names private data (mail, files, accounts, contacts, records...) -> private; one that
   names public data only (web, weather, news...) -> not private; neither -> private by default.
   Tools that only write are not sources of private data unless the config says so.

Resources read through the gateway count as ``untrusted`` and ``private``; prompts as ``untrusted``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from checkrein.config.policy import FlowEffect, FlowLabel, ToolRule
from checkrein.policy.templates import Classification, name_words

__all__ = ["FLOW_LABELS", "LabelReason", "LabelSource", "ToolFlow", "kind_flow", "tool_flow"]

FLOW_LABELS: tuple[FlowLabel, ...] = ("untrusted", "private", "sink")
LabelSource = Literal["config", "annotations", "name", "category", "default", "kind"]

_OUTSIDER = frozenset(
    (
        "email emails mail mails inbox message messages msg msgs chat chats channel channels conversation "
        "conversations thread threads dm dms sms comment comments review reviews feedback ticket tickets "
        "issue issues forum feed feeds rss news article articles tweet tweets social web webpage webpages "
        "website websites page pages url urls http https link links browse browser download crawl scrape "
        "file files document documents doc docs attachment attachments upload uploads calendar event events "
        "invite invites invitation invitations notification notifications transaction transactions search "
        "db database sql table row rows record records bucket blob queue topic repo repository git github "
        "gitlab branch pr commit commits wiki sheet spreadsheet drive crm jira slack"
    ).split()
)
"""Channels whose content someone outside the session can write."""

_PRIVATE = frozenset(
    (
        "email emails mail mails inbox message messages msg msgs chat chats channel channels dm dms sms "
        "contact contacts calendar event events meeting meetings file files document documents doc docs "
        "drive folder folders note notes account accounts balance transaction transactions payment payments "
        "iban bank card cards password passwords credential credentials secret secrets token tokens key keys "
        "user users profile profiles personal history order orders invoice invoices bill bills health medical "
        "patient patients salary employee employees customer customers db database record records table tables "
        "sql query repo repository memory wallet address addresses phone passport identity env environment "
        "config settings log logs"
    ).split()
)
"""Words naming data that belongs to someone (the user, their organisation, their customers)."""

_PUBLIC = frozenset("web webpage webpages website websites internet url urls http https browse weather news wikipedia".split())
"""Words naming data anyone can read; a tool named only by these is not a private source."""


@dataclass(frozen=True, slots=True)
class LabelReason:
    """One label of one tool: whether it holds, which source decided, and why (for people)."""

    label: FlowLabel
    present: bool
    source: LabelSource
    reason: str


@dataclass(frozen=True, slots=True)
class ToolFlow:
    """A tool's flow labels with their reasons, and what the flow rules do for its calls."""

    exposed: str
    untrusted: LabelReason
    private: LabelReason
    sink: LabelReason
    rule_of_two: FlowEffect = "ask"
    provenance: FlowEffect = "ask"

    @property
    def labels(self) -> tuple[FlowLabel, ...]:
        return tuple(r.label for r in (self.untrusted, self.private, self.sink) if r.present)

    @property
    def reasons(self) -> tuple[LabelReason, LabelReason, LabelReason]:
        return (self.untrusted, self.private, self.sink)


def _words_hit(words: tuple[str, ...], vocabulary: frozenset[str]) -> str | None:
    for w in words:
        if w in vocabulary:
            return w
    return None


def _from_config(exposed: str, labels: tuple[FlowLabel, ...], key: str) -> tuple[LabelReason, ...]:
    why = f"[policy.tools.{key!r}] flow = {list(labels)}" if key else f"flow = {list(labels)}"
    return tuple(LabelReason(lab, lab in labels, "config", why) for lab in FLOW_LABELS)


def _sink(cls: Classification) -> LabelReason:
    if cls.category == "read":
        return LabelReason("sink", False, "category" if cls.source != "config" else "config", f"reads only (category read, from {cls.source})")
    if cls.category == "unknown":
        return LabelReason("sink", True, "default", "what it does is unknown, so it is treated as a sink")
    source: LabelSource = "config" if cls.source == "config" else "category"
    return LabelReason("sink", True, source, f"changes state or sends data (category {cls.category}, from {cls.source})")


def _untrusted(words: tuple[str, ...], annotations: dict[str, object] | None) -> LabelReason:
    word = _words_hit(words, _OUTSIDER)
    hint = (annotations or {}).get("openWorldHint")
    if hint is True:
        return LabelReason("untrusted", True, "annotations", "openWorldHint: true (it reaches an open world)")
    if word is not None:
        return LabelReason("untrusted", True, "name", f"its name says {word!r}, content outsiders can write")
    if hint is False:
        return LabelReason("untrusted", False, "annotations", "openWorldHint: false (a closed world)")
    return LabelReason("untrusted", False, "default", "no openWorldHint and its name names no outside channel")


def _private(words: tuple[str, ...], cls: Classification) -> LabelReason:
    if cls.category in ("write", "delete"):
        return LabelReason("private", False, "category", f"it does not read data (category {cls.category})")
    word = _words_hit(words, _PRIVATE)
    if word is not None:
        return LabelReason("private", True, "name", f"its name says {word!r}, private data")
    public = _words_hit(words, _PUBLIC)
    if public is not None:
        return LabelReason("private", False, "name", f"its name says {public!r}, public data")
    return LabelReason("private", True, "default", "what it reads is unknown, so it is treated as private")


def tool_flow(
    exposed: str,
    tool_name: str,
    annotations: dict[str, object] | None,
    classification: Classification,
    rule: ToolRule | None,
    *,
    rule_of_two: FlowEffect = "ask",
    provenance: FlowEffect = "ask",
    rule_key: str = "",
) -> ToolFlow:
    """Label one tool by the rules in this module's docstring."""
    if rule is not None and rule.flow is not None:
        u, p, s = _from_config(exposed, rule.flow, rule_key)
        return ToolFlow(exposed, u, p, s, rule_of_two, provenance)
    words = name_words(tool_name)
    return ToolFlow(
        exposed,
        _untrusted(words, annotations),
        _private(words, classification),
        _sink(classification),
        rule_of_two,
        provenance,
    )


def kind_flow(exposed: str, kind: Literal["resource", "prompt"]) -> ToolFlow:
    """Labels of a resource read or a prompt get (see the module docstring)."""
    what = "a resource" if kind == "resource" else "a prompt"
    return ToolFlow(
        exposed,
        LabelReason("untrusted", True, "kind", f"{what} carries server-chosen text"),
        LabelReason("private", kind == "resource", "kind", f"{what} {'may hold' if kind == 'resource' else 'holds no'} private data"),
        LabelReason("sink", False, "kind", f"reading {what} changes nothing"),
    )
