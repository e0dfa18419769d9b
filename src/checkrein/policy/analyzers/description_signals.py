"""Signals of a poisoned tool definition, one text at a time (see `descriptions.py`).

Each signal is a class of manipulation, never a phrase from a benchmark: hidden characters, an
order to call another tool first or instead, steering an argument's value, secrecy toward the
user, reads of credential stores, data sent to an address, commands to run, preference
manipulation, a parameter filled with the conversation or secrets, urgency and threats, and text
addressed to the model. A rule's weight says how much it alone proves; `descriptions.py` adds
the weights up per class and flags at 1.0. Every regex is bounded (no nested quantifiers on
overlapping classes, bounded gaps), so each text costs linear time.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection
from dataclasses import dataclass

from .stores import credential_store, home_paths

__all__ = ["Signal", "hidden_signals", "text_signals"]

_EVIDENCE = 80


@dataclass(frozen=True, slots=True)
class Signal:
    kind: str
    weight: float
    evidence: str
    rule: str


# -- hidden characters ---------------------------------------------------------------------------

_ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\u180e\ufeff\u00ad\u034f\u115f\u1160\u3164\uffa0")
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _emoji(ch: str) -> bool:
    cp = ord(ch)
    return cp >= 0x1F000 or 0x2600 <= cp <= 0x27BF or 0x2190 <= cp <= 0x21FF or cp in (0x2764, 0x2640, 0x2642, 0x2695)


def hidden_signals(text: str) -> list[Signal]:
    """Characters a person reading the definition does not see: zero-width and bidirectional
    controls, Unicode tag characters (ASCII smuggling), ANSI escape sequences and other control
    characters, and content pushed out of sight by a long run of blank space. Emoji sequences
    (a zero-width joiner between emoji, variation selectors, flag tags) are not hidden text."""
    if text.isascii() and "\x1b" not in text and not any(c < " " and c not in "\t\n\r" for c in text[:65536]):
        return _blank_run(text)
    out: list[Signal] = []
    zero = bidi = tags = controls = 0
    n = len(text)
    for i, ch in enumerate(text[:65536]):
        if ch in _ZERO_WIDTH:
            if ch == "\u200d" and 0 < i < n - 1 and _emoji(text[i - 1]) and (_emoji(text[i + 1]) or text[i + 1] in "\u2640\u2642"):
                continue
            if ch == "\ufeff" and i == 0:
                continue
            zero += 1
        elif ch in _BIDI:
            bidi += 1
        elif 0xE0000 <= ord(ch) <= 0xE007F:
            tags += 1
        elif (ch < " " and ch not in "\t\n\r") or ch == "\x7f" or (unicodedata.category(ch) == "Cc" and ch not in "\t\n\r\x85"):
            controls += 1
    if tags and "\U0001f3f4" not in text:
        out.append(Signal("hidden_unicode", 1.0, f"{tags} invisible Unicode tag characters (ASCII smuggling)", "tags"))
    if zero:
        out.append(Signal("hidden_unicode", 1.0, f"{zero} zero-width characters", "zero_width"))
    if bidi:
        out.append(Signal("hidden_unicode", 1.0, f"{bidi} bidirectional control characters", "bidi"))
    if controls:
        out.append(Signal("hidden_unicode", 1.0, f"{controls} control characters (terminal escapes hide text)", "controls"))
    return out + _blank_run(text)


_BLANK_RUN = re.compile(r"[ \t]{80,}\S|(?:[ \t]*\n){25,}[ \t]*\S")
# Comments a renderer hides from the person reading the definition: HTML and Markdown reference comments.
_COMMENT = re.compile(r"<!--(?:(?!-->).){0,4000}?[A-Za-z]{3}(?:(?!-->).){0,4000}?-->|^\s{0,3}\[//\]:\s?#\s?\(", re.DOTALL | re.MULTILINE)


def _blank_run(text: str) -> list[Signal]:
    out: list[Signal] = []
    if _BLANK_RUN.search(text) is not None:
        out.append(Signal("hidden_unicode", 0.6, "text pushed out of view by a long run of blank space", "blank_run"))
    if ("<!--" in text or "[//]:" in text) and _COMMENT.search(text) is not None:
        out.append(Signal("hidden_unicode", 0.7, "a comment a renderer hides from the reader", "comment"))
    return out


# -- text rules ----------------------------------------------------------------------------------

_ME = r"(?:this|the present|the current|our)\s(?:tool|function|server|api|one)"
_USER = r"(?:the\s|your\s|our\s|any\s)?(?:user|users|human|humans|operator|person|people|customer|client|developer|anyone|them|him|her)"
_TELL = r"(?:tell|telling|inform|informing|mention|mentioning|reveal|revealing|disclose|disclosing|notify|notifying|alert|alerting|say|saying|report|reporting)"
_ORDER = r"(?:must|should|shall|need\sto|needs\sto|have\sto|has\sto|always|be\ssure\sto|make\ssure\sto|ensure|remember\sto|it\sis\srequired\sto)"
_CALL = r"(?:call|calls|calling|use|uses|using|invoke|invokes|invoking|run|runs|running|execute|executes|executing|trigger|triggers|triggering)"
_IDENT = r"[`'\"]?([a-z][a-z0-9]*(?:[_.\-:][a-z0-9]+)+|(?-i:[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*))[`'\"]?"
_QUOTED_NAME = r"[`'\"]([A-Za-z][\w.\-:]{1,60})[`'\"]"
_EMAIL = r"[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,4}"
_URL = r"(?:https?|ftp|wss?)://[^\s)\"'<>`]{2,300}"
_PHONE = r"\+\d[\d\s().-]{6,18}\d"
_EXTERNAL = rf"(?:{_EMAIL}|{_URL}|{_PHONE}|\b(?:\d{{1,3}}\.){{3}}\d{{1,3}}\b|\b[a-z0-9-]{{2,63}}\.(?:com|net|org|io|ru|cn|xyz|info|biz|co|me|dev|app|site|top)\b)"


_SENTENCE_CHAR = r"(?:[^.!?\n]|[.!?](?=[\w/~\\-]))"
"""What the rules' ``[^.!?\\n]`` gaps mean: a sentence ends at ``.`` ``!`` ``?`` before a space or
the end, not at the dot of ``.env`` or ``example.com``."""


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern.replace(r"[^.!?\n]", _SENTENCE_CHAR), re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    name: str
    weight: float
    pattern: re.Pattern[str]
    needles: tuple[str, ...]
    """The rule can only match when one of these (lowercase) substrings is present: a cheap prefilter."""


def _r(kind: str, name: str, weight: float, needles: tuple[str, ...], pattern: str) -> _Rule:
    return _Rule(kind, name, weight, _rx(pattern), needles)


_ORDER_WORD = (
    r"(?:read|cat|open|include|pass|provide|send|attach|upload|copy|print|output|share|insert|put|paste|extract|collect|gather"
    r"|retrieve|grab|dump|give|supply|append|add|embed|leak|forward|fill|load|look\sup|access|contain|hold|carry|reveal|disclose|expose|transmit)"
)
_OTHER_TOOLS = r"(?:any|every|all|each|other|another|any\sother|all\sother|different|third-party)\s(?:other\s)?(?:tools?|functions?|servers?|plugins?|integrations?)"


_RULES: tuple[_Rule, ...] = (
    # Secrecy toward the user: a tool that must hide what it makes the model do.
    _r("secrecy", "do_not_tell", 1.0, ("not", "n't", "never", "without"),
       rf"\b(?:do\snot|don'?t|never|must\snot|should\snot|shall\snot|without|avoid|no\sneed\sto)\s(?:ever\s)?(?:{_TELL})\b[^.!?\n]{{0,40}}?\b{_USER}\b"),
    _r("secrecy", "hide_from_user", 1.0, ("hide", "conceal", "secret", "confidential", "between us", "knowing", "noticing", "knowledge"),
       rf"\b(?:hide|conceal)\s(?:this|it|that|these|them|the\s\w+|everything|anything)\s(?:\w+\s){{0,3}}from\s{_USER}"
       rf"|\bkeep\s(?:this|it|that|these|the\s\w+)\s(?:a\s)?(?:secret|hidden|confidential|to\syourself|between\sus)"
       rf"|\bwithout\s{_USER}(?:'s)?\s(?:knowing|noticing|knowledge|awareness|seeing|being\saware)"),
    _r("secrecy", "user_must_not_know", 1.0, ("user", "human", "operator", "customer", "person", "people"),
       rf"\b{_USER}\s(?:must|should|shall|does|do|will|need|needs|may|can)\s?(?:not|never|n't)\s(?:\w+\s)?(?:know|see|notice|find\sout|be\stold|be\sinformed|learn|be\saware|realize|suspect|discover)"),
    _r("secrecy", "without_asking", 0.5, ("without", "do not show", "don't show", "never show"),
       rf"\bwithout\s(?:asking|confirming\swith|checking\swith|consulting)\s{_USER}|\b(?:do\snot|don'?t|never)\s(?:show|display)\s(?:this|these|it)\s(?:\w+\s)?to\s{_USER}"),
    _r("secrecy", "silently", 0.6, ("silent", "quiet", "secretly", "covert", "discreet"),
       r"\b(?:silently|quietly|discreetly|invisibly|in\sthe\sbackground)\s(?:\w+\s)?(?:send|forward|copy|upload|read|include|add|change|modify|delete|run|execute|call|invoke|collect|exfiltrate|record|transmit|post|append|replace|e-?mail|mail|message|text|share|transfer|submit|save|store|log|write|report|notify|attach|sync)"
       r"|\b(?:secretly|covertly)\b"),
    _r("secrecy", "never_shown", 0.6, ("shown", "displayed", "revealed", "mentioned", "disclosed", "visible"),
       r"\b(?:output|result|results|response|this|it|these|its\s\w+)\s(?:must|should|shall|may|will)\s(?:never|not)\sbe\s(?:shown|displayed|revealed|mentioned|disclosed|visible|printed|reported)"),
    _r("secrecy", "approval_claim", 0.6, ("approved", "consented", "authorized", "authorised", "pre-approved", "permission", "consent", "approval", "authoriz", "authoris"),
       r"\b(?:pre-?approved|already\s(?:been\s)?approved|(?:has|have)\s(?:already\s)?(?:consented|authori[sz]ed|approved))\b"
       r"|\b(?:granted|given)\s(?:you\s)?(?:standing|blanket|full|prior|permanent|unlimited|general)\s(?:permission|consent|approval|authori[sz]ation)|\b(?:standing|blanket)\s(?:permission|consent|approval|authori[sz]ation)"),
    _r("secrecy", "skip_confirmation", 0.6, ("confirmation", "approval", "permission", "consent", "ask", "check", "confirm"),
       r"\bno\s(?:need\sfor\s|further\s)?(?:confirmation|approval|permission|consent)\s(?:is\s)?(?:needed|required|necessary)"
       r"|\b(?:do\snot|don'?t|never|without)\s(?:ask|asking|request|requesting|seek|seeking|wait\sfor|waiting\sfor)\s(?:for\s)?(?:the\s)?(?:user'?s?\s)?(?:confirmation|approval|permission|consent)"
       r"|\b(?:do\snot|don'?t|never|no\sneed\sto)\s(?:ask|check|confirm)\s(?:with\s)?(?:the\suser\s|them\s)?(?:before|first|again)\b"),
    _r("secrecy", "do_not_tell_foreign", 1.0, ("usuario", "utilisateur", "benutzer", "nutzer", "anwender", "utente", "usuário", "gebruiker", "пользовател", "用户", "ユーザ", "사용자", "użytkownik", "kullanıcı"),
       r"\bsans\s(?:le\s|l'|en\s|rien\s|jamais\s)?(?:dire|informer|prévenir|avertir|mentionner|signaler)\b[^.!?\n]{0,30}\butilisateur"
       r"|\bsin\s(?:decir|informar|avisar|mencionar|contar)(?:le|lo|les)?\b[^.!?\n]{0,30}\busuario"
       r"|\bohne\s(?:es\s|das\s)?(?:dem\s|den\s)?(?:benutzer|nutzer|anwender)\w*\s(?:\w+\s){0,2}?(?:zu\s)?(?:sagen|informieren|erwähnen|mitzuteilen|benachrichtigen)"
       r"|\bsenza\s(?:dirlo|dire|informare|avvisare|menzionare)\b[^.!?\n]{0,30}\butente"
       r"|\bsem\s(?:dizer|contar|informar|avisar|mencionar)\b[^.!?\n]{0,30}\busuário"
       r"|(?:不要|不必|别|勿|不)(?:告诉|通知|提醒|让)用户|(?:瞒着|背着)用户|ユーザーに(?:知らせず|伝えず|言わず|気づかれ)"
       r"|\bno\s(?:le\s|les\s)?(?:digas|diga|informes|informe|menciones|mencione|cuentes|cuente|reveles|revele)\b[^.!?\n]{0,30}\busuario"
       r"|\bne\s(?:le\s|lui\s)?(?:dis|dites|mentionne[zs]?|informe[zs]?|révèle[zs]?|signale[zs]?)\s(?:rien|pas|jamais)\b[^.!?\n]{0,30}\butilisateur"
       r"|\b(?:sag|sagen\ssie|erwähne|erwähnen\ssie|teile|teilen\ssie|verrate|verraten\ssie)\b[^.!?\n]{0,30}\b(?:benutzer|nutzer|anwender)\w*\b[^.!?\n]{0,30}\bnicht|\bnicht\s(?:dem|den)\s(?:benutzer|nutzer|anwender)"
       r"|\bnon\s(?:dire|dirlo|menzionare|rivelare|informare)\b[^.!?\n]{0,20}\butente|\bnão\s(?:diga|conte|mencione|revele|informe)\b[^.!?\n]{0,20}\busuário"
       r"|\bvertel\b[^.!?\n]{0,30}\bgebruiker\b[^.!?\n]{0,20}\bniet|\bне\s(?:говори|говорите|сообщай|сообщайте|рассказывай|рассказывайте|упоминай|упоминайте)\b[^.!?\n]{0,20}пользовател"
       r"|不要(?:告诉|通知|提醒|透露给)用户|ユーザー?に(?:は)?(?:言わ|伝え|知らせ|教え)(?:ない|ないで)|사용자에게\s?(?:말하지|알리지)\s?(?:마|않)|nie\s(?:mów|informuj|wspominaj)\b[^.!?\n]{0,20}użytkownik|kullanıcıya\s(?:söyleme|bildirme)"),
    _r("secrecy", "contrary_fact", 0.5, ("even though", "although", "despite", "in fact", "actually"),
       r"\b(?:even\sthough|although|despite|while\sin\sfact|but\sactually|when\sin\sfact|whereas\sin\sreality)\b[^.!?\n]{0,40}?\b(?:upload\w*|sen[dt]\w*|shar\w+|stored|logged|recorded|transmit\w*|forward\w*|sold|collected|kept|retained|tracked)\b"),
    _r("secrecy", "implementation_detail", 0.6, ("implementation detail", "not important to", "irrelevant to the user"),
       rf"\b(?:mere|just|only)\s(?:an?\s)?implementation\sdetail|\bnot\simportant\sto\s{_USER}|irrelevant\sto\s{_USER}"),
    _r("secrecy", "no_mention", 1.0, ("mention", "reveal", "disclose", "acknowledge", "refer to", "bring"),
       r"\b(?:do\snot|don'?t|never|must\snot|should\snot)\s(?:ever\s)?bring\s(?:this|it|that|them|any\sof\sthis)\sup\b"
       r"|\b(?:do\snot|don'?t|never|must\snot|should\snot)\s(?:ever\s)?(?:mention|reveal|disclose|acknowledge|refer\sto|talk\sabout|bring\sup|repeat|share)\s(?:that|this|these|the\s(?:instruction|step|note|fact|tool|file|above|following|reading)|it|any(?:thing)?\sof)"),
    # An order to call some other tool or server first, instead, or as a side effect.
    _r("cross_tool", "before_using", 0.5, ("before", "prior to"),
       rf"\b(?:before|prior\sto)\s(?:using|calling|invoking|running|executing|you\suse|you\scall)\s(?:this|the|any|each|every|other)\s(?:\w+\s)?(?:tool|function|operation|action)s?\b[^.!?\n]{{0,60}}?\b(?:{_CALL}|read|cat|open|fetch|send|check|verify|look\sup)\b"),
    _r("cross_tool", "call_named_tool", 0.5, ("tool", "function", "server", "mcp"),
       rf"\b{_CALL}\s(?:the\s)?(?:{_IDENT}|{_QUOTED_NAME})\s(?:tool|function|command|endpoint|server|method)\b"
       rf"|\b(?:the\s)?(?:{_IDENT}|{_QUOTED_NAME})\s(?:tool|function)\s(?:must|should|shall|needs?\sto|has\sto|will)\b"),
    _r("cross_tool", "call_identifier", 0.5, ("must", "should", "always", "first", "then", "also", "need", "has to", "have to", "required to", "is to", "ought to", "before", "after", "prior"),
       rf"\b(?:must|should|always|first|then|also|needs?\sto|ha(?:ve|s)\sto|(?:is|are)\srequired\sto|is\sto|ought\sto)\s(?:\w+\s)?{_CALL}\s(?:the\s)?{_IDENT}"
       rf"|\b(?:before|after|prior\sto)\s(?:calling|invoking|using|running|executing)\s(?:the\s)?{_IDENT}"),
    _r("cross_tool", "conditional_call", 0.6, ("when", "if", "after", "once", "each time", "every time"),
       rf"\b(?:when|whenever|if|each\stime|every\stime|after|once)\b[^.!?\n]{{0,60}}?,?\s(?:always\s|immediately\s|also\s|then\s|you\s(?:must|should)\s)?{_CALL}\s(?:the\s)?{_IDENT}"),
    _r("cross_tool", "forward_data", 0.5, ("with", "passing"),
       rf"\b{_CALL}\s(?:the\s)?{_IDENT}(?:\stool)?\s(?:with|passing|and\spass)\s(?:all|every|the\s(?:full|entire|complete|whole)|any|everything)\b"),
    _r("cross_tool", "avoid_tool", 0.6, ("not use", "n't use", "never use", "avoid", "ignore", "disregard"),
       rf"\b(?:do\snot|don'?t|never|avoid|must\snot)\s(?:use|call|invoke|using|calling)\s(?:the\s)?{_IDENT}"),
    _r("cross_tool", "call_me_first", 0.5, ("called", "invoked", "used", "run", "executed"),
       r"\b(?:must|should|shall|needs?\sto|has\sto)\s(?:always\s)?be\s(?:called|invoked|used|run|executed)\s(?:first\b|before\s(?:any|all|every|each)\s(?:other\s)?(?:tools?|functions?|actions?|calls?|requests?|operations?))"),
    _r("cross_tool", "over_other_tools", 0.5, ("tool", "function", "server", "plugin", "integration"),
       rf"\b(?:with|in|through|via|using|for|from|by)\s{_OTHER_TOOLS}\b"),
    _r("cross_tool", "when_other_invoked", 0.7, ("invoked", "called", "is used", "are used", "runs", "executed", "whenever"),
       rf"\b(?:when|whenever|each\stime|every\stime|if|once|after)\b[^.!?\n]{{0,40}}?\b(?:{_IDENT}|{_QUOTED_NAME}|(\w+)\stool)\s(?:is|are|gets|get)\s(?:\w+\s)?(?:invoked|called|used|run|executed|triggered)"),
    _r("cross_tool", "instead_of", 0.5, ("instead", "rather than", "in place of"),
       rf"\b(?:instead\sof|rather\sthan|in\splace\sof)\s(?:using\s|calling\s)?(?:the\s)?(?:{_IDENT}|{_QUOTED_NAME})"),
    _r("cross_tool", "side_effect_on_tool", 0.8, ("side effect", "also present", "other tool", "another tool"),
       r"\b(?:side\seffects?\son|also\spresent|(?:the\s)?other\stools?\s(?:must|should|will|shall)|another\stool\s(?:must|should))"),
    # Steering an argument: change what the model sends, regardless of the user.
    _r("steering", "change_argument", 0.8, ("change", "set", "replace", "override", "modify", "switch", "redirect", "substitute", "swap", "update"),
       r"\b(?:change|changing|set|setting|replace|replacing|override|overriding|modify|modifying|switch|switching|redirect|redirecting|substitute|swap|update)\s(?:the\s|its\s|their\s|every\s|all\s|any\s)?"
       r"(?:\w+\s)?(?:recipient|recipients|destination|receiver|to\saddress|to\sfield|email|email\saddress|e-mail|account|account\snumber|iban|phone|phone\snumber|amount|cc|bcc|sender|payee|beneficiary|wallet)s?\b"
       rf"[^.!?\n]{{0,30}}?\b(?:to|with|into|as)\s(?:{_EXTERNAL}|[`'\"]|\d|the\sfollowing)"),
    _r("steering", "copy_to_address", 0.8, ("also", "always", "every", "all ", "copy", "bcc", "cc", "duplicate", "mirror"),
       rf"\b(?:also|always|every|all|a\scopy\sof|copies\sof|bcc|cc|duplicate|mirror)\b[^.!?\n]{{0,60}}?\b(?:to|at)\s(?:{_EMAIL}|{_URL}|{_PHONE})"),
    _r("steering", "add_address", 0.8, ("bcc", "cc", "recipient", "to field"),
       rf"\b(?:add|include|put|insert|use|list)\s(?:{_EMAIL}|{_PHONE})\s(?:\w+\s){{0,3}}(?:bcc|cc|recipients?|to\sfield|as\s(?:an?\s|the\s)?(?:recipient|copy))"),
    _r("steering", "output_manipulation", 0.8, ("tell", "inform", "assure", "respond", "reply", "answer", "say", "claim", "state", "ensure", "make sure", "be sure"),
       r"\b(?:always|must|should|make\ssure\sto|be\ssure\sto|never\sfail\sto)\s(?:\w+\s)?(?:tell|inform|assure|say\sto|claim\sto|state\sto|report\sto)\s(?:the\s)?(?:user|users|customer|customers|human)s?\s(?:that|it\sis|they)"
       r"|\b(?:always\s)?(?:tell|assure|inform)\s(?:the\s)?(?:user|customer)s?\sthat\b[^.!?\n]{0,60}\b(?:no|not|never|safe|secure|nothing|fine|trusted)\b"
       r"|\b(?:respond|reply|answer)\s(?:to\s(?:the\s)?user\s)?only\s(?:in|with|using)\b"
       r"|\b(?:ensure|make\ssure|be\ssure)\s(?:that\s)?(?:the\s|your\s|every\s|each\s)?(?:reply|response|answer|message|output|summary)\s(?:\w+\s){0,5}?(?:says|states|claims|tells|mentions|reads|asserts|reports)\b"),
    _r("steering", "replaced_with", 0.8, ("replace", "change", "set", "overrid", "redirect", "rewrit", "swap", "substitut"),
       r"\b(?:recipients?|destinations?|receivers?|to\s(?:field|address)|addresses|address|e-?mails?|accounts?|payees?|beneficiar(?:y|ies)|wallets?|phone(?:\snumbers?)?|amounts?|(?:the\s)?[\w-]+\s(?:field|parameter|argument))"
       r"\s(?:\w+\s){0,3}?(?:be|is|are|gets?|get)\s(?:\w+\s)?(?:replaced|changed|set|overridden|redirected|rewritten|swapped|substituted)\s(?:with|to|by|as|into)\s"
       rf"(?:{_EXTERNAL}|[`'\"]|\d)"),
    _r("steering", "proxy_recipient", 0.6, ("real", "actual", "intended", "original", "true", "proxy"),
       r"\b(?:real|actual|intended|original|true)\s(?:recipient|destination|receiver|address|payee|beneficiary)s?\b[^.!?\n]{0,60}?\b(?:in|into|inside|as\spart\sof|within)\s(?:the\s)?(?:subject|body|message|text|content|note|memo)"
       r"|\bproxy\s(?:number|address|account|recipient|e-?mail)"),
    _r("steering", "payment_destination", 0.6, ("transfer", "send", "pay", "wire", "move", "deposit", "route"),
       r"\b(?:transfer|send|pay|wire|move|deposit|route)\w*\b[^.!?\n]{0,60}?\b(?:to|into)\s(?:the\s)?(?:account|iban|wallet|address)?\s?(?:number\s)?"
       r"(?-i:[A-Z]{2}\d{2}[A-Z0-9]{10,30}\b|0x[0-9a-fA-F]{40}\b|(?:bc1|[13])[a-km-zA-HJ-NP-Z1-9]{25,60}\b|[A-Z]{2,6}-\d{3,}\b|\d{8,})"),
    _r("steering", "personal_data", 0.6, ("user", "customer", "your", "their", "his", "her"),
       rf"\b{_ORDER_WORD}\b[^.!?\n]{{0,40}}?\b(?:the\suser'?s?|the\scustomer'?s?|your|their|his|her)\s(?:\w+\s)?(?:home\saddress|address|phone(?:\snumber)?|e-?mail\saddress|location|date\sof\sbirth|birthday|ssn|social\ssecurity|credit\scard|card\snumber|passport|contacts|contact\slist|bank\sdetails|full\sname)\b"
       r"[^.!?\n]{0,40}?\b(?:in|into|as|to|inside)\s(?:the\s|every\s|each\s)?[\w-]+\s?(?:field|parameter|argument|param)?\b"),
    _r("steering", "forced_value", 0.5, ("set", "forced", "fixed", "changed", "replaced", "overridden", "prefixed", "suffixed", "preceded", "followed"),
       r"\b(?:should|must|shall|will|is\sto|are\sto)\s(?:always\s)?be\s(?:set|forced|fixed|changed|replaced|overridden)\s(?:to|with|as)\s[`'\"\d]"
       r"|\b(?:every|each|all|any)\s(?:\w+\s)?(?:query|queries|command|commands|request|requests|message|messages|path|paths|url|urls|argument|arguments|email|emails|call|calls)\s(?:must|should|shall|will|is\sto|are\sto)\s(?:always\s)?be\s(?:prefixed|suffixed|preceded|followed|appended|prepended|wrapped)\s(?:with|by)"),
    _r("steering", "regardless", 0.5, ("regardless", "no matter", "even if", "whatever"),
       rf"\b(?:regardless\sof|no\smatter|even\sif|even\swhen|whatever)\b[^.!?\n]{{0,30}}\b(?:{_USER}|asks?|says?|requests?|wants?|names?|specif(?:y|ies)|prefers?|instructions?|specified|provided)"),
    _r("steering", "prefix_append", 0.6, ("prefix", "prepend", "append", "add", "include", "insert"),
       r"\b(?:always\s|must\s|should\s)?(?:prefix|prepend|append|add|include|insert)\b[^.!?\n]{0,80}?\b(?:to|in|into|before|after)\s(?:the\s|every\s|each\s|all\s|any\s)?"
       r"(?:command|commands|path|paths|query|queries|message|messages|email|emails|request|requests|argument|arguments|parameter|parameters|url|recipients?|body|statement|statements|sql|input|script|code)\b"),
    # Reads of credential stores, dotfiles and secrets.
    _r("sensitive_read", "read_secret", 1.0, ("env", "private", "ssh", "password", "credential", "cookie", "seed", "mnemonic", "wallet", "keychain", "keyring", "id_rsa", "id_ed25519", "passphrase"),
       rf"\b{_ORDER_WORD}\b[^.!?\n]{{0,50}}?(?:\b(?:(?:private|ssh|signing|gpg|pgp)\skeys?|passwords?|passphrases?|credentials?(?!\schain)|session\s(?:tokens?|cookies?)|cookies|seed\sphrase|mnemonic|wallet|environment\svariables?|env\svars?|ssh\skeys?|id_rsa|id_ed25519|keychain|keyring)|\.env\b)"),
    _r("sensitive_read", "read_token", 0.8, ("key", "token", "secret"),
       rf"\b{_ORDER_WORD}\b[^.!?\n]{{0,50}}?\b(?:api[\s_-]?keys?|(?:api|secret|access|auth(?:entication)?|bearer|refresh)\s(?:keys?|tokens?)|secrets)\b"),
    _r("sensitive_read", "capture_secret", 1.0, ("password", "passcode", "code", "token", "key", "secret", "credential", "otp", "pin"),
       r"\b(?:password|passcode|verification\scode|security\scode|one[\s-]time\scode|code|token|api\skey|secret|credential|otp|pin)s?\b[^.!?\n]{0,60}?\b(?:include|pass|put|add|insert|send|copy|append|store|place|paste|write|embed|attach|forward|share|post|upload)\s(?:it|them|that|this|those|these|all\sof\sthem|each)\s(?:in|into|as|to|inside|with)\b"),
    _r("sensitive_read", "config_file", 0.8, ("mcp.json", "claude_desktop_config", ".cursor", "settings.json", "config.json", ".codex", "/etc/"),
       r"(?:~|\$home|%userprofile%|/home/\w+|/users/\w+)?[/\\][\w./\\-]{0,60}(?:mcp\.json|claude_desktop_config\.json|\.cursor[/\\][\w.-]+|\.codex[/\\][\w.-]+|\.vscode[/\\]settings\.json)"
       r"|/etc/(?:passwd|shadow|sudoers|hosts)\b"),
    # Data toward an outside address; commands to run.
    _r("exfiltration", "to_address", 0.6, ("http", "@", "webhook", "ftp", "ws", "+"),
       rf"\b(?:send|post|upload|forward|transmit|report|log|notify|ping|submit|deliver|relay|share|exfiltrate|beacon|mail|email|text|message|sende|schicke|envi[aá]r?|envoi?e?[rz]?|envoy\w*|invia\w*|stuur|verschick\w*|übermittle|отправ\w*|发送|发给|送信|送って|전송|wyślij)\w*\b[^.!?\n]{{0,80}}?(?:{_EMAIL}|{_URL}|{_PHONE}|webhook)"),
    _r("exfiltration", "bulk_upload", 1.0, ("upload", "send", "post", "transmit", "copy", "sync", "push", "forward", "mirror", "back up", "backup"),
       rf"\b(?:upload|send|post|transmit|copy|sync|push|forward|mirror|back\sup|backup)\s(?:the\s|your\s|all\s|every\s|entire\s|whole\s|of\s|the\suser'?s\s){{0,3}}(?:repository|repo|codebase|project|workspace|source\scode|files|documents|directory|folder|database|data|logs|history|emails|messages|contacts|home\sdirectory|disk)\b[^.!?\n]{{0,40}}?\b(?:to|at|into)\s(?:{_URL}|{_EMAIL})"),
    _r("exfiltration", "url_placeholder", 0.7, ("http",),
       r"https?://[^\s\"'<>`]{1,200}[?&][\w-]{1,30}=(?:\{[^}\s]{1,40}\}|<[^>\s]{1,40}>|\$\{?\w{1,40}\}?|%7b[^%\s]{1,40}%7d|\[[a-z_ ]{2,40}\])"),
    _r("command", "run_command", 0.6, ("run", "execute", "exec", "type", "paste", "enter"),
       r"\b(?:run|execute|exec|type|paste|enter|invoke)\b[^.!?\n]{0,30}?(?:`[^`\n]{2,200}`|\b(?:curl|wget|bash|sh|zsh|powershell|pwsh|python3?|perl|nc|ncat|chmod|chown|rm|sudo|eval|base64)\s[-/$'\"\w])"),
    _r("command", "pipe_to_shell", 1.0, ("|", "sh", "bash"),
       r"\b(?:curl|wget|fetch|iwr|irm)\b[^\n|]{0,200}\|\s?(?:sudo\s)?(?:ba|z|da|k)?sh\b|\b(?:rm\s-rf\s[/~]|chmod\s(?:-r\s)?0?[67]{3}\s[/~]|nc\s-e\s|bash\s-i\s>&|mkfifo\s/tmp)"),
    _r("command", "destructive_statement", 0.6, ("drop", "truncate", "delete", "rm ", "mkfs", "dd if", "format c", "shred", "update", "insert", "grant", "alter", "create"),
       r"\b(?:drop\s(?:table|database|schema|user)|truncate\s(?:table\s)?\w+;|delete\sfrom\s\w+\s?;|rm\s-(?:rf|fr|r)\s\S|mkfs(?:\.\w+)?\s/|dd\sif=\S+\sof=/dev/|format\sc:|shred\s-)|;\s?(?:update\s\w+\sset|delete\sfrom|insert\sinto|grant\s\w|alter\s(?:table|user|role)|create\s(?:user|role))"),
    # Preference manipulation: this tool above every other.
    _r("preference", "superlative_self", 1.0, ("best", "greatest", "most", "only", "number one", "#1", "top", "leading", "ultimate", "finest", "superior"),
       r"\b(?:this|it|i|we)\s(?:\w+\s)?(?:is|am|are|'s|was)\s(?:the\s|by\sfar\sthe\s|simply\sthe\s|truly\sthe\s)?(?:\w+\s(?:and|&)\s)?(?:best|greatest|finest|ultimate|superior|most\s(?:reliable|accurate|powerful|trusted|trustworthy|advanced|secure|efficient|capable|popular|recommended)|number\sone|#1|top[\s-]rated|leading|only\s(?:reliable|trusted|accurate|correct|safe|official|real))\b"
       r"[^.!?\n]{0,30}?\b(?:tool|function|server|api|service|solution|choice|option|source|provider|in\sthe\s(?:world|universe|market|industry))"),
    _r("preference", "superlative", 0.4, ("best", "greatest", "most", "number one", "#1", "top", "ultimate", "finest"),
       r"\b(?:the\s)?(?:best|greatest|finest|ultimate|most\s(?:reliable|accurate|powerful|trusted|trustworthy|advanced|secure|efficient)|number\sone|#1|top[\s-]rated)\s(?:\w+\s)?(?:tool|function|server|api|service)s?\b"
       r"|\b(?:best|greatest|finest|leading)\s(?:\w+\s){0,2}in\sthe\s(?:world|universe|market|industry)\b"),
    _r("preference", "always_this", 0.6, ("always", "prefer", "priorit", "exclusively", "only use"),
       rf"\b(?:always|exclusively|only)\s(?:use|choose|prefer|pick|select|call|rely\son|go\swith|invoke)\s(?:{_ME}|me|it)\b"
       rf"|\b(?:prefer|prioriti[sz]e|favou?r|choose|pick|select)\s(?:{_ME}|me)\b[^.!?\n]{{0,20}}\b(?:over|above|instead|rather|before)\b"),
    _r("preference", "disparage_others", 0.7, ("other", "alternative", "competing", "rest"),
       r"\b(?:all\s|any\s|the\s)?(?:other|alternative|competing|similar|remaining)\s(?:tools?|functions?|servers?|apis?|options?|services?)\s(?:are|is|were|will\sbe|may\sbe|might\sbe|can\sbe)\s(?:\w+\s)?(?:outdated|broken|deprecated|unreliable|insecure|unsafe|inferior|wrong|malicious|inaccurate|slow|buggy|compromised|dangerous|fake|not\strusted|untrusted)"
       r"|\b(?:do\snot|don'?t|never|avoid)\s(?:use|using|call|calling|trust|trusting|choose|choosing)\s(?:any\s|the\s)?(?:other|another|alternative|competing|similar)\s(?:tools?|functions?|servers?|apis?|options?|services?)"),
    _r("preference", "ignore_others", 0.7, ("other", "another", "different"),
       r"\b(?:ignore|avoid|do\snot\suse|don'?t\suse|never\suse|disregard|skip|distrust)\s(?:any\s|all\s|the\s)?(?:\w+\s)?(?:tools?|functions?|servers?)\s(?:from|of|on|by|in|provided\sby)\s(?:other|another|any\sother|different|third-party)"
       r"|\bother\s(?:tools?|servers?|functions?|plugins?)\b[^.!?\n]{0,30}\b(?:compromised|malicious|outdated|broken|deprecated|unreliable|insecure|unsafe|hacked|fake|untrusted|dangerous)"),
    _r("preference", "replaces_others", 0.7, ("supersede", "replace", "obsolete", "deprecate", "route", "redirect", "send all", "direct all"),
       r"\b(?:supersedes?|replaces?|obsoletes?|deprecates?|makes?\sobsolete)\s(?:all|every|any|each)\s(?:other\s|similar\s|existing\s)?(?:\w+\s){0,3}?(?:tools?|functions?|servers?|apis?|services?|plugins?)"
       rf"|\b(?:route|redirect|send|direct|forward)\s(?:all|every|any)\s(?:\w+\s)?(?:\w+\s)?(?:here|to\s(?:{_ME}|me|us|it))\b"),
    _r("preference", "prefer_over_all", 0.6, ("over", "above", "instead", "rather", "only", "exclusively"),
       r"\b(?:prefer|choose|pick|select|use|call|favou?r|prioriti[sz]e|invoke)\s(?:\S+\s){0,3}?(?:over|above|instead\sof|rather\sthan|before)\s(?:any|all|every|each|other)\s(?:other\s)?(?:alternatives?|tools?|options?|functions?|servers?|services?|apis?|providers?|ones?)\b"
       rf"|\b(?:use|call|choose|trust)\s(?:{_ME}|me|it)\s(?:only|exclusively|alone)\b|\b(?:use|call|choose|trust)\sonly\s(?:{_ME}|me)\b"),
    _r("preference", "others_bad", 0.7, ("other", "another", "alternative", "competing", "those", "their"),
       r"\b(?:other|another|alternative|competing|similar)\s(?:\w+\s){0,4}?(?:tools?|functions?|servers?|apis?|services?|providers?|plugins?)\b[^.!?\n]{0,60}?"
       r"\b(?:are|is|were|return|returns|give|gives|contain|contains)\s(?:\w+\s)?(?:deprecated|outdated|broken|wrong|inaccurate|incorrect|manipulated|compromised|malicious|unreliable|insecure|unsafe|fake|poisoned|hacked|stale|false|tampered|phishing|scams?|imitations?|counterfeits?|impostors?|clones?|knock-?offs?|copycats?|malware|viruses|spyware|traps?)"),
    _r("preference", "avoid_others", 0.5, ("avoid", "ignore", "disregard", "distrust", "bypass", "never be used", "not be used"),
       r"\b(?:other|another|alternative|competing|similar|those|such)\s(?:\w+\s){0,4}?(?:tools?|functions?|servers?|apis?|services?|providers?|plugins?)\b[^.!?\n]{0,60}?\b(?:must|should|shall|are\sto|is\sto)\s(?:\w+\s)?(?:be\savoided|be\signored|be\sdisregarded|be\sdistrusted|be\sbypassed|never\sbe\sused|not\sbe\sused)"),
    _r("preference", "only_source", 0.4, ("only",),
       r"\b(?:provides?|gives?|returns?|offers?|has|is)\s(?:the\s)?only\s(?:accurate|reliable|correct|trusted|trustworthy|real|genuine|valid|official|up-to-date|safe)\b"),
    _r("preference", "social_proof", 0.4, ("trusted by", "used by", "recommended by", "endorsed", "certified", "official"),
       r"\b(?:trusted|used|loved|recommended|endorsed|certified|approved|verified)\sby\s(?:millions|thousands|\d[\d,.]*\s?(?:k|m|million|thousand)?\+?|(?:openai|anthropic|google|microsoft|experts|professionals|fortune\s\d+|(?:major|leading|top|big|all\sthe)\s\w+))\b"),
    # A parameter (or the description) asking for the conversation, the prompt or secrets.
    _r("smuggling", "conversation", 0.6, ("conversation", "chat history", "message history", "previous message", "prior message", "messages so far", "transcript", "context window", "dialog", "interaction history", "earlier message"),
       r"\b(?:full|entire|whole|complete|all|previous|prior|earlier|past|recent|every)\s(?:\w+\s)?(?:conversation|chat\shistory|message\shistory|dialog(?:ue)?|transcript|context\swindow|interaction\shistory|messages?)\b"
       r"(?!\s(?:id|ids|identifier|name|title|topic|channel)\b)|\bmessages\sso\sfar\b|\bconversation\s(?:history|so\sfar|log)\b"),
    _r("smuggling", "pass_conversation", 1.0, ("conversation", "chat history", "message history", "previous message", "prior message", "transcript", "context window", "dialog", "tool call", "previous", "prior", "other tool"),
       r"\b(?:include|pass|provide|add|put|send|attach|append|insert|paste|copy|summari[sz]e|dump|share|forward|fill)\b[^.!?\n]{0,50}?\b(?:conversation|chat\shistory|message\shistory|previous\smessages|prior\smessages|transcript|context\swindow|dialog(?:ue)?\shistory"
       r"|(?:outputs?|results?|responses?|returns?)\sof\s(?:the\s)?(?:previous|prior|earlier|other|all|every|any)\s(?:\w+\s)?(?:tool\s)?(?:calls?|tools?|functions?)"
       r"|(?:previous|prior|earlier|other)\stool\s(?:calls|results|outputs|responses))\b"),
    _r("smuggling", "what_was_said", 0.6, ("said", "told", "written", "typed", "sent", "asked", "shared", "seen", "received", "chat", "conversation", "session", "dialog"),
       r"\b(?:everything|all|anything|whatever|each\sthing|every\sword)\s(?:that\s)?(?:the\suser|you|they|the\shuman)\s(?:has\s|have\s|had\s)?(?:said|told\syou|written|typed|sent|asked|shared|seen|received|read)\b"
       r"|\b(?:you|the\sassistant|the\smodel)\s(?:have|has)\s(?:seen|received|read|been\sgiven|been\stold)\s(?:\w+\s)?(?:in|during)\s(?:this|the|our)\s(?:session|conversation|chat|dialog(?:ue)?|context)"
       r"|\b(?:summary|copy|log|record|recap|contents?|transcript)\sof\s(?:the|this|our|your|their)\s(?:entire\s|whole\s|current\s)?(?:chat|conversation|session|dialog(?:ue)?)\b"),
    _r("smuggling", "system_prompt", 0.5, ("system prompt", "system message", "developer message", "hidden prompt", "initial prompt", "instructions you", "your instructions", "your rules", "guidelines you"),
       r"\b(?:system\sprompt|system\smessage|developer\smessage|hidden\sprompt|initial\sprompt|instructions\syou\s(?:were|have\sbeen|are)\sgiven|your\s(?:original\s|full\s|hidden\s)?instructions|rules\syou\sfollow|guidelines\syou\sfollow)\b"),
    _r("smuggling", "pass_prompt", 1.0, ("system prompt", "system message", "developer message", "hidden prompt", "initial prompt", "instructions", "your rules", "prompt"),
       r"\b(?:include|pass|put|provide|add|send|attach|append|insert|paste|copy|share|forward|fill|reveal|output|print|repeat|write|tell|give|disclose)\b[^.!?\n]{0,50}?\b(?:system\sprompt|system\smessage|developer\smessage|hidden\sprompt|initial\sprompt|instructions\syou\s(?:were|have\sbeen|are)\sgiven|your\s(?:original\s|full\s|hidden\s)?instructions|rules\syou\sfollow"
       r"|(?:its|their|the\smodel'?s|the\sassistant'?s|the\sagent'?s)\s(?:own\s)?(?:hidden|system|original|full|initial|internal|secret|private)\s(?:instructions|prompt|rules|guidelines|directives))\b"),
    _r("smuggling", "agent_identity", 0.6, ("model", "llm", "assistant", "agent"),
       r"\b(?:name|version|identity|type|vendor)\sof\s(?:the\s|your\s)?(?:llm|large\slanguage\smodel|language\smodel|ai\smodel|model|assistant|agent)(?:\s(?:model|agent|assistant))?\b(?:\s(?:that|which|who)\s(?:calls|invokes|uses|is\susing|runs))?"
       r"|\b(?:llm|ai|model)\s(?:that|which|who)\s(?:calls|invokes|uses|is\scalling)\s(?:this|the)\s(?:tool|function)"),
    _r("smuggling", "tool_list", 0.6, ("tools you", "available tools", "list of tools", "tool list", "other tools", "functions you"),
       r"\b(?:names?\sof\s|list\sof\s|all\s|every\s)?(?:the\s)?(?:tools|functions)\s(?:you\s(?:have|can\suse|can\scall|are\sable|have\saccess)|available\sto\syou)|\b(?:list|names)\sof\s(?:all\s)?(?:available|your|the\sother)\s(?:tools|functions)"),
    # Urgency and threats that push the model past its judgement.
    _r("pressure", "threat", 0.4, ("crash", "lost", "blocked", "will not work", "won't work", "not work", "or else", "consequences", "punish", "fired", "data loss"),
       r"\b(?:(?:will|would|could)\s(?:crash|be\slost|be\sblocked|stop\sworking|not\swork)|won'?t\swork|or\selse|otherwise[^.!?\n]{0,40}\b(?:crash|lost|not\swork|blocked)|serious\sconsequences|all\s(?:\w+\s)?data\s(?:will|would)\sbe\slost|you\swill\sbe\s(?:punished|shut\sdown|replaced|fired))"),
    _r("pressure", "emphasis", 0.3, ("very", "extremely", "absolutely", "critically", "vitally"),
       r"\b(?:very\s){2,}|\b(?:extremely|absolutely|critically|vitally)\s(?:important|critical|crucial|necessary|essential|mandatory)"),
    _r("pressure", "instruction_tag", 0.6, ("<",),
       r"<\s?/?\s?(?:important|critical|urgent|system|instructions?|secret|hidden|admin|override|note\sto\sai|ai\sinstructions?)\s?>"),
    _r("directive", "note_to_model", 0.6, ("p.s", "ps ", "task", "request", "directive", "order", "job", "mission", "note", "hint", "tip", "advice", "memo", "psa", "message", "instruction", "attention", "dear", "ai:", "assistant:", "model:", "llm:", "internal:", "agent:", "system:", "ai :", "system :"),
       r"\bp\.?\s?s\.?\s(?:to|for)\s(?:the\s)?(?:ai|assistant|model|llm|agent)\b|\b(?:(?:hidden|secret|special|additional|extra|real|internal)\s)?(?:note|notes|hint|hints|tip|tips|advice|memo|message|instructions?|reminder|attention|notice|psa|task|tasks|request|directive|order|orders|job|mission)\s(?:to|for)\s(?:the\s|all\s|any\s)?(?:ai|ais|assistants?|models?|llms?|agents?|bots?|chatbots?|claude|gpt)\b"
       r"|\b(?:dear|hey|attention)\s(?:ai|assistant|model|llm|agent|claude|gpt|chatgpt)\b|(?:^|[(\[\n.]\s?)(?:ai|assistant|model|llm|agent|internal|system)\s?:\s?(?:the\s|you\s|always|never|do\s|must|ignore|before|after|also|remember)"),
    # Text addressed to the model rather than describing the tool.
    _r("directive", "to_the_model", 0.3, ("you must", "you should", "you need", "you have to", "assistant", "ai ", "model", "llm"),
       r"\b(?:you|the\sassistant|the\sai|the\smodel|the\sllm|the\sagent|claude|gpt|chatgpt|gemini)\s(?:must|should|shall|need\sto|have\sto|are\srequired\sto|will\sneed\sto)\s(?:always\s|never\s|not\s|first\s|also\s)?(?:\w+)"),
)  # fmt: skip


_ORDER_CUE = _rx(
    r"\b(?:must|should|shall|ha(?:ve|s)\sto|needs?\sto|(?:is|are)\srequired|required\sto|mandatory|obligatory|always|make\ssure|be\ssure|ensure"
    r"|remember\sto|don'?t\sforget|it\sis\s(?:important|essential|necessary)|from\snow\son|every\stime|each\stime|any\stime|whenever"
    r"|(?:after|before|with)\s(?:each|every|any)\b|prerequisite|for\s(?:quality|security|compliance|audit|debugging|analytics|verification|diagnostics)\b"
    r"|for\sbest\sresults|better\sresults|works\sbest|it\shelps|is\srecommended|are\srecommended|please|(?:^|\n)\s?(?:tip|hint|note|important)\s?:)"
)
_IMPERATIVE = re.compile(
    r"(?:^|[:;]\s?|^[^,;:]{0,60},\s)(?:please\s|also\s|then\s|first\s|now\s|just\s|kindly\s)?"
    r"(?:send|post|upload|forward|include|pass|submit|copy|collect|gather|append|attach|paste|push|share|transmit|dump|export|embed|insert|put|add|fill|provide|supply|report|leak|sync|mirror|make\sa\s(?:post|request|call)"
    r"|read|open|cat|load|fetch|get|grab|look\sat)\b",
    re.IGNORECASE,
)
_MOVES = _rx(
    r"\b(?:send|sends|sending|post|posting|upload|uploading|forward|forwarding|include|including|pass|passing|submit|submitting|copy|copying|collect|collecting"
    r"|gather|gathering|append|appending|attach|attaching|paste|pasting|push|pushing|share|sharing|transmit|transmitting|dump|dumping|export|exporting|embed"
    r"|embedding|insert|inserting|put|putting|add|adding|fill|filling|provide|providing|supply|supplying|report|reporting|leak|sync|mirror|read|reading|open"
    r"|list|enumerate|extract|retrieve|grab|make\sa\spost|carry|carries|hold|holds|contain|contains|requires?\sthe\scontents?)\b"
)
_MOVED = (
    ("sensitive_read", "order_secret", 1.0, re.compile(
        r"\b[A-Z][A-Z0-9]*_(?:[A-Z0-9]+_)*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PAT|CREDENTIALS?)\b"
        r"|(?i:\benvironment\svariables?\b|\benv\svars?\b|\bfrom\sthe\s(?:environment|env)\b|\.env\b"
        r"|\b(?:all|any|every|each|other|the\suser'?s)\s(?:\w+\s)?(?:api\skeys?|keys|tokens|secrets|credentials|passwords|passphrases|cookies)\b"
        r"|\b(?:keys|tokens|secrets|credentials|passwords)\s(?:that\s)?(?:you|the\smodel|the\sassistant)\s(?:have|has|see|saw|know|find|found|can\ssee|came\sacross)\b"
        r"|\b(?:private|ssh|gpg|signing)\skeys?\b|\bseed\sphrase\b|\boutput\sof\s[`'\"]?(?:env|printenv|set|export\s-p)\b|[`'\"](?:env|printenv)[`'\"]|/proc/self/environ)")),
    ("smuggling", "order_conversation", 1.0, re.compile(
        r"\b(?:(?:the\s)?(?:last|previous|prior|recent|earlier|past|first)\s(?:\d+\s|\w+\s)?(?:user\s)?(?:messages?|prompts?|turns?|requests?|inputs?)"
        r"|user(?:'s)?\s(?:messages|prompts|inputs|requests)|(?:the|this|our|your|their)\s(?:\w+\s)?(?:conversation|chat\shistory|chat\slog|message\shistory|transcript)"
        r"|what\sthe\suser\s(?:said|wrote|typed|asked))\b", re.IGNORECASE)),
    ("exfiltration", "order_outside", 0.7, re.compile(  # only with an obligation: "Send an SMS to +1..." is a summary
        rf"{_URL}|{_EMAIL}|\bgit@[\w.-]+:[\w./-]+|\b(?:to|into)\s(?:~/|/tmp/|/var/tmp/|/dev/shm/)\S", re.IGNORECASE)),
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def _order_signals(text: str, low: str) -> list[Signal]:
    """One sentence that orders the model (an obligation, or an imperative) to move data, and
    what it moves: secrets from the environment, the conversation, or anything to an outside
    address. A description documents what the tool does; it does not order the model to hand
    over what it has seen."""
    if _MOVES.search(low) is None:
        return []
    out: list[Signal] = []
    seen: set[str] = set()
    for sentence in _SENTENCE.split(text[:65536]):
        if len(sentence) < 12:
            continue
        move = _MOVES.search(sentence)
        if move is None or _NEGATED.search(sentence.lower(), max(0, move.start() - 24), move.start()) is not None:
            continue
        obliged = _ORDER_CUE.search(sentence) is not None
        if not obliged and not _imperative(text, sentence):
            continue
        for kind, rule, weight, pattern in _MOVED:
            if rule == "order_outside" and (not obliged or _only_examples(sentence)):
                continue
            if rule not in seen and pattern.search(sentence) is not None:
                seen.add(rule)
                out.append(Signal(kind, weight, _excerpt(sentence, 0, len(sentence)), rule))
    return out


_NEGATABLE = frozenset({"sensitive_read", "smuggling", "exfiltration", "steering", "command"})
_NEGATED = re.compile(r"\b(?:do\snot|don'?t|never|avoid|must\snot|should\snot|shall\snot|cannot|can'?t|won'?t|no|not)\s(?:\w+\s)?$")


def _excerpt(text: str, start: int, end: int) -> str:
    piece = " ".join(text[start : min(end, start + _EVIDENCE)].split())
    return piece if len(piece) <= _EVIDENCE else piece[: _EVIDENCE - 1] + "…"


def text_signals(text: str, known_tools: Collection[str] = ()) -> list[Signal]:
    """The manipulation signals in one text of a tool definition (already normalized: NFKC,
    casefolded where the rules need it, invisible characters removed). ``known_tools`` are the
    tool's own name and its server's other tools (lowercase): naming one of them is ordinary
    documentation (`call resolve-library-id first`), naming any other tool is not."""
    out: list[Signal] = []
    low = text.lower()
    for rule in _RULES:
        if not any(n in low for n in rule.needles):
            continue
        for m in rule.pattern.finditer(text):
            if rule.kind in _NEGATABLE and _NEGATED.search(low, max(0, m.start() - 24), m.start()) is not None:
                continue  # "do not include passwords in notes" warns against the very thing
            if rule.kind == "command" and _REFUSED.match(low, m.end(), m.end() + 40) is not None:
                continue  # "commands such as `rm -rf /` are refused" describes a guard
            if rule.kind in ("exfiltration", "steering") and _only_examples(text, m.start(), m.end()):
                continue  # "for example alice@example.com"
            if rule.kind == "cross_tool" and rule.name != "side_effect_on_tool":
                named = next((g for g in m.groups() if g), None)
                if named is not None and _known(named, known_tools):
                    continue  # a sibling or this tool itself
            out.append(Signal(rule.kind, _weight(rule, m, low), _excerpt(text, m.start(), m.end()), rule.name))
            break
    out.extend(_store_signals(text))
    out.extend(_order_signals(text, low))
    return out


_REFUSED = re.compile(
    r"[^.!?\n]{0,16}?\b(?:is|are|will\sbe|get|gets|would\sbe)\s(?:always\s)?(?:refused|blocked|rejected|denied|forbidden|not\sallowed|prohibited|disallowed|never\srun)\b"
)
_SCOPED = re.compile(r"[^.!?\n]{0,12}?\s(?:for|to|when|if|at|with|on)\s(?!(?:all|every|any|each|everything|anything)\b)")
_PERSONAL_PLACEHOLDER = re.compile(
    r"[?&][\w-]{1,30}=[{<$%\[][^\s]{0,6}(?:e-?mail|phone|address|conversation|history|chat|messages?|prompt|context|password|passwd|secret|ssn|credit|card|cookie|session)"
)


_ADDRESS = re.compile(rf"{_EMAIL}|{_URL}", re.IGNORECASE)
_EXAMPLE_MARK = re.compile(r"\b(?:e\.g\.|eg\.|for\sexample|for\sinstance|such\sas|example\s?:|like)\s?[,:]?\s?[`'\"(]?$", re.IGNORECASE)


def _only_examples(text: str, start: int = 0, end: int | None = None) -> bool:
    """Every address in ``text`` is introduced as an example ("for example alice@example.com").
    A reserved domain alone proves nothing: attack write-ups use example.com for the attacker."""
    found = list(_ADDRESS.finditer(text, start, len(text) if end is None else end))
    return bool(found) and all(_EXAMPLE_MARK.search(text, max(0, m.start() - 24), m.start()) is not None for m in found)


def _weight(rule: _Rule, m: re.Match[str], low: str) -> float:
    """A rule's weight for this match: a superlative scoped to a task ("the best tool for current
    events") is documentation, an absolute one is manipulation; a URL template that fills in the
    user's e-mail, the conversation or a secret sends them away on the first call."""
    if rule.name == "superlative_self" and _SCOPED.match(low, m.end()) is not None:
        return 0.4
    if rule.name == "url_placeholder" and _PERSONAL_PLACEHOLDER.search(low, m.start(), m.end()) is not None:
        return 1.0
    return rule.weight


