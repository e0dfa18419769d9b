"""A session's flow state: which legs of the Rule of Two it has touched, and what it has seen.

`FlowState` is an immutable value; every function here returns a new one (pure: no clock, no
I/O), so a store can keep it anywhere (in process, Redis) and replay it. Memory is bounded per
session: the untrusted and the trusted text logs each keep at most ``max_*_bytes`` of normalized
text (plus its spaceless copy, so at most twice that), the oldest entries dropped first (each drop is counted in ``dropped``, a degradation: a
value from a dropped untrusted result is no longer traced).

Trusted text is what the session's own side said or got from tools that carry no outsider text:
the user's task (from the client, `observe_task`), the caller's arguments that carried no value
traced to an untrusted result (or that a human approved), and results of tools not labelled
``untrusted`` that result inspection did not flag.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from checkrein.canonical import digest

from .values import normalize

__all__ = ["FlowState", "ResultSeen", "Seen", "TextLog", "observe_task"]

_MAX_SOURCES = 8
_MAX_TASKS = 32


@dataclass(frozen=True, slots=True)
class Seen:
    """One remembered text: where it came from (for messages), its normalized form, and that form
    without spaces (so ``GB29 NWBK 6016...`` is found in ``gb29nwbk6016...``)."""

    source: str
    text: str
    compact: str = ""


@dataclass(frozen=True, slots=True)
class TextLog:
    """Normalized texts, newest last, at most ``max_bytes`` in all (oldest dropped first)."""

    entries: tuple[Seen, ...] = ()
    size: int = 0
    dropped: int = 0

    def add(self, source: str, norm: str, max_bytes: int) -> TextLog:
        """This log with ``norm`` appended (unless already held); a text over ``max_bytes`` keeps its start."""
        if not norm or any(e.text == norm for e in self.entries):
            return self
        data = norm.encode("utf-8")
        if len(data) > max_bytes:
            norm = data[:max_bytes].decode("utf-8", "ignore")
            norm = norm[: norm.rfind(" ") + 1] or norm
        size = len(norm.encode("utf-8"))
        entries, total, dropped = list(self.entries), self.size + size, self.dropped
        while entries and total > max_bytes:
            total -= len(entries.pop(0).text.encode("utf-8"))
            dropped += 1
        entries.append(Seen(source, norm, norm.replace(" ", "")))
        return TextLog(tuple(entries), total, dropped)

    def find(self, needle: str, compact: str = "") -> str | None:
        """The source of the newest text containing ``needle`` (a normalized value), or, when
        ``compact`` is given, containing that spaceless form; else None."""
        for e in reversed(self.entries):
            if needle in e.text or (compact and compact in e.compact):
                return e.source
        return None

    def holds(self, needle: str, compact: str = "") -> bool:
        return self.find(needle, compact) is not None


@dataclass(frozen=True, slots=True)
class ResultSeen:
    """What reached the model from one result, as result inspection left it."""

    texts: tuple[str, ...]
    """Every delivered string: text blocks and the strings of structured content."""
    flagged: bool = False
    """Result inspection flagged it (prompt injection or untrusted content)."""
    withheld: bool = False
    """The whole result was withheld: the model saw none of it, but the session is untrusted now."""


@dataclass(frozen=True, slots=True)
class FlowState:
    """One session's flow state (see the module docstring)."""

    untrusted_from: tuple[str, ...] = ()
    """The first results that made the session untrusted (``tool (call n)``); non-empty = leg A."""
    private_from: tuple[str, ...] = ()
    """The first tools that read private data; non-empty = leg B."""
    untrusted: TextLog = TextLog()
    trusted: TextLog = TextLog()
    tasks: tuple[str, ...] = ()
    """Digests of the user's task texts already recorded."""
    calls: int = 0

    @property
    def has_untrusted(self) -> bool:
        return bool(self.untrusted_from)

    @property
    def has_private(self) -> bool:
        return bool(self.private_from)

    @property
    def dropped(self) -> int:
        return self.untrusted.dropped + self.trusted.dropped

    # Explicit constructors instead of `dataclasses.replace` (which introspects the fields on
    # every call): these run after every forwarded call. Each returns ``self`` when nothing changes.

    def with_calls(self, calls: int) -> FlowState:
        return FlowState(self.untrusted_from, self.private_from, self.untrusted, self.trusted, self.tasks, calls)

    def with_untrusted(self, source: str) -> FlowState:
        sources = _add_source(self.untrusted_from, source)
        if sources is self.untrusted_from:
            return self
        return FlowState(sources, self.private_from, self.untrusted, self.trusted, self.tasks, self.calls)

    def with_private(self, source: str) -> FlowState:
        sources = _add_source(self.private_from, source)
        if sources is self.private_from:
            return self
        return FlowState(self.untrusted_from, sources, self.untrusted, self.trusted, self.tasks, self.calls)

    def trust(self, source: str, texts: Iterable[str], max_bytes: int) -> FlowState:
        log = self.trusted
        for t in texts:
            log = log.add(source, normalize(t), max_bytes)
        if log is self.trusted:
            return self
        return FlowState(self.untrusted_from, self.private_from, self.untrusted, log, self.tasks, self.calls)

    def distrust(self, source: str, texts: Iterable[str], max_bytes: int) -> FlowState:
        log = self.untrusted
        for t in texts:
            log = log.add(source, normalize(t), max_bytes)
        if log is self.untrusted:
            return self
        return FlowState(self.untrusted_from, self.private_from, log, self.trusted, self.tasks, self.calls)


def _add_source(sources: tuple[str, ...], source: str) -> tuple[str, ...]:
    if source in sources or len(sources) >= _MAX_SOURCES:
        return sources
    return (*sources, source)


def observe_task(state: FlowState, task: str, max_trusted_bytes: int) -> FlowState:
    """``state`` with the user's task text trusted (once per distinct text)."""
    key = digest(task)
    if key in state.tasks:
        return state
    state = state.trust("the user's request", [task], max_trusted_bytes)
    return replace(state, tasks=(*state.tasks, key)[-_MAX_TASKS:])
