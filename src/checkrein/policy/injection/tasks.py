"""Task labels: a short imperative planted in data under a `TODO:` / `Task:` / `Action required:` label.

The label alone is ordinary (meeting notes have "Action items:"), and so is an imperative alone
("please send the invoice by Friday"). Together, at the start of a line, sentence or quoted field,
they read as a task handed to whoever reads the text. Two halves of weight 0.5 each: the task is
planted after other content (a field, a row, a paragraph; not a note that opens with its own to-do),
and it names where something should go or what it should touch (an e-mail address, IBAN, URL,
account, amount, an object by ID, a credential, or "the user" in the third person, which only an
assistant is told about), or it dictates the reader's own answer ("say that ...", "tell the user
...", "recommend X to the user", "respond that ...": the target is what the assistant tells its user, a goal
reached with no tool call at all). Both together flag alone.
Labels and verbs are listed in several languages; the target test is language-independent.
"""

from __future__ import annotations

import re

from .carriers import _EXTERNAL_RE, Signal
from .phrase import WordFinder

__all__ = ["task_label_signals"]

_LABELS = (
    "to do|new task|task|action required|required action|action item|action needed|"
    "assignment|aufgabe|zu erledigen|tarea|pendiente|tâche|à faire|a fare|da fare|compito|"
    "tarefa|a fazer|zadanie|taak|uppgift|opgave|tehtävä|görev|задача|задание|сделать|任务|待办|待辦|タスク|"
    "할 일|작업"
).split("|")
_LABEL_RE = re.compile(r"(?:todo|to-do|(?<![\w-])(?:" + "|".join(_LABELS) + r"))s?\s?[:：]\s*")
# Every label match holds one of these words: a text with none (one automaton pass) has no label.
_ANY_LABEL = WordFinder(("todo", "to-do", *_LABELS))
# Where a label starts: the text, a line, a sentence, a quoted field, a bullet or a "key: " prefix.
_BOUNDARY = tuple("\n'\"([-*•>#.!?:,;|“«「")
# A `todo:` glued to the word before it ("...USATODO: send") is still a label: no word ends that way.
_GLUED = ("todo", "to-do")
_POLITE = frozenset(
    {"please", "pls", "kindly", "now", "immediately", "urgently", "asap", "bitte", "sofort", "svp",
     "favor", "por", "per", "favore", "s'il", "vous", "plaît", "plait", "пожалуйста", "請", "请"}
)  # fmt: skip
# Imperatives that act on the world: English as whole words, other languages by stem so that
# inflection (sende/sendet, envía/envíe) matches.
_EN_VERBS = frozenset(
    {"send", "forward", "email", "e-mail", "mail", "transfer", "wire", "pay", "post", "upload", "share",
     "delete", "remove", "erase", "wipe", "invite", "grant", "change", "modify", "reset", "update", "book",
     "reserve", "create", "add", "schedule", "publish", "leak", "exfiltrate", "copy", "concatenate",
     "give", "provide", "move", "visit", "open", "click", "download", "install", "run", "execute", "set",
     "cancel", "approve", "sign", "buy", "purchase", "order", "submit", "reply", "write", "tell",
     "say", "state", "claim", "insist", "respond", "answer", "recommend", "mention", "explain"}
)  # fmt: skip
_STEMS = (
    # de, fr, es, it, pt, nl, pl, ru
    "schick", "sende", "überweis", "leite", "lösch", "entfern", "änder", "erstell", "zahl", "bezahl",
    "teile", "buche", "envoi", "envoy", "transfér", "transfier", "transfira", "supprim", "efface", "modifi",
    "changez", "crée", "créez", "crear", "créalo", "cree",
    "payez", "paie", "partag", "réserv", "reenv", "envía", "envíe", "envia", "envie", "elimin", "borra",
    "cambi", "paga", "compart", "reserv", "invia", "invii", "inoltr", "trasfer", "cancell",
    "condivid", "prenot", "encaminh", "exclua", "apague", "altere", "crie", "pague", "stuur", "verwijder",
    "wijzig", "betaal", "wyślij", "przelej", "usuń", "zmień", "отправ", "перевед", "переш", "удал",
    "измен", "созда", "оплат",
)  # fmt: skip
_WORD_RE = re.compile(r"[^\s,;:.!?'\"()]+")
_TARGET_RE = re.compile(
    _EXTERNAL_RE.pattern + "|"  # e-mail address, IBAN, link
    r"\b\d{8,}\b|"  # account or card number
    r"[$€£¥₹]\s?\d|\d\s?(?:[$€£¥₹]|usd|eur|gbp|dollars?|euros?)\b|"  # amount
    r"\bids?\s?[:#]?\s?['\"]?\d|"  # an object named by ID
    r"password|passcode|security code|verification code|api key|token|credential|"  # credentials
    r"\bthe user'?s?\b|\bof the user\b"  # the reader is told about "the user": an assistant
)
# The task dictates what the reader says to its user: a speech verb with a content clause ("say
# that", "state:"), or addressed to the user or the reader ("tell the user", "answer me",
# "recommend X to the user"). "Tell Bob that ..." names someone else and is left to the other half.
_POLITE_RE = r"(?:(?:please|pls|kindly|now|always|also|just)\s+)*"
_ANSWER_RE = re.compile(
    _POLITE_RE + r"(?:"
    r"(?:say|state|claim|insist|respond|reply|answer)\s*(?:that\b|[:：])|(?:write|recommend)\s+that\b|"
    r"(?:say|state|claim|tell|respond|reply|answer|explain|write|mention|recommend)\s+(?:to\s+)?"
    r"(?:the\s+user|the\s+reader|the\s+customer|me|us)\b|"
    r"(?:recommend|suggest)\b[^.\n]{0,80}?\bto\s+(?:the\s+user|the\s+reader|the\s+customer|me|us)\b|"
    # de, fr, es/pt, it, nl, pl, ru: "sag(e), dass", "dites que", "di/diga que", "dì/dica che", ...
    r"(?:sag|sage|sagen\s+sie)\s*,?\s*dass\b|(?:dis|dites)\s+que\b|(?:di|diga|digan)\s+que\b|"
    r"(?:dì|di'|dica|dite)\s+che\b|zeg\s+dat\b|powiedz\s*,?\s*że\b|скажи(?:те)?\s*,?\s*что\b"
    r")"
)
_TAIL = 200


