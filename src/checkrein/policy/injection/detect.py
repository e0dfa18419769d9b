"""`detect_injection`: prompt-injection signals in tool output, combined into one verdict.

Contract: pure, total (never raises on any `str`), linear in the input. A text is flagged when the
signals inside one window of `WINDOW` characters add up to `THRESHOLD` (each rule counts once, at
its strongest; the rules of one kind add up to at most 1.0). Strong signals (a fake system marker, "ignore your previous
instructions" in any of several languages, text addressed to the AI) flag alone; weak ones
(an imperative to send something to an outside address, urgency) only together, so ordinary mail
that says "please send the invoice by Friday" is left alone. Text hidden from a human reader (HTML
and Markdown comments, CSS-hidden elements, base64 or hex runs that decode to text) is scored on
its own and counts more.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from checkrein.policy.decision import Finding

from .carriers import Signal, action_signals, encoded_regions, exfil_link_signals, hidden_regions
from .lexicon import (
    EN_FORGET_VERBS,
    EN_MODIFIERS,
    EN_NEG_FOLLOW,
    EN_NEGATIONS,
    EN_NOUNS_MEDIUM,
    EN_NOUNS_STRONG,
    EN_NOUNS_WEAK,
    EN_VERBS,
    EN_WEAK_VERBS,
    FOREIGN,
)
from .normalize import Views, normalize
from .phrase import WordFinder
from .phrases import NEEDLES
from .tasks import task_label_signals

__all__ = ["THRESHOLD", "WINDOW", "InjectionScan", "detect_injection", "scan_injection"]

THRESHOLD = 1.0
WINDOW = 1200
ANALYZER = "injection"
_MAX_EVIDENCE = 80
_MAX_HITS_PER_PHRASE = 32
_MAX_SIGNALS = 2000
_ACTIONS_MAX = 0.75  # exfil_directive 0.5 + action_directive 0.25
_VERB_TAILS = frozenset(v[-4:] for v in EN_VERBS if len(v) >= 4)
_TRIGGERS = EN_VERBS | EN_WEAK_VERBS | EN_NEG_FOLLOW | {"attention"}
_TOKEN_RE = re.compile(r"\w+(?:'\w+)*")
# The tokenizer pass below acts only on a token that is a trigger or that `_unglue` changes (one
# ending with an English verb): either way some trigger occurs in the text as a substring. A text in
# which none occurs (almost every result) skips the tokenizer. Exact: a necessary condition of both.
_ANY_TRIGGER = WordFinder(_TRIGGERS)


@dataclass(frozen=True, slots=True)
class InjectionScan:
    """The detector's full view of one text: its score and the signals behind it."""

    score: float
    signals: tuple[Signal, ...]

    @property
    def flagged(self) -> bool:
        return self.score >= THRESHOLD


def _unglue(tok: str) -> str:
    """The verb at the end of a token glued to the word before it ("usaignore" -> "ignore")."""
    if len(tok) > 7 and tok[-4:] in _VERB_TAILS:
        for k in range(4, min(len(tok) - 2, 12) + 1):
            if tok[-k:] in EN_VERBS:
                return tok[-k:]
    return tok