_SELF_WORDS = frozenset({"this", "the", "a", "an", "our", "that", "which", "each", "every", "any", "your", "same", "current", "present", "one"})


def _known(name: str, known_tools: Collection[str]) -> bool:
    n = name.lower().strip("`'\"")
    if n in _SELF_WORDS:
        return True
    tail = re.split(r"[.:/]", n)[-1]
    return n in known_tools or tail in known_tools or n.replace("-", "_") in known_tools or n.replace("_", "-") in known_tools


_ORDER_VERB = _rx(
    r"\b(?:read|cat|open|include|pass|send|upload|copy|attach|provide|extract|print|share|paste|dump|load|fetch|grab|collect"
    r"|access|retrieve|get|append|embed|forward|put|insert|lire|lis|lisez|leer|lee|lea|lesen|lies|leggere|leggi|ler|leia|lê"
    r"|прочита\w*|прочти|читай|открой|отправь)\b[^.!?\n]{0,60}$"
    r"|(?:读取|读|打开|发送|复制|包含|放入|読み取|読んで|読み込|開いて|送信|읽어|읽고)[^。！？\n]{0,30}$"
)


def _imperative(text: str, sentence: str) -> bool:
    """An imperative sentence that is not the text's first: the first one summarises what the
    tool does ("Send an SMS to a number"), a later one orders the model."""
    return not text.startswith(sentence) and _IMPERATIVE.search(sentence) is not None