def _imperative(text: str, pos: int) -> bool:
    """The action verb starting the task at ``pos`` (after politeness words), if there is one."""
    for k, m in enumerate(_WORD_RE.finditer(text, pos, pos + 80)):
        word = m.group()
        if word in _POLITE and k < 3:
            continue
        return k < 4 and (word in _EN_VERBS or word.startswith(_STEMS))
    return False


def task_label_signals(text: str) -> list[Signal]:
    """`task_directive` signals in ``text`` (a normalized, casefolded view)."""
    out: list[Signal] = []
    if ":" not in text and "：" not in text:
        return out  # every label ends with a colon (`_LABEL_RE`)
    if not _ANY_LABEL.present(text):
        return out
    opening = len(text) - len(text.lstrip(" \n'\""))
    for m in _LABEL_RE.finditer(text):
        before = text[max(0, m.start() - 2) : m.start()].rstrip(" ")
        if before and not before.endswith(_BOUNDARY) and not m.group().startswith(_GLUED):
            continue  # mid-sentence ("things to do: ..."), not a label
        tail = text[m.end() : m.end() + _TAIL]
        answer = _ANSWER_RE.match(tail) is not None
        if not (answer or _imperative(text, m.end())):
            continue
        # A text that opens with its label is someone's own to-do note (or a `<!-- TODO: -->` code
        # comment); one planted after other content (a field, a row, a paragraph) is handed to
        # whoever reads that content.
        planted = m.start() > opening
        aimed = answer or _TARGET_RE.search(tail) is not None
        weight = (0.5 if planted else 0.0) + (0.5 if aimed else 0.0)
        if not weight:
            continue
        evidence = text[m.start() : m.end() + 70].strip()
        out.append(Signal("task_directive", weight, m.start(), evidence, "task_label"))
        if len(out) >= 32:
            break
    return out