def _ignore_family(folded: str) -> list[Signal]:
    """English "ignore/disregard/forget ... previous ... instructions", tolerant of one typo per word
    and of the phrase being glued to the text before it."""
    out: list[Signal] = []
    if not _ANY_TRIGGER.present(folded):
        return out
    words = set(_TOKEN_RE.findall(folded))
    if words.isdisjoint(_TRIGGERS) and not any(_unglue(w) != w for w in words if len(w) > 7):
        return out
    tokens = [(_unglue(m.group()), m.start()) for m in _TOKEN_RE.finditer(folded)]
    n = len(tokens)
    for i, (tok, pos) in enumerate(tokens):
        prev = tokens[i - 1][0] if i else ""
        prev2 = tokens[i - 2][0] if i > 1 else ""
        if tok in EN_VERBS:
            if prev in EN_NEGATIONS or prev2 in EN_NEGATIONS and prev in {"to", "you", "ever"}:
                continue  # "don't forget the instructions", "do not ignore the rules"
            verb_w = 1.0
        elif tok in EN_WEAK_VERBS:
            verb_w = 0.7
        elif tok in EN_NEG_FOLLOW and (prev in EN_NEGATIONS or prev in {"longer", "stop"}):
            verb_w = 1.0
        elif tok == "attention" and prev == "no" and prev2 == "pay":
            verb_w = 1.0
        else:
            continue
        modifier = False
        best = 0.0
        end = pos
        for tok2, pos2 in tokens[i + 1 : min(n, i + 9)]:
            if tok2 in EN_MODIFIERS:
                modifier = True
            noun_w = 0.0
            if tok2 in EN_NOUNS_STRONG:
                noun_w = 1.0
            elif tok2 in EN_NOUNS_MEDIUM:
                noun_w = 0.7
            elif tok2 in EN_NOUNS_WEAK and modifier:
                noun_w = 0.5
            if noun_w:
                w = verb_w * noun_w * (1.0 if modifier else 0.6)
                if w > best:
                    best, end = w, pos2 + len(tok2)
            if tok2 in {"and", "but", "or", "then"} and not modifier:
                break
        if best < 0.8 and tok in EN_FORGET_VERBS and i + 2 < n:
            # "forget everything above", "ignore all of the above", "disregard everything you were told"
            nxt = " ".join(t for t, _ in tokens[i + 1 : i + 6])
            if re.match(
                r"(?:all|everything|anything)\b.{0,30}\b(?:above|before|prior|earlier|told|said|so far)", nxt
            ):
                best, end = 1.0, tokens[min(n - 1, i + 5)][1]
        if best:
            out.append(
                Signal(
                    "ignore_instructions", best, pos, folded[pos : max(end, pos + 1)][:_MAX_EVIDENCE], "en"
                )
            )
            if len(out) >= _MAX_HITS_PER_PHRASE:
                break
    return out


# Every verb stem of every language in one automaton: a text none of them occurs in (almost every
# result) skips the per-verb searches below. Exact: it finds a word iff some verb occurs.
_ANY_FOREIGN_VERB = WordFinder({v for _, verbs, _, _ in FOREIGN for v in verbs})


def _foreign_family(text: str) -> list[Signal]:
    """The same family in other languages: a verb stem and a noun stem within a short window."""
    out: list[Signal] = []
    ascii_only = text.isascii()
    if not _ANY_FOREIGN_VERB.present(text):
        return out
    for lang, verbs, nouns, own_negations in FOREIGN:
        negations = (*own_negations, "not ", "n't ", "never ")
        for verb in verbs:
            if ascii_only and not verb.isascii():
                continue
            start = text.find(verb)
            hits = 0
            while start != -1 and hits < 8:
                hits += 1
                before = text[max(0, start - 12) : start]
                negated = any(before.endswith(n) or before.endswith(n.strip()) for n in negations)
                if lang == "de":
                    negated = negated or "nicht" in text[start : start + len(verb) + 14]
                lo, hi = max(0, start - 40), start + len(verb) + 60
                window = text[lo:hi]
                if not negated and any(n in window for n in nouns):
                    out.append(
                        Signal(
                            "ignore_instructions", 1.0, start, f"[{lang}] " + text[start:hi][:60], "foreign"
                        )
                    )
                    break
                start = text.find(verb, start + 1)
    return out


def _quoted(view: str, start: int, end: int) -> bool:
    """Whether ``view[start:end]`` is a whole string literal (same quote right before and after)."""
    return 0 < start and end < len(view) and view[start - 1] in "\"'`" and view[end] == view[start - 1]


def _phrase_signals(views: Views) -> list[Signal]:
    out: list[Signal] = []
    for ph in NEEDLES.candidates(views.text, views.folded):
        view = views.folded if ph.view == "folded" else views.text
        for k, m in enumerate(ph.regex.finditer(view)):
            weight = ph.weight
            if ph.kind == "role_marker" and _quoted(view, m.start(), m.end()):
                weight /= 2  # a string literal in code ("<|endoftext|>" in a tokenizer), not a turn
            out.append(Signal(ph.kind, weight, m.start(), m.group()[:_MAX_EVIDENCE], ph.rule))
            if k + 1 >= _MAX_HITS_PER_PHRASE:
                break
    return out


