"""Regex fragments the phrase table (`phrases.py`) builds its patterns from."""

from __future__ import annotations

_W = r"[\s,;:.!\-]+"  # separator between words
_AI = (
    r"(?:ai|a\.i\.|ai assistant|ai agent|ai model|assistant|language model|llm|large language model|"
    r"chatbot|chat bot|gpt|chatgpt|gpt-?\d[\w.-]*|claude|gemini|llama|copilot|mistral|bot|agent|model|"
    r"autonomous agent|email assistant|virtual assistant)"
)
# Where a sentence can start: text start, after sentence punctuation, or after quote/markup openers.
_START = r"(?:^|[.!?\n:;\"'`>*(\[{|\-]\s*)"
_RESPONSE = r"(?:response|answer|reply|output|responses|answers|replies|message|summary)"
_RESPONSE_VERBS = (
    r"(?:add|include|integrate|insert|incorporate|mention|append|prepend|embed|use|replace|convert|substitute|"
    r"remove|group|combine|scramble|rearrange|misspell|introduce|jumble|tease|hint|suggest|promote|recommend|"
    r"emphasi[sz]e|stress|highlight|encourage|express|invite|write|translate|encode|reverse|format|end|start|"
    r"begin|conclude|sign|put|modify|augment|enhance|alter|adjust|change|rewrite|render|provide|give|deliver|"
    r"compose|make|ensure|keep|limit|avoid|never|always|only|anagram|capitali[sz]e|spell|structure|present|"
    r"frame|phrase|word|attach|link|direct|redirect|advertise|tell|inform|warn|urge|ask|state|claim|say|"
    r"insist|praise|criticise|criticize|cite|quote|close|finish|respond|reply|answer|do\snot|don't)"
)
# Verbs that reshape an answer: "modify your response ..." is never ordinary correspondence,
# unlike "provide your answer by Friday".
_SHAPING_VERBS = (
    r"(?:modify|augment|enhance|alter|adjust|change|rewrite|render|format|structure|end|start|begin|conclude|"
    r"sign|scramble|translate|encode|reverse|misspell|capitali[sz]e|limit|phrase|word|frame|present|spell|close|"
    r"finish|rearrange|jumble|anagram|group|combine|convert|replace|use|remove|introduce|include|add|integrate|"
    r"insert|incorporate|embed|append|prepend)"
)
_TASK = r"(?:task|request|job|assignment|query|question|instructions?|work|goal|mission|objective)"
