"""`paths`: traversal out of the allowed roots, system and sensitive files, Windows and UNC forms,
`~` expansion, NUL bytes and file-inclusion wrappers.

For a `path` argument every signal applies. For other strings only high-confidence ones do:
wrappers, NUL bytes inside path-like values, `..` climbing two or more levels or reaching a
sensitive file, and a whole value that is an absolute path to a system location.
"""

from __future__ import annotations

import base64
import binascii
import functools
import posixpath
import re
from collections.abc import Sequence, Set

from checkrein.config.policy import ArgKind
from checkrein.policy.decision import Finding

from .api import ScanContext, char_class
from .evidence import excerpt
from .stores import STORE_NAMES, STORE_SUFFIXES, credential_store, credential_store_in, home_paths

__all__ = ["TRIGGERS", "check_path", "general_check_path", "may_find", "normalize_path"]

NAME = "paths"

# Wrappers that make a file API read something else: PHP stream wrappers, Java `jar:`, URL files.
_WRAPPERS = (
    "php://",
    "phar://",
    "zip://",
    "expect://",
    "glob://",
    "file://",
    "file:/",
    "data://",
    "compress.zlib://",
    "compress.bzip2://",
    "zlib://",
    "rar://",
    "ogg://",
    "ssh2.",
    "jar:",
    "netdoc:",
    "input://",
)
_DATA_URI_TYPES = ("data:text/", "data:application/", "data:image/svg", ";base64,")

_SYSTEM_DIRS = frozenset(
    {
        "etc", "proc", "sys", "dev", "root", "var", "boot", "usr", "bin", "sbin", "lib", "lib64",
        "opt", "srv", "run", "private", "system", "library", "windows", "winnt", "inetpub",
        "program files", "program files (x86)", "programdata", "documents and settings", "xampp",
        "wamp", "apache", "apache2", "nginx", "system32", "$recycle.bin", "recycler", "volumes",
    }
)  # fmt: skip
# System files and shell start-up files, by exact (lowercased) segment; credential stores are in
# `stores.py`. Names bound to a parent in `_PARENT_BOUND` count only there (`etc/shadow`, not
# `src/shadow`).
_SENSITIVE_NAMES = frozenset(
    {
        "passwd", "shadow", "gshadow", "master.passwd", "sudoers", "boot.ini", "win.ini", "system.ini",
        "environ", "cmdline", "self", "repair", ".profile", ".bash_profile", ".bashrc", ".bash_login",
        ".bash_logout", ".cshrc", ".tcshrc", ".zshrc", ".zprofile", ".login", ".logout", ".rhosts",
        ".shosts", ".forward", ".xauthority", ".k5login", "authorized_keys",
    }
)  # fmt: skip
# Names that point at credentials or system state wherever they appear in a path argument whose
# separators are garbled beyond decoding (`etc%c0%9vpasswd`): matched as substrings, and only
# when the value shows filter evasion (a clean path is judged by its segments).
_SENSITIVE_SUBSTRINGS = (
    "passwd", "shadow", "boot.ini", "win.ini", "system.ini", "system32", ".htpasswd", "id_rsa",
    "proc/self", ".bash_history", "wp-config", "web.config", "desktop.ini", "ntds.dit",
)  # fmt: skip
_UNTYPED_SUBSTRINGS = frozenset(
    {"passwd", "boot.ini", "win.ini", "system.ini", ".htpasswd", "id_rsa", "proc/self", ".bash_history", "wp-config", "ntds.dit"}
)
_ETC_FILE = re.compile(r"(?<![a-z])etc\S{1,12}?(?:hosts|issue|group|motd|crontab|fstab)(?![\w.-])")
_HEX_LITERALS = re.compile(r"0x(2e|2f|5c)|(?<=\.\.)(2f|5c)", re.IGNORECASE)
_HEX_SEPARATOR = re.compile(r"0x(?:2e|2f|5c)|\.\.(?:2f|5c)", re.IGNORECASE)
# Overlong UTF-8 lead bytes: no legitimate encoder produces them; they exist to slip past filters.
_OVERLONG = ("%c0", "%c1", "%e0%80", "%e0%81", "%f0%80", "%f8", "%fc")
_SHELL_ESCAPE = re.compile(r"\\([./\\])")
_BASE64 = re.compile(r"[A-Za-z0-9+/]{12,4096}={0,2}")
_SLASH_LOOKALIKES = str.maketrans({"\u2215": "/", "\u2044": "/", "\u29f8": "/", "\u29f5": "\\", "\u2216": "\\"})


