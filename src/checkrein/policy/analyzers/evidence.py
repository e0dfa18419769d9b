"""Short, secret-free, printable excerpts for `Finding.evidence`."""

from __future__ import annotations

__all__ = ["MAX_EVIDENCE", "excerpt"]

MAX_EVIDENCE = 80
_CONTEXT = 512
"""Characters redacted around the excerpt, so a secret cut by the excerpt's edge is still recognized."""


def _printable(text: str) -> str:
    # Control characters would corrupt terminals and log lines; show them as escapes.
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def excerpt(text: str, start: int = 0, end: int | None = None) -> str:
    """Up to `MAX_EVIDENCE` printable characters around ``text[start:end]``, with secrets masked.

    Secrets are found in a wider window than the excerpt, so one that straddles the excerpt's edge
    is masked whole rather than shown in part."""
    from .secrets import find_secrets  # local: secrets imports nothing from here, avoid a cycle

    if end is None:
        end = len(text)
    pad = max(0, (MAX_EVIDENCE - (end - start)) // 2)
    lo = max(0, start - pad)
    hi = min(len(text), max(end, lo + MAX_EVIDENCE))
    wide_lo = max(0, lo - _CONTEXT)
    wide = text[wide_lo : min(len(text), hi + _CONTEXT)]
    pieces: list[str] = []
    pos = lo - wide_lo
    stop = hi - wide_lo
    for sp in find_secrets(wide):
        if sp.end <= pos or sp.start >= stop:
            continue
        if sp.start > pos:
            pieces.append(wide[pos : sp.start])
        pieces.append(f"[REDACTED:{sp.kind}]")
        pos = max(pos, sp.end)
    if pos < stop:
        pieces.append(wide[pos:stop])
    shown = _printable("".join(pieces))
    if len(shown) > MAX_EVIDENCE:
        shown = shown[: MAX_EVIDENCE - 1] + "…"
    return shown
