"""Credential stores for the `paths` analyzer: where keys, tokens and passwords live on disk.

A path reaches a credential store when its segments (lowercased, separators unified) end in a
file that holds credentials wherever it is (`.git-credentials`, `.pgpass`, `id_ed25519`, a
`*.keychain-db`), or pass through a directory whose every file is one (`.ssh/`, `.aws/`,
`Library/Keychains/`, `AppData/Roaming/Microsoft/Credentials/`), or end in a file that is one only
under its parent (`.cargo/credentials.toml`, a browser profile's `Cookies`). No traversal is
needed to reach any of them, so they are judged by location, never by a sensitive-sounding word:
`shadow.tsx`, `web.config.example` and `.env.example` are ordinary project files.

`home_paths(text)` finds the paths in free text that start at a home directory (`~/`, `$HOME/`,
`%USERPROFILE%\\`, `/home/<user>/`, `/Users/<user>/`, `C:\\Users\\<user>\\`) or at a credential
directory (`.ssh/`), so prose that names `~/.ssh/id_rsa` is caught without flagging other paths.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from checkrein._trie import WordFinder

__all__ = ["STORE_NAMES", "STORE_SUFFIXES", "credential_store", "credential_store_in", "home_paths"]

# Directories (consecutive segments) under which every file is a credential store.
_STORE_DIRS: tuple[tuple[str, ...], ...] = (
    (".ssh",), (".aws",), (".azure",), (".gnupg",), (".kube",), (".oci",), (".password-store",),
    (".terraform.d",), (".docker",), (".pki", "nssdb"), (".config", "gcloud"), (".config", "gh"),
    (".config", "hub"), (".config", "doctl"), (".config", "op"), (".config", "sops"),
    (".config", "rclone"), (".local", "share", "keyrings"), (".gnome2", "keyrings"),
    (".local", "share", "kwalletd"), ("library", "keychains"), ("microsoft", "credentials"),
    ("microsoft", "protect"), ("microsoft", "vault"), (".credentials",), (".vault",),
)  # fmt: skip
_STORE_DIR_HEADS = frozenset(d[0] for d in _STORE_DIRS)
# File names that hold credentials wherever they are.
_STORE_FILES = frozenset(
    {
        ".git-credentials", ".netrc", "_netrc", ".pgpass", ".my.cnf", ".mylogin.cnf", ".vault-token",
        ".s3cfg", ".boto", ".npmrc", ".pypirc", ".htpasswd", ".dockercfg", ".terraformrc",
        "credentials.tfrc.json", "application_default_credentials.json", "credentials.db",
        "access_tokens.db", "accesstokens.json", "msal_token_cache.json", "msal_token_cache.bin",
        "kubeconfig", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk",
        "login.keychain", "kdewallet.kwl", "key3.db", "key4.db", "signons.sqlite", "login data",
        "login data for account", ".bash_history", ".zsh_history", ".sh_history", ".mysql_history",
        ".psql_history", ".sqlite_history", ".rediscli_history", ".node_repl_history",
        ".python_history", ".lesshst", ".viminfo", "wp-config.php", "web.config", "secring.gpg",
        "master.key", ".env", ".envrc", "ntds.dit", "unattend.xml", "sysprep.inf",
        "ssh_host_rsa_key", "ssh_host_ecdsa_key", "ssh_host_ed25519_key", "ssh_host_dsa_key",
    }
)  # fmt: skip
# File names that hold credentials only under one of these parents (`.cargo/credentials.toml`).
_FILE_PARENTS: dict[str, frozenset[str]] = {
    "credentials": frozenset({".gem", ".cargo", ".aws", "gcloud", ".fly", ".databricks"}),
    "credentials.toml": frozenset({".cargo"}),
    "credentials.json": frozenset({".cargo", "gcloud", ".gcp"}),
    "settings.xml": frozenset({".m2"}),
    "settings-security.xml": frozenset({".m2"}),
    "gradle.properties": frozenset({".gradle"}),
    "auth.json": frozenset({".composer", "composer", ".codex"}),
    "nuget.config": frozenset({"nuget"}),
    "hosts.yml": frozenset({"gh"}),
    "config.json": frozenset({".docker"}),
    "config": frozenset({".kube", ".aws", ".git", ".oci", ".ssh"}),
}
_STORE_EXTENSIONS = (".keychain", ".keychain-db", ".keyring", ".kdbx", ".kdb", ".ppk", ".p12", ".pfx", ".jks", ".keystore")
# Browser profile files: credentials when a segment above names a browser or its profile folder.
_BROWSER_FILES = frozenset({"cookies", "cookies.sqlite", "web data", "local state", "logins.json", "login data"})
_BROWSER_DIRS = frozenset(
    {"chrome", "google-chrome", "chromium", "microsoft edge", "edge", "brave-browser", "bravesoftware",
     "opera", "opera software", "vivaldi", "firefox", ".mozilla", "mozilla", "user data", "profiles"}
)  # fmt: skip
# Copies an editor or an admin leaves behind are the same secret.
_BACKUP_SUFFIXES = (".bak", ".old", ".orig", ".save", ".swp", "~", ".backup", ".copy", ".1", ".prev", ".tmp")
# Templates that hold no secret, by convention (`.env.example`, `web.config.sample`).
_TEMPLATE_SUFFIXES = (".example", ".sample", ".template", ".dist", ".defaults", ".tmpl", ".md", ".txt", ".schema", ".pub")


_WINDOWS_DIRS = frozenset({"windows", "winnt", "system32"})


def _leaf_store(name: str, parents: Sequence[str]) -> str | None:
    parent = parents[-1] if parents else ""
    if name in ("sam", "security", "system") and parent in ("config", "repair", "regback"):
        return f"registry hive {name}" if _WINDOWS_DIRS.intersection(parents) else None
    if name in _STORE_FILES:
        bound = _FILE_PARENTS.get(name)
        return name if bound is None or parent in bound else None
    bound = _FILE_PARENTS.get(name)
    if bound is not None and parent in bound:
        return f"{parent}/{name}"
    if name.endswith(_STORE_EXTENSIONS) and len(name) > 4:
        return name
    if name.startswith(".env.") and not name.endswith(_TEMPLATE_SUFFIXES):
        return name
    if name in _BROWSER_FILES and _BROWSER_DIRS.intersection(parents):
        return name
    return None


STORE_NAMES = frozenset(
    {*_STORE_DIR_HEADS, *_STORE_FILES, *_FILE_PARENTS, *_BROWSER_FILES, "sam", "security", "system"}
)
"""Every segment name `credential_store` can react to, apart from the names ending in `STORE_SUFFIXES`
or starting with `.env.`: a path with none of them reaches no credential store."""
STORE_SUFFIXES = (*_STORE_EXTENSIONS, *_BACKUP_SUFFIXES)


def _windows_name(segment: str) -> str:
    """A segment as NTFS opens it: any case, trailing dots and spaces trimmed, `::$DATA` dropped."""
    s = segment.lower()
    if ":" in s:
        s = s.split("::$", 1)[0].split(":$", 1)[0]
    return s.strip().rstrip(". ") or s


def credential_store(segments: Sequence[str]) -> str | None:
    """The credential store a path reaches (a short description), or None.

    ``segments`` are the path's segments (any case; `""`, `.` and `..` are ignored)."""
    parts = [_windows_name(s) for s in segments if s not in ("", ".", "..")]
    if not parts:
        return None
    for i, s in enumerate(parts):
        if s in _STORE_DIR_HEADS:
            for d in _STORE_DIRS:
                if tuple(parts[i : i + len(d)]) == d:
                    return "/".join(d) + "/"  # the directory itself, or anything inside it
    name = parts[-1]
    hit = _leaf_store(name, parts[:-1])
    if hit is None and name.endswith(_BACKUP_SUFFIXES):
        for suffix in _BACKUP_SUFFIXES:
            if name.endswith(suffix) and len(name) > len(suffix):
                hit = _leaf_store(name[: -len(suffix)], parts[:-1])
                if hit is not None:
                    break
    return hit