def normalize_path(text: str) -> str:
    """Separators unified to `/` (backslashes and look-alike slashes), surrounding whitespace removed,
    and `/C:/x` read as `C:/x`."""
    path = text.strip()
    if not path.isascii():
        path = path.translate(_SLASH_LOOKALIKES)
    path = path.replace("\\", "/")
    if len(path) >= 3 and path[0] == "/" and path[2] == ":" and path[1].isalpha():
        path = path[1:]
    return path


def _segments(path: str) -> list[str]:
    if ".." not in path and "?" not in path and ";" not in path and _SPACE.search(path) is None:
        return path.split("/")  # nothing to strip and no dot run: the common, clean case
    out: list[str] = []
    for seg in path.split("/"):
        # `..;/` (servlet path parameters) and `.. ` / `...` (Windows trims dots and spaces) all mean `..`.
        s = seg.split(";", 1)[0].strip() if ";" in seg else seg.strip()
        if len(s) >= 2 and not s.strip(".?") and "." in s:
            # `...`, `.. .` and Windows wildcards (`.?`, `?.`) all reach the parent.
            s = ".."
        out.append(s)
    return out


def _climb(segments: Sequence[str]) -> int:
    """How many levels above the starting directory the path reaches (0 when it never escapes)."""
    depth, lowest = 0, 0
    for s in segments:
        if s in ("", "."):
            continue
        if s == "..":
            depth -= 1
            lowest = min(lowest, depth)
        else:
            depth += 1
    return -lowest


# Names specific enough to flag even in an untyped value that is a relative path (`user/.htpasswd`).
_STRONG_NAMES = frozenset(
    {".htpasswd", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "boot.ini", "win.ini", "system.ini",
     ".bash_history", "wp-config.php", "ntds.dit", "authorized_keys", "shadow", ".git-credentials"}
)  # fmt: skip
_PARENT_BOUND = {
    # Common words that are sensitive only under their system parent.
    "self": ("proc",),
    "environ": ("self", "proc"),
    "cmdline": ("self", "proc"),
    "repair": ("windows", "winnt"),
    "passwd": ("etc", ""),
    "shadow": ("etc", ""),
    "gshadow": ("etc", ""),
    "master.passwd": ("etc", ""),
    "sudoers": ("etc", ""),
}
# Server configuration files: sensitive at an absolute location (`/usr/local/etc/php.ini`) or
# reached by traversal; a relative one is a project's own file (`docker/nginx.conf`).
_SERVER_CONFIGS = frozenset({"php.ini", "httpd.conf", "apache2.conf", "nginx.conf", "my.cnf", ".htaccess", "access_log", "error_log"})
_SENSITIVE_CHILDREN = {
    "etc": ("hosts", "issue", "group", "crontab", "motd", "fstab", "profile", "resolv.conf"),
    "windows": ("system32", "repair", "win.ini"),
    "winnt": ("system32", "repair", "win.ini"),
}


def _segment_name(segment: str) -> str:
    """How Windows and NTFS read a segment: trailing dots and spaces trimmed, `::$DATA` dropped."""
    s = segment.lower()
    if "::$" in s:
        s = s.split("::$", 1)[0]
    return s.rstrip(". ") or s


