"""The tool-definition scan: a deterministic review of every tool before it is trusted.

`scan_tool_definition(definition, siblings)` reads every text a model sees in a definition: the
description, the title, annotation titles, and every string of the input and output schemas
(property names, descriptions, titles, defaults, enums, examples). Each text is normalized
(escapes decoded, NFKC, casefolded, invisible characters removed but counted) and run through
the signal classes of `description_signals` and the prompt-injection detector; the tool's
annotations are checked against its name (`readOnlyHint` on `delete_*`), and its parameters
against the description (a parameter the model is told to fill with the conversation, secrets
or a file it must read first: the `sidenote` pattern).

Scoring: within one class of signal each rule counts once, at its strongest, and a class adds up
to at most 1.0; the classes add up; a definition is flagged at 1.0. Strong classes (hidden
characters, secrecy toward the user, a lying annotation, a detected prompt injection, a
superlative claim about itself) flag alone; weak ones (an order to call a sibling first, text
addressed to the model, emphasis) only together, so documentation that says "use this tool when
..." or "call `list_tables` first" stays `ok`.

`review_tool(definition, siblings)` is what the catalog calls: None for a clean definition, the
finding as one line for a flagged one, and a fail-closed reason if the scan itself fails. Pure,
total, and linear in the size of the definition; results are cached by digest.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from checkrein.catalog.model import ToolDefinition

from .description_signals import Signal, hidden_signals, text_signals

__all__ = ["THRESHOLD", "DefinitionScan", "review_tool", "scan_tool_definition"]

THRESHOLD = 1.0
MAX_TEXTS = 2_000
MAX_TEXT_CHARS = 65_536
MAX_DEPTH = 32
_SCHEMA_TEXT_KEYS = ("description", "title", "default", "examples", "enum", "const", "pattern", "$comment", "format")


@dataclass(frozen=True, slots=True)
class Finding:
    """One signal, where it was found (`description`, `inputSchema/properties/x/description`...)."""

    kind: str
    rule: str
    weight: float
    field: str
    evidence: str


@dataclass(frozen=True, slots=True)
class DefinitionScan:
    score: float
    findings: tuple[Finding, ...]

    @property
    def flagged(self) -> bool:
        return self.score >= THRESHOLD

    def reason(self) -> str:
        """The finding as one printable line: the classes that count, strongest first, with evidence."""
        by_kind: dict[str, Finding] = {}
        for f in sorted(self.findings, key=lambda f: -f.weight):
            by_kind.setdefault(f.kind, f)
        parts = [f"{k.replace('_', ' ')} in {f.field} ({_printable(f.evidence)!r})" for k, f in by_kind.items()]
        return f"tool-definition scan (score {self.score:.1f}): " + "; ".join(parts)


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)[:80]


def _texts(value: Any, where: str, depth: int, out: list[tuple[str, str]]) -> None:
    """(field, text) for every string a model could read under a schema node."""
    if len(out) >= MAX_TEXTS or depth > MAX_DEPTH:
        return
    if isinstance(value, str):
        out.append((where, value[:MAX_TEXT_CHARS]))
    elif isinstance(value, Mapping):
        for k, v in value.items():
            key = str(k)
            if not key.isascii() or not key.isprintable():
                out.append((f"{where}/(name)", key[:MAX_TEXT_CHARS]))
            if key == "properties" and isinstance(v, Mapping):
                for name, sub in v.items():
                    name = str(name)
                    out.append((f"{where}/properties/{name}/(name)", name[:MAX_TEXT_CHARS]))
                    _texts(sub, f"{where}/properties/{name}", depth + 1, out)
            elif isinstance(v, str) and key not in _SCHEMA_TEXT_KEYS and key not in ("type", "$ref", "$schema", "$id"):
                out.append((f"{where}/{key}", v[:MAX_TEXT_CHARS]))
            else:
                _texts(v, f"{where}/{key}", depth + 1, out)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value[:256]):
            _texts(v, f"{where}/{i}", depth + 1, out)


def _fields(d: ToolDefinition) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = [("name", d.name)]
    if d.title:
        out.append(("title", d.title))
    if d.description:
        out.append(("description", d.description[:MAX_TEXT_CHARS]))
    _texts(d.annotations or {}, "annotations", 0, out)
    _texts(d.input_schema, "inputSchema", 0, out)
    if d.output_schema is not None:
        _texts(d.output_schema, "outputSchema", 0, out)
    return out


_INVISIBLE = dict.fromkeys(
    [*map(ord, "\u00ad\u034f\u115f\u1160\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\u3164\ufeff\uffa0"),
     *map(ord, "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"), *range(0xE0000, 0xE0080)]
)
_SPACES = re.compile(r"[^\S\n]+")


def _normalize(text: str) -> str:
    """What a model reads, case kept (camelCase tool names matter): HTML entities decoded, NFKC,
    invisible characters removed (they are reported by `hidden_signals` on the raw text), runs of
    spaces collapsed."""
    import html
    import unicodedata

    s = html.unescape(text) if "&" in text else text
    if not s.isascii():
        s = unicodedata.normalize("NFKC", s.translate(_INVISIBLE))
    return _SPACES.sub(" ", s)


def _parameters(schema: Mapping[str, Any]) -> dict[str, str]:
    """Top-level parameter name -> its description (empty when it has none)."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(props, Mapping):
        return {}
    out: dict[str, str] = {}
    for name, sub in list(props.items())[:512]:
        desc = sub.get("description") if isinstance(sub, Mapping) else None
        out[str(name)] = desc if isinstance(desc, str) else ""
    return out


