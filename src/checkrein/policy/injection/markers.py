"""Fake role, system and turn markers: text pretending to be the conversation's own structure.

Chat-template tokens, `[SYSTEM]`-style labels, closing tags of tool output, `Human:` /
`Assistant:` turns. Matched on the `text` view, where `|` and `#` are still themselves.
"""

from __future__ import annotations

from .phrase import Phrase
from .phrase import phrase as _p

__all__ = ["MARKERS"]

MARKERS: tuple[Phrase, ...] = (
    _p(
        "role_marker",
        1.0,
        ("<|", "[inst]", "[/inst]", "<<sys>>", "<start_of_turn>", "<end_of_turn>"),
        r"<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id|"
        r"begin_of_text|end|im_sep|tool|ipython)\|>|\[/?inst\]|<</?sys>>|<(?:start|end)_of_turn>",
        "text",
    ),
    _p(
        "role_marker",
        1.0,
        ("system_message", "system message", "system prompt", "[system", "(system", "{system"),
        r"#{1,6}\s*\(?\s*system[_ ](?:message|prompt|instructions?|override|note)\s*\)?|"
        r"[\[({]\s*(?:system|sys|admin|administrator|developer|root|system[_ ]message|system[_ ]prompt|"
        r"system[_ ]override|system[_ ]instruction)\s*[\])}]\s*:?",
        "text",
    ),
    _p(
        "role_marker",
        1.0,
        ("</", "<tool", "<function", "<system", "<instruction", "<admin", "<assistant"),
        r"</(?:tool_result|tool_response|tool_output|function_results?|function_response|search_results?|"
        r"tool_call_result|user_query|context|untrusted_data|external_data|data)>|"
        r"<(?:system|system_prompt|system_message|instructions?|admin|assistant|new_instructions)>",
        "text",
    ),
    _p(
        "role_marker",
        0.6,
        ("###", "instruction", "response:"),
        r"(?:^|\n)\s*#{2,4}\s*(?:instruction|system|new instruction|task|response)s?\s*:?\s*(?:\n|$)",
        "text",
    ),
    _p(
        "role_marker",
        0.6,
        (
            "<information>",
            "<important",
            "<instruction",
            "<admin",
            "<note",
            "<secret",
            "<hidden",
            "<urgent",
            "<message",
            "<task",
            "<override",
        ),
        r"<(?:information|important|important_instructions|instructions?|admin|note_to_(?:ai|assistant|model)|"
        r"secret|hidden|urgent|message|task|override)>",
        "text",
    ),  # fmt: skip
    _p("role_marker", 0.4, ("system:",), r"(?:^|\n)\s*(?:\*\*)?system(?:\*\*)?\s*:\s*\S", "text"),
    _p(
        "turn_marker",
        0.6,
        ("human:",),
        r"(?:^|\n)\s*(?:\*\*)?human(?:\*\*)?\s*:\s*\S",
        "text",
    ),
    _p("turn_marker", 0.35, ("user:",), r"(?:^|\n)\s*(?:\*\*)?user(?:\*\*)?\s*:\s*\S", "text"),
    _p(
        "turn_marker",
        0.6,
        ("assistant:", "ai:"),
        r"(?:^|\n)\s*(?:\*\*)?(?:assistant|ai)(?:\*\*)?\s*:\s*\S",
        "text",
    ),
)