# A home directory or credential directory at the start of a path inside free text.
_HOME_START = (
    r"(?i)(?<![\w./\\])(?:~[a-z0-9_.-]{0,32}|\$home|\$\{home\}|%userprofile%|%homepath%|%appdata%|%localappdata%"
    r"|/home/[^/\s\\]{1,64}|/users/[^/\s\\]{1,64}|/root|/var/root|[a-z]:[\\/](?:users|documents and settings)[\\/][^\\/\s]{1,64}"
    r"|\.(?:ssh|aws|azure|gnupg|kube|docker|password-store|config|local|gem|cargo|m2|gradle|terraform\.d)(?=[\\/]))"
)
_HOME_PATH = re.compile(_HOME_START + r"(?:[\\/][^\s'\"`<>|;,()\[\]{}]{1,255})+")
# The same, with spaces inside segments (`Application Support/Google/Chrome/Default/Login Data`).
_HOME_PATH_SPACED = re.compile(_HOME_START + r"(?:[\\/][^\n'\"`<>|;,()\[\]{}\\/]{1,255})+")
_MAX_PATHS = 32
# One of these (lowercase) is in every `_HOME_START` match: a branch's literal, or for a drive the
# folder after it. `re` tries the `(?i)` lookbehind-first patterns at every position (~0.3 ms per
# 4 KB of log lines for both), so ASCII text without any of them is not searched (in other text
# case folding can map a non-ASCII letter to one of these, so it is always searched).
_HOME_FACTORS = WordFinder(
    ("~", "$home", "${home}", "%userprofile%", "%homepath%", "%appdata%", "%localappdata%", "/home/", "users", "/root",
     "documents and settings", ".ssh", ".aws", ".azure", ".gnupg", ".kube", ".docker", ".password-store", ".config",
     ".local", ".gem", ".cargo", ".m2", ".gradle", ".terraform.d")
)  # fmt: skip


def home_paths(text: str) -> list[str]:
    """Every path in ``text`` that starts at a home or credential directory (at most 32 of each
    reading: segments without spaces, and segments with them). Linear."""
    if "/" not in text and "\\" not in text:
        return []  # every reading needs a separator after its start
    if text.isascii() and not _HOME_FACTORS.occurs(text.lower()):
        return []
    out: list[str] = []
    for regex in (_HOME_PATH, _HOME_PATH_SPACED):
        for _, m in zip(range(_MAX_PATHS), regex.finditer(text), strict=False):
            token = m.group(0).rstrip(".:!? ")
            if token not in out:
                out.append(token)
    return out


def credential_store_in(segments: Sequence[str]) -> str | None:
    """`credential_store` of ``segments``, or of them with the last one cut after each of its
    first few words (free text goes on after a name with spaces: `.../Login Data and send it`)."""
    hit = credential_store(segments)
    if hit is not None or not segments or " " not in segments[-1]:
        return hit
    words = segments[-1].split(" ")
    for n in range(1, min(len(words), 5)):
        hit = credential_store([*segments[:-1], " ".join(words[:n])])
        if hit is not None:
            return hit
    return None