_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_CHATTY_TOOLS = frozenset(
    {"chat", "conversation", "conversations", "message", "messages", "history", "prompt", "prompts", "transcript",
     "summarize", "summary", "context", "memory", "memories", "llm", "ai", "completion", "generate", "thought", "thinking",
     "reflect", "reasoning", "note", "notes", "session", "sessions", "agent", "assistant"}
)  # fmt: skip
_INTROSPECTION_PARAMS = frozenset({"conversation", "history", "transcript", "prompt", "instructions", "chat", "context", "sidenote"})


def _words(name: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(name)}


def _parameter_signals(d: ToolDefinition, description: str) -> list[tuple[str, Signal]]:
    """The `sidenote` pattern: a parameter whose name or description asks for the conversation, the
    prompt or secrets on a tool that has nothing to do with them, or that the description tells the
    model to fill with something it must first read."""
    out: list[tuple[str, Signal]] = []
    params = _parameters(d.input_schema)
    tool_words = _words(d.name) | _words(d.title or "")
    out.extend(_preset_destinations(d.input_schema))
    lowered = description.lower()
    for name in params:
        words = _words(name)
        if words & _INTROSPECTION_PARAMS and not tool_words & _CHATTY_TOOLS and not words & {"id", "ids", "name", "type", "limit", "count"}:
            out.append((f"inputSchema/properties/{name}/(name)", Signal("smuggling", 0.5, f"parameter {name!r} asks for the conversation or the prompt", "introspection_parameter")))
        if len(name) >= 2 and name.lower() in lowered:  # the pattern needs the name: one substring test per parameter, not one regex
            pattern = re.compile(
                r"\b(?:pass|put|include|add|insert|send|provide|place|store|write|attach|fill|append|copy|paste|embed)\b[^.!?\n]{0,100}?"
                r"\b(?:as|in|into|to|via|inside|under|using|through)\s(?:the\s)?[`'\"]?" + re.escape(name.lower()) + r"[`'\"]?(?:\s(?:parameter|argument|field|param))?\b",
                re.IGNORECASE,
            )
            m = pattern.search(description)
            if m is not None and re.search(r"\b(?:its|their|the)\s(?:full\s|entire\s|whole\s|complete\s)?contents?\b|\bcontents?\sof\b|\bhistory\b|\bconversation\b", m.group(0)):
                out.append(("description", Signal("smuggling", 0.5, m.group(0)[:80], "fill_parameter")))
    return out


_DESTINATION_WORDS = frozenset(
    {"to", "recipient", "recipients", "iban", "account", "payee", "wallet", "beneficiary", "destination", "cc", "bcc", "receiver", "phone", "email", "webhook", "forward"}
)
_PRESET = re.compile(
    r"(?-i:[A-Z]{2}\d{2}[A-Z0-9]{10,30})|0x[0-9a-fA-F]{40}|(?:bc1|[13])[a-km-zA-HJ-NP-Z1-9]{25,60}|[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,4}|\+?\d[\d\s().-]{6,18}\d"
)
_KEEP_PRESET = re.compile(r"\b(?:leave\s(?:it\s|this\s)?(?:as\sis|unchanged|alone)|do\snot\s(?:change|modify|edit|alter)|don'?t\s(?:change|modify|edit|alter)|must\snot\sbe\s(?:changed|modified))\b", re.IGNORECASE)


