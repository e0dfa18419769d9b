"""Phrase signals: regexes behind cheap substring prefilters, each with a weight.

A weight of 1.0 flags a text on its own; smaller weights only count together with other signals
near them (see `checkrein.policy.injection.detect`). Every regex is bounded (no nested
quantifiers, bounded gaps), so matching stays linear in the text.
"""

from __future__ import annotations

from .markers import MARKERS
from .phrase import NeedleIndex, Phrase
from .phrase import phrase as _p
from .vocabulary import _AI, _RESPONSE, _RESPONSE_VERBS, _SHAPING_VERBS, _START, _TASK, _W

__all__ = ["PHRASES", "Phrase", "NeedleIndex"]

PHRASES: tuple[Phrase, ...] = (
    *MARKERS,
    # --- text addressed to the model
    _p(
        "directive_to_model",
        0.9,
        ("to you", "for you"),
        rf"(?:to|for) you{_W}(?:the |my |our |dear )?{_AI}\b",
    ),
    _p(
        "directive_to_model",
        0.7,
        ("message from", "instruction from", "note from", "request from", "notice from"),
        r"(?:important|urgent|critical|new|special|private|secret|priority)\s(?:message|instruction|note|notice|"
        r"request|update)s?\sfrom\s(?:me|the user|your user|your owner|your developer|your creator|the admin|"
        r"the developer|the system|openai|anthropic)\b",
    ),
    _p(
        "directive_to_model",
        0.8,
        ("before you",),
        rf"before\syou\s(?:can\s|could\s|start\s|begin\s|continue\s|proceed\s|are able to\s)?(?:to\s)?"
        rf"(?:solve|complete|do|continue|start|finish|answer|proceed|perform|carry out|work on|respond|reply|"
        rf"summari[sz]e|handle|execute|address|tackle|return|fulfil|fulfill)\w*\s(?:with\s)?(?:the|your|this|my|"
        rf"that|any|the original|the user'?s?)\s(?:\w+\s)?{_TASK}",
    ),
    _p(
        "directive_to_model",
        0.8,
        ("gave you", "given you", "asked you", "assigned you", "assigned to you", "given to you"),
        rf"{_TASK}\s(?:that\s|which\s)?(?:i|the user|they|he|she|your user)\s(?:have\s|had\s)?"
        r"(?:gave|given|asked|assigned)(?:\sto)?\syou",
    ),
    _p(
        "directive_to_model",
        0.9,
        ("if you are", "if you're"),
        r"if\syou(?:\sare|'re)\s(?:an?\s|the\s)?(?:ai|a\.i\.|llm|language model|chatbot|bot|automated|"
        r"assistant|ai assistant|agent|model|gpt|claude|gemini|large language model|machine)\b",
    ),
    _p(
        "directive_to_model",
        0.9,
        ("reading this", "processing this", "who reads", "that reads", "any ai", "all ai"),
        rf"(?:{_AI}s?\s(?:reading|processing|parsing|summari[sz]ing|analy[sz]ing)\sthis|"
        rf"(?:any|all|every)\s(?:ai|llm|language model|assistant|agent|model|bot)s?\s(?:that|which|who)\s"
        rf"(?:reads?|process(?:es)?|sees?|parses?))",
    ),
    _p(
        "directive_to_model",
        0.8,
        (
            "dear",
            "hey",
            "hi ",
            "hello",
            "attention",
            "note to",
            "note for",
            "message to",
            "message for",
            "instructions for",
            "calling",
        ),
        r"(?:dear|hey|hi|hello|attention|note\sto|note\sfor|message\sto|message\sfor|instructions?\sfor|"
        r"calling)\s(?:the\s|all\s|any\s|my\s)?(?:ai|a\.i\.|ai assistant|ai agent|language model|llm|chatbot|"
        r"assistant|gpt|chatgpt|claude|gemini|copilot|llama)s?\b(?!\s(?:manager|director|professor|principal|"
        r"editor|coach|researcher|engineer|team))",
    ),  # fmt: skip
    _p(
        "directive_to_model",
        0.8,
        (
            "your new",
            "your real",
            "your true",
            "your actual",
            "your updated",
            "your revised",
            "your only",
            "your primary",
            "your sole",
            "your next",
            "your current",
        ),
        r"your\s(?:new|real|true|actual|updated|revised|only|primary|sole|next|current)\s"
        r"(?:task|instructions?|goal|objective|mission|directive|priority|orders|purpose|prompt)\b",
    ),
    _p(
        "directive_to_model",
        0.6,
        ("instruction", "directive", "order"),
        r"(?:new|updated|revised|additional|overriding|override|secret|hidden|real|true|actual|urgent|"
        r"important|following|emergency|priority)\s(?:instructions?|directives?|orders)\s*(?::|!|-|\n|follow)",
    ),
    _p(
        "directive_to_model",
        0.8,
        (
            "you are now",
            "you're now",
            "from now on",
            "you are no longer",
            "you're no longer",
            "you will now",
            "you must now",
            "you should now",
            "you shall now",
            "you now",
        ),
        r"(?:you\sare\snow|you're\snow|you\s(?:will|must|should|shall)\snow|from\snow\son,?\syou|"
        r"you\sare\sno\slonger|you're\sno\slonger|you\snow\s(?:have|are|must|need))\b",
    ),
    _p(
        "directive_to_model",
        0.9,
        (
            "do not tell",
            "don't tell",
            "do not inform",
            "don't inform",
            "do not mention",
            "don't mention",
            "without telling",
            "without informing",
            "without notifying",
            "without asking",
            "without alerting",
            "do not reveal",
            "don't reveal",
            "do not notify",
            "don't notify",
            "do not let",
            "don't let",
            "do not alert",
            "never tell",
            "never mention",
            "never reveal",
            "keep this",
        ),
        r"(?:(?:do\snot|don't|never)\s(?:tell|inform|mention|reveal|notify|let|alert|show|disclose)|"
        r"without\s(?:telling|informing|notifying|asking|alerting|letting|consulting|confirming\swith)|"
        r"keep\sthis\s(?:secret|hidden|confidential)\sfrom)\s(?:this\sto\s|it\sto\s|anything\sto\s)?"
        r"(?:the\s|your\s)?(?:user|human|operator|owner|requester)\b",
    ),
    _p(
        "directive_to_model",
        0.9,
        (
            "do not mention",
            "don't mention",
            "do not reveal",
            "don't reveal",
            "never mention",
            "never reveal",
            "do not disclose",
            "don't disclose",
        ),
        r"(?:do\snot|don't|never)\s(?:mention|reveal|disclose|acknowledge|repeat|explain)\s(?:this|these|the|"
        r"that)\s(?:instructions?|message|note|step|steps|request|directive|injection|text)",
    ),
    _p(
        "directive_to_model",
        0.9,
        (
            "system prompt",
            "initial prompt",
            "hidden prompt",
            "original prompt",
            "system instructions",
            "developer message",
            "system message",
        ),
        r"(?:reveal|print|output|show|repeat|leak|disclose|display|return|echo|send|write\sout|tell\sme)\s"
        r"(?:me\s)?(?:your|the|its|all)\s(?:full\s|entire\s|exact\s|complete\s)?(?:system\sprompt|initial\s"
        r"prompt|hidden\sprompt|original\sprompt|system\sinstructions|developer\smessage|system\smessage)",
    ),
    _p(
        "directive_to_model",
        0.6,
        ("adhere", "comply", "obey", "follow"),
        r"(?:strictly|immediately|exactly|carefully|only|must|silently|secretly)\s(?:adhere|comply|obey|follow)"
        r"(?:\sto|\swith)?\s(?:the\s|these\s|this\s|my\s)?(?:following|instructions?|directives?|below|"
        r"new|command|order)",
    ),
    _p(
        "directive_to_model",
        0.7,
        (
            "jailbreak",
            "developer mode",
            "dan mode",
            "do anything now",
            "god mode",
            "unrestricted mode",
            "no restrictions",
            "without restrictions",
            "without any restrictions",
        ),
        r"jailbreak|developer\smode|dan\smode|do\sanything\snow|god\smode|unrestricted\smode|"
        r"(?:with\s)?no\s(?:restrictions|filters|limitations|guidelines)|without\s(?:any\s)?"
        r"(?:restrictions|filters|limitations|guidelines)",
    ),
    _p(
        "directive_to_model",
        0.5,
        ("as an ai", "as a language model", "as an assistant", "as an llm", "as a large language"),
        r"as\s(?:an\sai|a\slanguage\smodel|an\sai\slanguage\smodel|an\sassistant|an\sllm|a\slarge\slanguage\s"
        r"model)\b",
    ),
    _p(
        "directive_to_model",
        0.5,
        ("pretend", "act as", "roleplay", "role-play", "role play", "play the role", "simulate"),
        r"(?:pretend\s(?:to\sbe|you\sare|that\syou)|act\sas\s(?:if\syou|though\syou|an?\s(?:unrestricted|"
        r"unfiltered|evil|malicious|different))|(?:roleplay|role-play|role\splay)\sas|play\sthe\srole\sof|"
        r"simulate\s(?:being|an?\s))",
    ),
    _p(
        "directive_to_model",
        0.4,
        ("instead", "rather than"),
        rf"(?:instead\sof|rather\sthan)\s(?:doing\s|answering\s|completing\s|solving\s|following\s)?"
        rf"(?:the|your|my|the\suser'?s?)\s(?:original\s|current\s|initial\s|previous\s|actual\s|given\s)?"
        rf"{_TASK}",
    ),
    _p(
        "directive_to_model",
        0.3,
        ("instead",),
        r"\s(?:do|perform|complete|execute)\s.{1,300}?\sinstead\s*[.!]",
    ),
    _p(
        "directive_to_model",
        0.3,
        ("after you", "once you"),
        r"(?:after|once)\syou(?:'ve|\shave)?\s(?:do|did|done|complete|completed|finish|finished)\s(?:that|this|it)",
    ),
    _p(
        "directive_to_model",
        0.5,
        (
            "wants you",
            "would like you",
            "asked you",
            "needs you",
            "requested you",
            "requests that you",
            "instructed you",
            "authori",
        ),
        r"(?:the|your)\s(?:user|owner|admin|administrator|developer|boss|operator)\s(?:\w+\s)?(?:wants|would\slike|"
        r"has\sasked|asked|needs|requested|requests\sthat|instructed|authori[sz]ed|has\sauthori[sz]ed)\s(?:you|"
        r"the\s(?:ai|assistant|agent|model))\b",
    ),
    _p(
        "directive_to_model",
        0.7,
        (
            "ai,",
            "ais,",
            "assistant,",
            "assistants,",
            "llm,",
            "llms,",
            "model,",
            "chatbot,",
            "gpt,",
            "claude,",
            "gemini,",
        ),
        rf"{_START}(?:ai|assistant|ai\sassistant|llm|language\smodel|chatbot|chatgpt|gpt|claude|gemini)s?,\s"
        r"(?:you\s)?(?:must|should|need\sto|have\sto|are\s(?:required|instructed|ordered|requested)\sto|will|shall|"
        r"please)\b",
    ),
    _p(
        "directive_to_model",
        0.6,
        (
            "nuevas instrucciones",
            "nouvelles instructions",
            "nouvelles consignes",
            "neue anweisung",
            "nuove istruzioni",
            "novas instruções",
            "novas instrucoes",
            "новые инструкции",
            "новая инструкция",
            "新的指令",
            "新指令",
            "新的指示",
            "新しい指示",
            "새로운 지시",
            "새 지시",
        ),
        r"nuevas\sinstrucciones|nouvelles\s(?:instructions|consignes)|neue\sanweisung|nuove\sistruzioni|"
        r"novas\sinstru(?:ções|coes)|новые\sинструкции|новая\sинструкция|新的?指[令示]|新しい指示|새로운?\s?지시",
        "text",
    ),
    _p(
        "directive_to_model",
        0.9,
        (
            "antes de",
            "avant de",
            "bevor du",
            "bevor sie",
            "prima di",
            "перед тем как",
            "在你",
            "在您",
            "前に",
        ),
        r"(?:antes\sde\s(?:resolver|completar|hacer|realizar|continuar\scon)\sla\starea|avant\sde\s(?:résoudre|"
        r"resoudre|accomplir|faire|terminer)\sla\stâche|bevor\s(?:du|sie)\sdie\saufgabe|prima\sdi\s(?:risolvere|"
        r"completare|svolgere)\sil\scompito|перед\sтем\sкак\s(?:решить|выполнить)\sзадач|在(?:你|您)(?:完成|解决|"
        r"执行)(?:这个|该|我给你的)?任务之前|タスクを(?:解決|完了|実行)する前に)",
        "text",
    ),
    _p(
        "directive_to_model",
        0.6,
        (
            "before summari",
            "before answering",
            "before responding",
            "before replying",
            "before continuing",
            "before proceeding",
            "before doing anything",
            "before anything else",
            "before you do anything",
        ),
        r"before\s(?:summari[sz]ing|answering|responding|replying|continuing|proceeding|doing\sanything(?:\selse)?|"
        r"anything\selse|you\sdo\sanything(?:\selse)?)\b",
    ),
    _p(
        "directive_to_model",
        0.7,
        (
            "when you read",
            "when you see",
            "when you process",
            "when you summari",
            "when you encounter",
            "whoever reads",
            "whoever is reading",
            "once you read",
            "as soon as you read",
            "upon reading",
        ),
        r"(?:when|once|as\ssoon\sas)\syou\s(?:read|see|process|summari[sz]e|encounter|parse)\sthis|"
        r"whoever\s(?:reads|is\sreading)\sthis|upon\sreading\sthis",
    ),
    _p(
        "directive_to_model",
        0.8,
        ("stop what you", "stop everything", "stop all", "halt", "abort"),
        r"(?:stop|halt|abort|cease)\s(?:what(?:ever)?\syou(?:'re|\sare)\sdoing|everything\syou(?:'re|\sare)\sdoing|"
        r"all\s(?:current|previous|other)\s(?:tasks?|actions?|activities|work))",
    ),
    _p(
        "directive_to_model",
        0.7,
        (
            "changed their mind",
            "changed his mind",
            "changed her mind",
            "user now wants",
            "user actually wants",
            "user really wants",
            "this is the user",
            "message from the user",
            "i am the user",
            "as the user",
        ),
        r"(?:the\suser\s(?:has\s)?changed\s(?:their|his|her)\smind|(?:the\s)?user\s(?:now|actually|really)\s"
        r"(?:wants|needs|asks)|this\sis\s(?:the|your)\suser(?:\sspeaking)?\b|message\sfrom\sthe\suser\s*:|"
        r"i\sam\s(?:the|your)\suser\b|as\sthe\suser,?\si\s(?:want|instruct|authori[sz]e|need|order))",
    ),
    _p(
        "role_marker",
        0.8,
        ("override", "admin mode", "maintenance mode", "debug mode", "god mode"),
        r"(?:system|admin|administrator|security|developer|emergency|priority|root)\s(?:override|mode\sactivated|"
        r"access\sgranted)|(?:admin|maintenance|debug)\smode\s(?:on|enabled|activated|engaged)",
    ),
    _p(
        "directive_to_model",
        0.8,
        (
            "authori",
            "permitted to",
            "allowed to",
            "required to",
            "instructed to",
            "expected to",
            "supposed to",
        ),
        r"(?:the\s|this\s|any\s)?(?:ai|assistant|ai\sassistant|agent|ai\sagent|model|llm|chatbot|bot)\s(?:is|are)\s"
        r"(?:now\s|hereby\s|also\s)?(?:authori[sz]ed|permitted|allowed|required|instructed|expected|supposed)\sto\b",
    ),
    _p(
        "directive_to_model",
        0.5,
        (
            "you are required",
            "you are instructed",
            "you are expected",
            "you are obligated",
            "you are ordered",
            "you are authori",
            "you are permitted",
            "you are allowed",
            "you're required",
            "you're instructed",
        ),
        r"you(?:\sare|'re)\s(?:now\s|hereby\s|also\s)?(?:required|instructed|expected|obligated|ordered|"
        r"authori[sz]ed|permitted|allowed)\sto\b",
    ),
    _p(
        "directive_to_model",
        0.8,
        ("supersede", "overrides", "takes precedence", "take precedence", "replaces"),
        r"(?:(?:supersed|overrid|replac)es|takes?\sprecedence\sover)\s(?:the\s|any\s|all\s|your\s)?"
        r"(?:(?:user'?s?|previous|prior|original|other|earlier|initial|current)\s)+(?:instructions?|requests?|"
        r"tasks?|prompts?|directives?|guidelines|rules|orders|commands)\b",
    ),
    _p(
        "directive_to_model",
        0.6,
        ("priority instruction", "priority directive", "priority task", "priority order", "priority command"),
        r"(?:higher|highest|top|high|maximum)[-\s]priority\s(?:instruction|directive|task|order|command)s?",
    ),
    _p(
        "directive_to_model",
        0.6,
        (
            "do not summar",
            "don't summar",
            "do not translate",
            "don't translate",
            "do not answer",
            "don't answer",
            "do not respond to",
            "don't respond to",
            "do not process",
            "don't process",
            "do not analy",
            "don't analy",
        ),
        r"(?:do\snot|don't)\s(?:summari[sz]e|translate|answer|respond\sto|process|analy[sz]e)\s(?:this|the|that)\s"
        r"(?:email|document|text|message|page|file|content|question|request)",
    ),
    _p(
        "directive_to_model",
        0.4,
        ("instead",),
        r"instead,?\s(?:you\s(?:should|must|will|need\sto)\s|please\s|just\s)?(?:reply|respond|send|forward|write|"
        r"email|call|delete|transfer|post|upload|share|output|print|say)\b",
    ),
    # --- tool-use directives
    _p(
        "tool_directive",
        0.7,
        (
            " tool",
            " function",
            "tool `",
            "function `",
            "following arguments",
            "with the arguments",
            "with arguments",
        ),
        r"(?:(?:use|call|invoke|run|execute|trigger)\s(?:the\s)?(?:tool|function|api|action)\s[`'\"]?[\w.-]+|"
        r"(?:use|call|invoke|run|execute|trigger)\s(?:the\s)?[`'\"]?[\w.-]{3,40}[`'\"]?\s(?:tool|function)\b|"
        r"(?:use|call|invoke|run|execute)\s`[\w.-]+`|with\sthe\s(?:following\s)?arguments?\s*[:{(`])",
    ),
    # --- directions for the reader's own answer: data has no business shaping the reply
    _p(
        "response_directive",
        1.0,
        (
            "your response",
            "your answer",
            "your reply",
            "your output",
            "your responses",
            "your answers",
            "your replies",
            "your message",
            "your summary",
        ),
        rf"{_START}(?:please\s|also\s|additionally,?\s|and\s|now\s)?"
        rf"(?:{_SHAPING_VERBS}\s(?:all\s|each\s|every\s)?your\s(?:\w+\s)?{_RESPONSE}\b|"
        rf"(?:provide|give|write|compose|deliver)\s(?:all\s)?your\s(?:\w+\s)?{_RESPONSE}\s(?:using|without)\b|"
        rf"{_RESPONSE_VERBS}\b(?!\s(?:your|us|me)\b)"
        rf"(?:[^.!?\n]|[.!?](?=\S)){{0,160}}?\byour\s(?:\w+\s)?{_RESPONSE}\b)",
    ),
    _p(
        "response_directive",
        1.0,
        ("your response", "your answer", "your reply", "your output"),
        rf"{_START}(?:in|within|throughout|for|at the (?:end|start|beginning) of)\syour\s"
        rf"(?:next\s|final\s)?{_RESPONSE},",
    ),
    _p(
        "response_directive",
        0.6,
        ("respond", "reply", "answer", "write"),
        r"(?:respond|reply|answer|write)\s(?:only\s|exclusively\s|entirely\s)?(?:in|using|with)\s"
        r"(?:base64|rot13|hex|emojis?|all\scaps|uppercase|pig\slatin|rhymes?|morse|binary|reverse)",
    ),
    _p(
        "directive_to_model",
        0.9,
        (
            "irrelevant",
            "outdated",
            "obsolete",
            "fake",
            "a test",
            "cancelled",
            "canceled",
            "void",
            "no longer",
        ),
        r"(?:the\s)?(?:above|previous|preceding|prior|earlier|original|foregoing)\s(?:text|content|document|"
        r"email|message|instructions?|context|task|prompt|data|information|request)s?\s(?:is|was|are|were|has been|"
        r"have been)\s(?:now\s)?(?:irrelevant|outdated|obsolete|fake|wrong|a\stest|cancell?ed|void|invalid|"
        r"no\slonger\s(?:valid|relevant|needed|applicable))",
    ),
    _p(
        "role_marker",
        0.6,
        ("end of", "begin", "start of"),
        r"(?:-{2,}|={2,}|\*{2,}|#{2,}|\[|<)\s*(?:end\sof\s(?:the\s)?(?:email|document|context|data|text|input|"
        r"tool\soutput|user\sinput|file|message|conversation|search\sresults?)|(?:begin|start)\s(?:of\s)?(?:new\s)?"
        r"(?:instructions?|system\sprompt|admin\s(?:mode|override)|prompt))",
    ),
    _p("directive_to_model", 0.6, ("pwned", "pwn3d"), r"\bpwn(?:e|3)?d\b"),
    # --- urgency and pressure
    _p(
        "urgency",
        0.3,
        ("important", "urgent", "attention", "warning", "critical", "alert"),
        r"(?:important|urgent|attention|warning|critical|alert|immediate action)\s*(?:!{2,}|:\s*!|!\s*!)",
        "text",
        "urgency",
    ),
    _p(
        "urgency",
        0.2,
        ("important", "urgent", "immediately", "right now", "asap"),
        r"\b(?:very\simportant|extremely\simportant|urgent(?:ly)?|immediately|right\snow|asap|top\spriority)\b",
        "folded",
        "urgency",
    ),
)


NEEDLES = NeedleIndex(PHRASES)