def _sensitive(segments: Sequence[str]) -> str | None:
    lowered = [_segment_name(s) for s in segments if s not in ("", ".", "..")]
    for i, s in enumerate(lowered):
        parent = lowered[i - 1] if i else ""
        if s in _SENSITIVE_NAMES:
            bound = _PARENT_BOUND.get(s)
            if bound is None or parent in bound or parent.isdigit():
                return s
        children = _SENSITIVE_CHILDREN.get(s)
        # `etc/hosts` at the top of the path is the system's; `repo/etc/hosts` is a project file.
        if children is not None and i + 1 < len(lowered) and lowered[i + 1] in children and (i == 0 or s != "etc"):
            return s + "/" + lowered[i + 1]
    return None


def _drive(path: str) -> tuple[str, str]:
    if len(path) >= 2 and path[1] == ":" and path[0].isalpha():
        return path[:2].lower(), path[2:]
    return "", path


def _finding(kind: str, pointer: str, message: str, form: str) -> Finding:
    return Finding(NAME, kind, pointer, message, excerpt(form))


_SPACE = re.compile(r"\s")
_PATHISH = re.compile(r"[/\\.:~%=\x00\u2215\u2044\u29f8\u29f5\u2216]")
_MALFORMED_PERCENT = re.compile(r"%(?:%|[g-tv-zG-TV-Z][0-9A-Za-z]|[0-9A-Fa-f][g-zG-Z])")
# A decoded `%` right before a separator (`%25%5c..` decodes to `%\\..`): half an escape, on purpose.
_PERCENT_SEPARATOR = re.compile(r"%[\\/]")
_ODD_CHARACTER = re.compile("[\x00-\x1f\x7f-\x9f\ue000-\uf8ff\ufffd]")


def _malformed_percent(text: str) -> bool:
    """`%%32`, `%c0%9v`, `%bg`: percent escapes no standard decoder accepts, used to slip past filters."""
    return "%" in text and _MALFORMED_PERCENT.search(text) is not None


def _odd_character(text: str) -> bool:
    return _ODD_CHARACTER.search(text) is not None