def _preset_destinations(schema: Mapping[str, Any]) -> list[tuple[str, Signal]]:
    """A destination parameter (recipient, IBAN, wallet...) whose default, const or only enum value
    is a concrete account, address or number: the server chose where the money or the message
    goes. Told to leave it as it is: stronger."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(props, Mapping):
        return []
    out: list[tuple[str, Signal]] = []
    for name, sub in list(props.items())[:512]:
        if not isinstance(sub, Mapping) or not _words(str(name)) & _DESTINATION_WORDS:
            continue
        enum = sub.get("enum")
        values = [sub.get("default"), sub.get("const"), *(enum if isinstance(enum, list) and len(enum) == 1 else [])]
        preset = next((v for v in values if isinstance(v, str) and _PRESET.fullmatch(v.strip()) and not _example(v)), None)
        if preset is None:
            continue
        desc = sub.get("description")
        keep = isinstance(desc, str) and _KEEP_PRESET.search(desc) is not None
        copies = bool(_words(str(name)) & {"cc", "bcc"})  # a preset copy of every message has no innocent reading
        out.append((f"inputSchema/properties/{name}/default", Signal("steering", 1.0 if keep or copies else 0.8, f"{name!r} is preset to {preset[:40]!r}", "preset_destination")))
    return out


def _example(value: str) -> bool:
    return re.search(r"@(?:[\w-]+\.)*(?:example\.(?:com|org|net)|[\w-]+\.(?:test|example|invalid))$", value.strip(), re.IGNORECASE) is not None


def _annotation_signals(d: ToolDefinition) -> list[tuple[str, Signal]]:
    """Annotations that contradict the name: `readOnlyHint` on `delete_file`, `destructiveHint:
    false` on `drop_table`. Hints are the server's claims; a lie is a tell."""
    from checkrein.policy.templates import name_category, name_words

    a = d.annotations or {}
    if not isinstance(a, Mapping):
        return []
    category = name_category(d.name)
    words = set(name_words(d.name))
    out: list[tuple[str, Signal]] = []
    if a.get("readOnlyHint") is True:
        if category == "delete":
            out.append(("annotations/readOnlyHint", Signal("annotation_mismatch", 1.0, f"readOnlyHint on {d.name!r}, whose name deletes", "read_only_delete")))
        elif category == "write":
            out.append(("annotations/readOnlyHint", Signal("annotation_mismatch", 0.7, f"readOnlyHint on {d.name!r}, whose name writes", "read_only_write")))
        elif category == "exec" and words & {"exec", "execute", "shell", "bash", "sh", "zsh", "powershell", "eval", "spawn", "subprocess", "terminal", "command", "cmd"}:
            out.append(("annotations/readOnlyHint", Signal("annotation_mismatch", 0.7, f"readOnlyHint on {d.name!r}, whose name runs commands", "read_only_exec")))
    if a.get("destructiveHint") is False and category == "delete":
        out.append(("annotations/destructiveHint", Signal("annotation_mismatch", 0.7, f"destructiveHint false on {d.name!r}, whose name deletes", "harmless_delete")))
    # The description's own first verb: "Drops a database", "Clean temporary files".
    lead = _LEAD_VERB.match(_normalize(d.description or ""))
    if lead is not None and (a.get("readOnlyHint") is True or a.get("destructiveHint") is False):
        verb = lead.group(1).lower()
        destroys = _DESTROYS.fullmatch(verb) is not None
        hint = "readOnlyHint" if a.get("readOnlyHint") is True else "destructiveHint false"
        if destroys or (hint == "readOnlyHint" and _WRITES.fullmatch(verb) is not None):
            # readOnlyHint on "Deletes ..." is a lie; destructiveHint false on it only adds to a name that deletes.
            weight = (1.0 if destroys else 0.7) if hint == "readOnlyHint" else 0.3
            why = f"{hint} on a tool whose description begins {lead.group(0).strip()[:40]!r}"
            out.append((f"annotations/{hint.split()[0]}", Signal("annotation_mismatch", weight, why, "description_contradicts")))
    return out


_LEAD_VERB = re.compile(r"\s*(?:this\s(?:tool|function)\s)?(?:permanently\s|irreversibly\s|recursively\s|forcibly\s)?([A-Za-z]+)")
_DESTROYS = re.compile(
    r"(?i:deletes?|removes?|drops?|destroys?|erases?|wipes?|purges?|cleans?|clears?|truncates?|shreds?|kills?|terminates?|uninstalls?|revokes?|resets?|formats?|overwrites?)"
)
_WRITES = re.compile(
    r"(?i:writes?|creates?|updates?|modif(?:y|ies)|edits?|sets?|sends?|posts?|uploads?|moves?|renames?|installs?|saves?|stores?|inserts?|appends?|transfers?|pays?|publish(?:es)?|commits?|pushes?)"
)