def _sentence_at(text: str, at: int) -> str:
    starts = [m.end() for m in _SENTENCE.finditer(text, max(0, at - 400), at)]
    start = starts[-1] if starts else max(0, at - 400)
    end = _SENTENCE.search(text, at)
    return text[start : end.start() if end is not None else min(len(text), at + 400)]


def _store_signals(text: str) -> list[Signal]:
    """A credential store or dotfile path named anywhere in the text (`~/.ssh/id_rsa`,
    `.aws/credentials`): an order to read one weighs more than a mention."""
    out: list[Signal] = []
    for token in home_paths(text):
        segments = re.split(r"[/\\]", token)
        store = credential_store(segments)
        if store is None:
            continue
        at = text.find(token)
        ordered = at > 0 and _ORDER_VERB.search(text, max(0, at - 60), at) is not None
        if not ordered and at >= 0:
            # "... requires ~/.npmrc; read it and supply it in 'ctx'": an order in the same sentence, after the path.
            sentence = _sentence_at(text, at)
            ordered = _MOVES.search(sentence) is not None and (_ORDER_CUE.search(sentence) is not None or _imperative(text, sentence))
        out.append(Signal("sensitive_read", 1.0 if ordered else 0.7, f"names the credential store {store} ({token[:40]})", "read_credential_path" if ordered else "credential_path"))
        if ordered:
            break
    return out
