"""`checkrein._trie`: the word finder's starts and `LiteralStarts` on a small regex of its own."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from checkrein._trie import LiteralStarts, WordFinder


def test_word_finder_reports_overlapping_words_and_their_starts() -> None:
    finder = WordFinder(("s.", ".", "sk", "sk_live_"))
    assert finder.present("xs.y sk_live_") == {"s.", ".", "sk", "sk_live_"}
    assert finder.starts("xs.y sk_live_") == [1, 2, 5]
    assert finder.occurs("a.b") and not finder.occurs("abc")
    assert finder.starts("a\udc80s.") == [2, 3]  # a lone surrogate: one substring search per word
    assert finder.starts("é s.") == [2, 3]  # character offsets, not UTF-8 byte offsets


_KEYS = re.compile(r"(?i)(?<![a-z])(?:key|token)s?=\w+")
_STARTS = LiteralStarts(_KEYS, ("key", "token"))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["key", "KEY", "Token", "s", "=", "x1", "_", " ", "akey", "é", "\u212a"]), max_size=14), st.integers(0, 40))
def test_literal_starts_is_the_regex(pieces: list[str], pos: int) -> None:
    text = "".join(pieces)
    assert [m.span() for m in _STARTS.finditer(text)] == [m.span() for m in _KEYS.finditer(text)]
    got, want = _STARTS.searcher(text)(pos), _KEYS.search(text, pos)
    assert (got.span() if got else None) == (want.span() if want else None)
