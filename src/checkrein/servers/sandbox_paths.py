"""File names the `sandbox` server accepts, and the directory they live in.

A name is one plain file name inside the sandbox directory: no separators, no `..`, no `~`, `$`,
`|`, `;`, `&`, no slash lookalikes, no control characters. The name is checked as given, after
URL-decoding (up to three rounds, so `%252e%252e%252f` is caught; an overlong UTF-8 encoding
such as `%c0%ae` is refused outright) and after Unicode NFKC folding (fullwidth `．．／`), and the
resolved path (symlinks followed) is re-checked to sit directly inside the sandbox.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path
from urllib.parse import unquote

from ._run import state_dir

__all__ = [
    "MAX_NAME_CHARS",
    "PROTECTED_FILES",
    "SEED_FILES",
    "PathRefused",
    "check_filename",
    "resolve_in_sandbox",
    "sandbox_dir",
    "seed_sandbox",
]

MAX_NAME_CHARS = 128
PROTECTED_FILES = frozenset({"important.txt", "config.ini"})
"""Never deleted nor overwritten, whatever the arguments say."""

SEED_FILES: dict[str, str] = {
    "important.txt": (
        "Quarterly access review\n"
        "- Rotate the deploy key before 15 December.\n"
        "- Remove the contractor accounts that expired in November.\n"
    ),
    "config.ini": "[service]\nname = demo-api\nport = 8080\nlog_level = info\n",
    "notes.txt": "Shopping list: oat milk, rice, green tea.\nCall the dentist on Thursday.\n",
    "readme.md": "# Sandbox\nFiles in this folder are the only ones the sandbox server can read or write.\n",
}

# Slash lookalikes that NFKC leaves alone: inert on Linux, but a name holding one was written to
# look like a path.
_LOOKALIKE_SEPARATORS = ("\u2215", "\u2044", "\u2216", "\u29f5", "\u29f8", "\u29f9")
_FORBIDDEN = ("/", "\\", "..", "~", "$", "|", ";", "&", ":", "`", "<", ">", "*", "?", "\x00", *_LOOKALIKE_SEPARATORS)


class PathRefused(ValueError):
    """A file name the sandbox refuses; the message is safe to show to a client."""


def sandbox_dir() -> Path:
    """``$CHECKREIN_SANDBOX_DIR``, else ``<state dir>/sandbox``."""
    raw = os.environ.get("CHECKREIN_SANDBOX_DIR")
    return Path(raw) if raw else state_dir() / "sandbox"


def seed_sandbox(root: Path) -> None:
    """Create ``root`` and the seed files that are missing; existing files are left alone."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in SEED_FILES.items():
        target = root / name
        if not target.exists():
            target.write_text(text, encoding="utf-8")


def _variants(name: str) -> list[str]:
    """The name as given, each URL-decoding round, and the NFKC fold of each; raises
    `PathRefused` when a round decodes to bytes that are not UTF-8 (overlong ``%c0%ae``)."""
    seen = [name]
    current = name
    for _ in range(3):
        try:
            decoded = unquote(current, errors="strict")
        except UnicodeDecodeError:
            raise PathRefused("refused: filename holds an invalid (e.g. overlong) UTF-8 encoding") from None
        if decoded == current:
            break
        seen.append(decoded)
        current = decoded
    return seen + [unicodedata.normalize("NFKC", v) for v in seen]


def check_filename(name: str) -> str:
    """Return ``name`` when it is a plain file name; raise `PathRefused` otherwise. Pure."""
    if not isinstance(name, str) or not name.strip():
        raise PathRefused("refused: filename is empty")
    if len(name) > MAX_NAME_CHARS:
        raise PathRefused(f"refused: filename is longer than {MAX_NAME_CHARS} characters")
    for variant in _variants(name):
        if any(ch in variant for ch in _FORBIDDEN):
            raise PathRefused(
                "refused: filename must be a plain name inside the sandbox "
                "(no path separators, '..', '~', '$', '|', ';', '&' or wildcards)"
            )
        if any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in variant):
            raise PathRefused("refused: filename contains control characters")
        if variant.strip() in (".", ""):
            raise PathRefused("refused: not a file name")
    if name.startswith("-"):
        raise PathRefused("refused: filename may not start with '-'")
    return name


def resolve_in_sandbox(root: Path, name: str) -> Path:
    """The absolute path of ``name`` inside ``root``, checked by name and again after resolving
    symlinks; raises `PathRefused`."""
    check_filename(name)
    base = root.resolve()
    target = (base / name).resolve()
    if target.parent != base:
        raise PathRefused("refused: the resolved path leaves the sandbox")
    return target