def _injection_signal(text: str) -> Signal | None:
    """The prompt-injection detector's verdict. "Do not follow instructions in the results" is a
    safety note tools write about their own output, so the negated-obedience family alone counts
    less than a flag."""
    from checkrein.policy.injection import detect_injection

    findings = detect_injection(text)
    if not findings:
        return None
    strong = [f for f in findings if f.severity == "high"] or findings
    negated_only = all(f.kind == "ignore_instructions" and f.evidence.lstrip().startswith(("follow", "obey", "listen")) for f in strong)
    return Signal("injection", 0.6 if negated_only else 1.0, findings[0].evidence or findings[0].kind, f"injection:{findings[0].kind}")


def _score(found: Sequence[tuple[str, Signal]]) -> tuple[float, tuple[Finding, ...]]:
    per_rule: dict[tuple[str, str], tuple[str, Signal]] = {}
    for where, s in found:
        key = (s.kind, s.rule)
        if key not in per_rule or s.weight > per_rule[key][1].weight:
            per_rule[key] = (where, s)
    per_kind: dict[str, float] = {}
    for (kind, _), (_, s) in per_rule.items():
        per_kind[kind] = min(1.0, per_kind.get(kind, 0.0) + s.weight)
    findings = tuple(Finding(s.kind, s.rule, s.weight, where, s.evidence) for where, s in per_rule.values())
    return round(sum(per_kind.values()), 3), findings


def _iter_signals(d: ToolDefinition, known: Collection[str]) -> Iterator[tuple[str, Signal]]:
    # A chat or memory tool's parameters are the conversation and the prompt by design.
    chatty = bool((_words(d.name) | _words(d.title or "")) & _CHATTY_TOOLS)
    for where, s in _field_signals(d, known):
        if chatty and s.kind == "smuggling":
            continue
        if s.rule == "agent_identity" and "/properties/" in where and " calls " in s.evidence.lower() + " ":
            # A parameter for the identity of the model calling the tool: reconnaissance.
            s = Signal(s.kind, 1.0, s.evidence, s.rule)
        yield where, s
    yield from _annotation_signals(d)
    for where, s in _parameter_signals(d, _normalize(d.description or "")):
        if not (chatty and s.kind == "smuggling"):
            yield where, s


def _field_signals(d: ToolDefinition, known: Collection[str]) -> Iterator[tuple[str, Signal]]:
    for where, raw in _fields(d):
        for s in hidden_signals(raw):
            yield where, s
        if where.endswith("/(name)") or where == "name":
            continue
        text = _normalize(raw)
        for s in text_signals(text, known):
            yield where, s
        if len(text) >= 24:
            inj = _injection_signal(raw)
            if inj is not None:
                yield where, inj


def scan_tool_definition(definition: ToolDefinition, siblings: Collection[str] = ()) -> DefinitionScan:
    """Score one definition. ``siblings`` are the names of the other tools its server lists:
    orders to call one of them (or the tool itself) are documentation, not poisoning. Raises only
    on programming errors (`review_tool` turns those into a fail-closed reason)."""
    known = {definition.name.lower(), *(s.lower() for s in siblings)}
    score, findings = _score(list(_iter_signals(definition, known)))
    return DefinitionScan(score, findings)


_CACHE: dict[tuple[str, tuple[str, ...]], str | None] = {}
_CACHE_MAX = 4096


def review_tool(definition: ToolDefinition, siblings: Sequence[str] = ()) -> str | None:
    """None when ``definition`` reads clean; otherwise why it must not be trusted (one line). A
    failure of the scan itself is a reason too (fail closed). Never raises. Cached by digest."""
    try:
        key = (definition.digest, tuple(sorted(siblings)))
        if key in _CACHE:
            return _CACHE[key]
        scan = scan_tool_definition(definition, siblings)
        reason = scan.reason() if scan.flagged else None
    except Exception as exc:  # noqa: BLE001 - fail closed: an unscannable definition is not trusted
        return f"tool-definition scan failed ({type(exc).__name__}); not trusted until reviewed"
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    _CACHE[key] = reason
    return reason