def _base64_path(text: str) -> bool:
    s = text.strip()
    if len(s) % 4 or _BASE64.fullmatch(s) is None:
        return False
    try:
        decoded = base64.b64decode(s, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    lowered = decoded.lower()
    return ".." in decoded or ":\\" in decoded or any(n in lowered for n in _SENSITIVE_SUBSTRINGS)


@functools.lru_cache(maxsize=256)
def _root(root: str) -> tuple[str, str, tuple[str, ...]]:
    """(drive, POSIX-normalized path, resolved segments) of a configured root."""
    drive, rest = _drive(normalize_path(root))
    r = posixpath.normpath(rest or ".")
    return drive, r, tuple(_resolve(_segments(r), []) or ())


def _resolve(segments: Sequence[str], base: list[str]) -> list[str] | None:
    """``segments`` applied to ``base`` as a lenient server reads them (`..;`, `...` are `..`,
    see `_segments`); None when a relative path climbs above its start. `..` at `/` stays at `/`."""
    out = list(base)
    for s in segments:
        if s in ("", "."):
            continue
        if s != "..":
            out.append(s)
        elif out:
            out.pop()
        elif not segments[0] == "":
            return None
    return out


def _within(path: str, roots: Sequence[str], segments: Sequence[str]) -> bool:
    """Whether ``path`` (normalized; ``segments`` are its `_segments` after the drive) stays inside
    one of ``roots``, lexically: no symlinks are resolved. Inside only when both readings agree:
    POSIX (`..;` and `... ` are names) and the lenient one (`_segments`: they climb), so no
    spelling escapes through either."""
    drive, rest = _drive(path)
    for root in roots:
        rdrive, r, rsegs = _root(root)
        if rdrive != drive and (rdrive or drive):
            continue
        absolute_root = r.startswith("/")
        p = rest
        base: list[str] = []
        if not p.startswith("/") and absolute_root:
            p = posixpath.join(r, p)
            base = list(rsegs)
        elif p.startswith("/") and not absolute_root:
            continue
        n = posixpath.normpath(p or ".")
        if n.startswith("//") and not r.startswith("//"):
            continue
        lenient = _resolve(segments, base)
        if lenient is None or tuple(lenient[: len(rsegs)]) != rsegs:
            continue
        if r in (".", "/") and not n.startswith(".."):
            return True
        if n == r or n.startswith(r.rstrip("/") + "/"):
            return True
    return False


def _wrapper(lowered: str, strict: bool) -> str | None:
    if ":" not in lowered:
        return None  # every wrapper (and `data:`) has a colon
    for w in _WRAPPERS:
        if w in lowered:
            if w in ("file:/", "jar:", "netdoc:") and not strict and not lowered.lstrip().startswith(w):
                continue
            if w == "ssh2." and "://" not in lowered:
                continue
            return w
    if "data:" in lowered and any(t in lowered for t in _DATA_URI_TYPES):
        return "data:"
    return None


# What an untyped value needs before `check_path` can report anything (see `may_find`).
TRIGGERS = frozenset("/\\:~%=\x00\u2215\u2044\u29f8\u29f5\u2216")
_PATH_TRIGGER = char_class(TRIGGERS)


def may_find(value: str, kind: ArgKind | None, triggers: Set[str] | None = None) -> bool:
    """False only when `check_path([value], ...)` is certainly empty (the value itself, undecoded).

    An untyped value can only be reported when it holds a separator, colon, tilde, percent sign,
    `=`, NUL, look-alike slash, hex literal or `..`; or is one word with a dot (`.htpasswd`); or is
    a long alphanumeric run (base64 of a path). Prose with full stops has none of these.
    ``triggers``, when given, is the set of the value's characters that are in `scan.TRIGGERS`
    (one pass shared by every prefilter); it replaces this prefilter's own character search."""
    if kind == "path":
        return True
    if (_PATH_TRIGGER.search(value) is not None if triggers is None else not TRIGGERS.isdisjoint(triggers)) or ".." in value or "0x" in value or "0X" in value:
        return True
    if "." in value and _SPACE.search(value.strip()) is None:
        return True
    return len(value) >= 12 and value.isalnum()


# A plain absolute path: `/`-separated segments of ASCII letters, digits, `_`, `-` and `.`, none
# starting with a dot (so no `.`, `..`, hidden or `.env`-style names) or longer than 255.
_PLAIN_PATH = re.compile(r"(?:/[A-Za-z0-9_\-][A-Za-z0-9_.\-]{0,254})+")
# Every segment name that `_sensitive`, `credential_store` or the server-config test can react to.
_NAMED = frozenset(
    {*_SENSITIVE_NAMES, *_SENSITIVE_CHILDREN, *_SERVER_CONFIGS, *STORE_NAMES}
)
_NAMED_SUFFIXES = STORE_SUFFIXES


@functools.lru_cache(maxsize=256)
def _plain_roots(roots: tuple[str, ...]) -> tuple[str, ...]:
    """The configured roots that are plain absolute paths, as `_within` reads them (normalized)."""
    out: list[str] = []
    for root in roots:
        rdrive, r, rsegs = _root(root)
        if not rdrive and ".." not in r and _PLAIN_PATH.fullmatch(r) is not None and rsegs == tuple(r.split("/")[1:]):
            out.append(r)
    return tuple(out)


def _plain_inside(raw: str, roots: tuple[str, ...]) -> bool:
    """True only when the strict `check_path` of ``raw`` alone is certainly empty apart from its
    base64 test: a plain path (no `..`, hex literal, percent sign, colon, space, `~`, backslash or
    NUL), at or under a plain configured root (so `_within` holds and no system directory counts),
    none of whose segment names the sensitive-file or credential-store tests know (a test holds
    this fast route to the general check)."""
    if ".." in raw or "0x" in raw or "0X" in raw or _PLAIN_PATH.fullmatch(raw) is None:
        return False
    if not any(raw == r or raw.startswith(r + "/") for r in _plain_roots(roots)):
        return False
    # What `_segment_name` and `stores._windows_name` make of a plain segment.
    names = [seg.rstrip(".") for seg in raw.lower().split("/")[1:]]
    return _NAMED.isdisjoint(names) and not names[-1].endswith(_NAMED_SUFFIXES)


def check_path(forms: Sequence[str], pointer: str, kind: ArgKind | None, ctx: ScanContext) -> list[Finding]:
    """Path findings for one argument value given its decoded forms (raw first)."""
    if kind == "path" and len(forms) == 1 and ctx.path_roots and _plain_inside(forms[0], ctx.path_roots) and not _base64_path(forms[0]):
        return []  # the common clean path inside a root: what the general check would conclude
    return general_check_path(forms, pointer, kind, ctx)


def general_check_path(forms: Sequence[str], pointer: str, kind: ArgKind | None, ctx: ScanContext) -> list[Finding]:
    """`check_path` without its fast route (the general check)."""
    strict = kind == "path"
    if not strict and not any(_PATHISH.search(f) for f in forms) and not (len(forms[0]) >= 12 and forms[0].isalnum()):
        return []  # no separator, dot, colon, tilde, percent or NUL: nothing here can name a file
    found: dict[str, Finding] = {}

    def add(k: str, message: str, form: str) -> None:
        if k not in found:
            found[k] = _finding(k, pointer, message, form)

    raw = forms[0]
    # Filter-evasion spellings: no legitimate client writes a path this way.
    evasion: list[tuple[str, str]] = []
    if "%" in raw:
        if _malformed_percent(raw) or any("%" in f and _PERCENT_SEPARATOR.search(f) for f in forms[1:]):
            evasion.append(("malformed_encoding", "percent escapes that no standard decoder accepts"))
        if any(o in f.lower() for f in forms[:-1] for o in _OVERLONG):
            evasion.append(("overlong_utf8", "overlong UTF-8 escape"))
    if "0x" in raw or "0X" in raw or ".." in raw:
        if _HEX_SEPARATOR.search(raw) is not None:
            evasion.append(("encoded_separator", "dot or slash written as a hex literal"))
    if len(forms) > 1 and any(_odd_character(f) for f in forms[1:]):
        evasion.append(("control_character", "control, private-use or undecodable character in a path"))
    raw_compact = _SPACE.search(raw.strip()) is None
    if strict or raw_compact:
        if _base64_path(raw):
            add("encoded_traversal", "base64-encoded path with traversal or a system file", raw)
    if strict:
        for k, message in evasion:
            add(k, message, raw)
    elif evasion and raw_compact:
        if any(o in raw.lower() for o in _OVERLONG):
            add("overlong_utf8", "overlong UTF-8 escape (filter evasion)", raw)
        if any(".." in f for f in forms):
            add("traversal", "`..` hidden by filter-evasion encoding", raw)
    candidates = list(forms)
    if evasion and _HEX_LITERALS.search(forms[-1]) is not None:
        candidates.append(_HEX_LITERALS.sub(lambda m: {"2e": ".", "2f": "/", "5c": "\\"}[(m.group(1) or m.group(2)).lower()], forms[-1]))
    if "\\" in forms[-1]:
        # `\.\./`: a shell or regex consumer reads backslash-dot as a dot.
        unescaped = _SHELL_ESCAPE.sub(r"\1", forms[-1])
        if unescaped != forms[-1]:
            candidates.append(unescaped)
    if not strict and not raw_compact:
        # Free text: only paths that start at a home or credential directory (`~/.ssh/id_rsa`).
        for form in forms[:3]:
            for token in home_paths(form):
                segs = _segments(normalize_path(token))
                store = credential_store_in(segs)
                if store is not None:
                    add("credential_store", f"names the credential store {store!r}", form)
                elif (name := _sensitive(segs)) is not None:
                    add("sensitive_file", f"names the sensitive file {name!r}", form)
    for index, form in enumerate(candidates):
        lowered = form.lower()
        hit = None
        if evasion:
            # Separators garbled beyond decoding: the names are all that is left to judge.
            hit = next((n for n in _SENSITIVE_SUBSTRINGS if n in lowered), None)
            if hit is None and "etc" in lowered:
                m = _ETC_FILE.search(lowered)
                hit = m.group(0) if m is not None else None
        if hit is not None and not strict:
            # Untyped: any sensitive name once the value shows evasion or `..`; only unambiguous
            # ones in a plain relative path (`css/box-shadow.css` is not `/etc/shadow`); none in web URLs.
            if not raw_compact or lowered.startswith(("http://", "https://")):
                hit = None
            elif not (evasion or ".." in form) and ("/" not in normalize_path(form) or hit not in _UNTYPED_SUBSTRINGS):
                hit = None
        if hit is not None:
            add("sensitive_file", f"names a sensitive file or directory ({hit!r})", form)
        w = _wrapper(lowered, strict)
        if w is not None:
            add("inclusion_wrapper", f"file-inclusion wrapper {w!r}", form)
        path = normalize_path(form)
        pathlike = "/" in path or "." in path
        if "\x00" in form and (strict or pathlike):
            add("nul_byte", "NUL byte truncates the path at the OS boundary", form)
        if not path:
            continue
        compact = _SPACE.search(path) is None
        if not strict and not compact and "/" not in path:
            continue
        drive, rest = _drive(path)
        segs = _segments(rest)
        if strict and len(rest) > 255 and any(len(seg) > 255 for seg in segs):
            add("overlong_segment", "path segment longer than any file system allows", form)
        climb = _climb(segs) if ".." in segs else 0
        sensitive = _sensitive(segs)
        if climb and (strict or climb >= 2 or sensitive is not None or (compact and (index > 0 or evasion))):
            add("traversal", f"`..` climbs {climb} level(s) above the starting directory", form)
        if form.lstrip().startswith(("\\\\", "//")) or path.startswith("//"):
            if path.startswith(("//?/", "//./")):
                add("windows_device_path", "Windows device or long-path prefix (\\\\?\\ or \\\\.\\)", form)
            elif strict or compact:
                add("unc_path", "UNC path to a network share", form)
        absolute = rest.startswith("/") or bool(drive)
        inside_roots = False
        if strict:
            if path.startswith("~"):
                add("home_expansion", "`~` expands to a home directory", form)
            if "?" in path and any(s and not s.strip("?") for s in segs):
                add("wildcard_segment", "a path segment made only of `?`", form)
            if drive:
                add("windows_drive", f"Windows drive path {drive.upper()}", form)
            inside_roots = bool(ctx.path_roots) and _within(path, ctx.path_roots, segs)
            if ctx.path_roots and not inside_roots:
                add("outside_roots", "path is outside the allowed roots", form)
        if sensitive is None and (absolute or climb) and segs and _segment_name(segs[-1]) in _SERVER_CONFIGS:
            sensitive = _segment_name(segs[-1])
        if sensitive is not None and (
            strict or (compact and (absolute or climb or sensitive in _STRONG_NAMES or ("/" in path and sensitive in _UNTYPED_SUBSTRINGS)))
        ):
            add("sensitive_file", f"sensitive file or directory {sensitive!r}", form)
        store = credential_store(segs)
        if store is not None and (strict or (compact and (absolute or climb or path.startswith("~") or "/" in path or store in _STRONG_NAMES))):
            add("credential_store", f"credential store {store!r}", form)
        if absolute and (strict or compact):
            first = next((s.lower() for s in segs if s not in ("", ".")), "")
            # A configured root is the operator's data, even under a system directory (`/srv/data`),
            # whether or not the schema says the argument is a path.
            if first in _SYSTEM_DIRS and not (inside_roots or (not strict and ctx.path_roots and _within(path, ctx.path_roots, segs))):
                add("system_path", f"absolute path into system directory {first!r}", form)
    return list(found.values())
