"""Short, secret-free, printable excerpts for `Finding.evidence`."""

from __future__ import annotations

__all__ = ["MAX_EVIDENCE", "excerpt"]

MAX_EVIDENCE = 80


def _printable(text: str) -> str:
    # Control characters would corrupt terminals and log lines; show them as escapes.
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def excerpt(text: str, start: int = 0, end: int | None = None) -> str:
    """Up to `MAX_EVIDENCE` printable characters around ``text[start:end]``, with secrets masked."""
    from .secrets import redact_secrets  # local: secrets imports nothing from here, avoid a cycle

    if end is None:
        end = len(text)
    pad = max(0, (MAX_EVIDENCE - (end - start)) // 2)
    lo = max(0, start - pad)
    hi = min(len(text), max(end, lo + MAX_EVIDENCE))
    window = text[lo:hi]
    masked, _ = redact_secrets(window)
    shown = _printable(masked)
    if len(shown) > MAX_EVIDENCE:
        shown = shown[: MAX_EVIDENCE - 1] + "…"
    return shown