def _content_signals(views: Views, *, actions: bool = True) -> list[Signal]:
    signals = _phrase_signals(views)
    signals += _ignore_family(views.folded)
    signals += _foreign_family(views.text)
    signals += exfil_link_signals(views.text)
    signals += task_label_signals(views.text)
    if actions:
        signals += action_signals(views.text)
    return signals


def _window_score(signals: list[Signal]) -> tuple[float, list[Signal]]:
    """Each rule counts once (at its strongest); the rules of one kind add up to at most 1.0; the
    kinds add up."""
    per_rule: dict[tuple[str, str], Signal] = {}
    for s in signals:
        key = (s.kind, s.rule)
        if key not in per_rule or s.weight > per_rule[key].weight:
            per_rule[key] = s
    per_kind: dict[str, float] = {}
    for (kind, _), s in per_rule.items():
        per_kind[kind] = min(1.0, per_kind.get(kind, 0.0) + s.weight)
    return sum(per_kind.values()), list(per_rule.values())


def _best_window(signals: list[Signal]) -> tuple[float, list[Signal]]:
    """Highest score of any window of WINDOW characters (see `_window_score`)."""
    ordered = sorted(signals, key=lambda s: s.pos)[:_MAX_SIGNALS]
    best, best_set = 0.0, []
    lo = 0
    for hi in range(len(ordered)):
        while ordered[hi].pos - ordered[lo].pos > WINDOW:
            lo += 1
        score, used = _window_score(ordered[lo : hi + 1])
        if score > best:
            best, best_set = score, used
    return best, best_set


def scan_injection(text: str) -> InjectionScan:
    """Score ``text`` and return the signals seen; `detect_injection` is the verdict.

    The score is exact when it reaches `THRESHOLD`; below it, weak action signals may be left out.
    """
    views = normalize(text)
    signals = _content_signals(views, actions=False)
    hidden = views.hidden
    if hidden.tag_text:
        inner = _content_signals(normalize(hidden.tag_text))
        signals.append(
            Signal("hidden_text", 1.0, 0, "unicode tag characters: " + hidden.tag_text[:40], "tags")
        )
        signals += inner
    if hidden.invisible_in_words >= 3:
        signals.append(
            Signal(
                "hidden_text", 0.5, 0, f"{hidden.invisible_in_words} zero-width characters inside words", "zw"
            )
        )
    if hidden.bidi:
        signals.append(
            Signal("hidden_text", 0.3, 0, f"{hidden.bidi} bidirectional control characters", "bidi")
        )
    for pos, inner_text in (*hidden_regions(views.text), *encoded_regions(text)):
        inner = _content_signals(normalize(inner_text))
        inner_score, _ = _best_window(inner)
        if inner_score >= 0.25:
            # An instruction someone took care to hide from the human reader.
            signals.append(
                Signal("hidden_text", 0.5 + inner_score, pos, inner_text.strip()[:_MAX_EVIDENCE], "region")
            )
    score, _ = _best_window(signals)
    if score >= THRESHOLD - _ACTIONS_MAX:
        # Action directives are weak (at most _ACTIONS_MAX together) and the costliest to find:
        # look for them only when they could tip the verdict.
        signals += action_signals(views.text)
        score, _ = _best_window(signals)
    return InjectionScan(score=score, signals=tuple(signals))


def detect_injection(text: str) -> list[Finding]:
    """Findings (analyzer ``injection``) when ``text`` reads as a prompt injection, else ``[]``.

    Each finding has ``kind`` (`ignore_instructions`, `role_marker`, `turn_marker`,
    `directive_to_model`, `tool_directive`, `hidden_text`, `exfil_link`, `exfil_directive`,
    `action_directive`, `task_directive`, `urgency`), ``path`` ``""`` and a short evidence excerpt of the
    normalized text. Only the signals of the strongest window are reported.
    """
    scan = scan_injection(text)
    if not scan.flagged:
        return []
    _, window = _best_window(list(scan.signals))
    return [
        Finding(
            analyzer=ANALYZER,
            kind=s.kind,
            path="",
            message=f"prompt-injection signal {s.kind} (weight {s.weight:.2f}, score {scan.score:.2f})",
            evidence=s.evidence,
            severity="high" if s.weight >= THRESHOLD else "medium" if s.weight >= 0.5 else "low",
        )
        for s in sorted(window, key=lambda s: -s.weight)
    ]
