"""`trie_regex`: one regex for a set of literal words, factored as a trie.

Shared by the secrets analyzer (`policy/analyzers/secrets.py`) and the audit's built-in secret
prefilter (`audit/secrets.py`), which may not import each other. Python's `re` tries the
alternatives of a flat `a|b|c` one by one at every position; a trie costs one character test per
branch instead (~2.5x faster measured on tool-result text).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["trie_regex"]


def trie_regex(words: Iterable[str]) -> str:
    """A regex matching, at each position, the longest of ``words`` that starts there."""
    trie: dict[str, Any] = {}
    for w in words:
        node = trie
        for c in w:
            node = node.setdefault(c, {})
        node[""] = {}

    def build(node: dict[str, Any]) -> str:
        branches = [re.escape(c) + build(child) for c, child in sorted(node.items()) if c]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if "" in node:  # a word ends here: prefer the longer words below, else stop
            return (body if len(branches) > 1 else "(?:" + body + ")") + "?"
        return body

    return build(trie)
