"""HTML from strings, safely: `esc` for every value that came from the log, `Html` for markup.

Audit records hold attacker-controlled strings (tool arguments, results, reasons, names), so every
value goes through `esc` before it meets markup; only functions of this package build `Html`.
Control and bidirectional-formatting characters are shown as visible ``<U+202E>`` marks, so a
record cannot reorder or hide text on the screen (Trojan Source).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, NewType
from urllib.parse import quote, urlencode

__all__ = ["Html", "attr", "esc", "join", "layout", "pretty_json", "url"]

Html = NewType("Html", str)
"""Markup built by this package: escaped values inside tags of ours."""

_INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u115f\u1160\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufeff\ufff9-\ufffb]"
)


def _mark(m: re.Match[str]) -> str:
    return f"\x00{ord(m.group(0)):04X}\x01"


def esc(value: object) -> Html:
    """Text-safe HTML of ``value`` (``str()`` of it), invisible characters made visible."""
    text = value if isinstance(value, str) else str(value)
    if _INVISIBLE.search(text) is None:
        return Html(html.escape(text, quote=True))
    marked = html.escape(_INVISIBLE.sub(_mark, text), quote=True)
    return Html(marked.replace("\x00", '<span class="ctl">&lt;U+').replace("\x01", "&gt;</span>"))


def attr(value: object) -> Html:
    """Attribute-safe HTML of ``value``: like `esc`, the marks as plain text."""
    text = value if isinstance(value, str) else str(value)
    return Html(html.escape(_INVISIBLE.sub(lambda m: f"<U+{ord(m.group(0)):04X}>", text), quote=True))


def join(parts: Iterable[Html], sep: str = "") -> Html:
    return Html(sep.join(parts))


def url(base: str, path: str = "/", params: Mapping[str, object] | None = None) -> Html:
    """An attribute-safe URL under ``base`` (the mount prefix); empty parameters are left out."""
    query = {k: str(v) for k, v in (params or {}).items() if v is not None and v != ""}
    full = base + quote(path, safe="/") + ("?" + urlencode(query) if query else "")
    return Html(html.escape(full, quote=True))


def _json_default(value: Any) -> str:
    return repr(value)


def pretty_json(value: Any) -> Html:
    """Indented JSON of ``value`` as escaped text (for a ``<pre>``)."""
    return esc(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=_json_default))


_ON = ' class="on"'
_NAV = (("events", "/", "Events"), ("charts", "/charts", "Charts"), ("verify", "/verify", "Verify"))


def layout(*, base: str, title: str, active: str, body: Html, status: Html, directory: str) -> Html:
    """A whole page: the header (navigation, the log's verify status), ``body``, the assets."""
    nav = join(
        Html(f'<a href="{url(base, path)}"{_ON if key == active else ""}>{esc(label)}</a>')
        for key, path, label in _NAV
    )
    return Html(
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{esc(title)} · checkrein audit</title>"
        '<link rel="icon" href="data:,">'
        f'<link rel="stylesheet" href="{url(base, "/static/ui.css")}">'
        f'<script src="{url(base, "/static/ui.js")}" defer></script>'
        "</head><body>"
        '<header><span class="brand">checkrein audit</span>'
        f'<nav>{nav}</nav><span class="dir" title="{attr(directory)}">{esc(directory)}</span>'
        f'<span id="verify-status" data-src="{url(base, "/verify.json")}">{status}</span></header>'
        f"<main>{body}</main>"
        "<footer>read-only view of the audit index · every value from the log is shown as text</footer>"
        "</body></html>\n"
    )
