"""`shell`: command injection.

For a `command` argument the value reaches a shell, so every operator outside single quotes is a
finding (`;`, `&&`, `||`, `|`, `&`, redirection, newlines, `$()`, backticks, `${...}`), quoted
text is not, and `ctx.commands` (when set) limits the first word. Other strings get only
high-confidence signals: a separator or substitution followed by a known command (`; rm -rf`,
`$(curl ...)`, `| sh`, `&& wget`), `$IFS`, redirection into system or script files, PHP tags and
calls to code-execution functions.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from checkrein.config.policy import ArgKind
from checkrein.policy.decision import Finding

from .api import ScanContext
from .evidence import excerpt

__all__ = ["check_shell", "may_find", "shell_operators"]

NAME = "shell"

# Commands whose names are not ordinary words: seeing one after a separator is a command.
_COMMANDS = frozenset(
    {
        "wget", "curl", "nc", "ncat", "netcat", "socat", "bash", "sh", "zsh", "ksh", "csh", "tcsh",
        "dash", "powershell", "powershell.exe", "pwsh", "cmd", "cmd.exe", "whoami", "uname",
        "ifconfig", "ipconfig", "netstat", "nslookup", "chmod", "chown", "chgrp", "sudo", "telnet",
        "base64", "xxd", "systeminfo", "tasklist", "taskkill", "certutil", "bitsadmin", "mshta",
        "rundll32", "regsvr32", "wmic", "nohup", "crontab", "pkill", "killall", "mkfifo",
        "python", "python2", "python3", "perl", "ruby", "php", "node", "lua", "awk", "gawk", "sed",
        "xterm", "ls", "rm", "pwd", "printenv", "mkdir", "rmdir", "passwd", "useradd", "usermod",
        "nmap", "ssh", "scp", "sftp", "tftp", "ftp", "shutdown", "reboot", "eval", "exec", "ifup",
        "uptime", "lsof", "chattr", "setfacl", "dd", "xargs", "busybox", "getent", "netsh",
        "sysinfo", "schtasks", "vssadmin", "icacls", "cacls", "attrib", "bcdedit", "phpinfo",
    }
)  # fmt: skip
# Commands whose command line, as a whole non-command value, means an attack tool is being invoked.
_LINE_COMMANDS = frozenset(
    {
        "wget", "curl", "nc", "ncat", "netcat", "socat", "bash", "sh", "zsh", "powershell", "pwsh",
        "cmd", "cmd.exe", "whoami", "uname", "ifconfig", "ipconfig", "netstat", "nslookup", "chmod",
        "chown", "sudo", "telnet", "certutil", "bitsadmin", "mshta", "rundll32", "regsvr32", "wmic",
        "crontab", "mkfifo", "rm", "nmap", "netsh", "perl", "python", "python3", "php", "ruby",
        "base64", "xxd", "useradd", "passwd", "schtasks", "vssadmin",
    }
)  # fmt: skip
# Commands that are also English words: a command only when followed by an argument-like token.
_WORD_COMMANDS = frozenset(
    {
        "cat", "echo", "ping", "type", "net", "find", "sleep", "kill", "head", "tail", "more", "less",
        "who", "dir", "del", "copy", "move", "start", "timeout", "system", "set", "env", "ps",
        "touch", "tar", "su", "dig", "host", "grep", "sort", "cd", "mv", "cp", "reg", "ver",
        "exit", "call", "print", "read", "wait", "time", "date", "file", "diff", "cut", "tee", "sc", "id",
    }
)  # fmt: skip
_SEPARATED_WORD = re.compile(r"(;|&&?|\|\|?|\n|\r|\$\(|`|\$\{)[\s({`]{0,8}([A-Za-z0-9_./\\:-]{1,60})(?!\w)([^\n]{0,12})")
# Windows resolves command names case-insensitively; Unix does not, so `| NC |` is not netcat.
_CASE_INSENSITIVE = frozenset(
    {"cmd", "cmd.exe", "powershell", "powershell.exe", "whoami", "ipconfig", "netstat", "nslookup",
     "systeminfo", "tasklist", "taskkill", "certutil", "bitsadmin", "mshta", "rundll32", "regsvr32",
     "wmic", "netsh", "schtasks", "vssadmin", "icacls", "cacls", "attrib", "bcdedit", "ping", "type",
     "net", "dir", "del", "copy", "move", "start", "timeout", "ver", "reg", "sc", "set", "echo", "find"}
)  # fmt: skip
_ARGUMENT_START = ("-", "/", "$", "\\", "'", '"', "`", "%", "~", ".")
# Word commands that take a number (`sleep 5`) or a subcommand (`net user`) as their argument.
_NUMERIC_ARG = frozenset({"sleep", "timeout", "ping", "wait", "kill", "exit"})
_SUBCOMMANDS = {
    "net": ("user", "view", "localgroup", "share", "use", "start", "stop", "group", "accounts", "session"),
    "reg": ("add", "query", "delete", "save", "export", "import"),
    "sc": ("create", "config", "start", "stop", "query"),
}
_DRIVE_ARG = re.compile(r"[a-z]:[\\/]", re.IGNORECASE)
_CODE_MARKERS = re.compile(
    r"<!--\s{0,3}#\s{0,3}(?:exec|include|echo|config|fsize|flastmod)\b|\{\$\{|\$_(?:get|post|request|cookie|server|files|env)\s{0,2}\["
    r"|\b(?:phpinfo|phpversion|php_uname|getenv)\s{0,3}\(\s{0,3}\)|\$\{@?\w{1,30}\(|\(\)\s{0,3}\{\s{0,3}:\s{0,3};\s{0,3}\}\s{0,3};",
    re.IGNORECASE,
)
_ONLY_SEPARATORS = frozenset(";&|`\n\r \t")
_CODE_CALL = re.compile(
    r"\b(?:system|exec|passthru|shell_exec|popen|proc_open|pcntl_exec|eval|assert|create_function)"
    r"\s{0,4}\(\s{0,4}[\"'$`]",
    re.IGNORECASE,
)
_REDIRECT_TARGET = re.compile(r">{1,2}\s{0,4}(?:/(?:tmp|var|etc|dev|root|home|usr|proc)\b|[\w./\\-]{1,80}\.(?:php\d?|phtml|jsp|aspx?|sh|py|pl|cgi|exe|bat|ps1)\b)", re.IGNORECASE)
_BIN_DIRS = ("/bin/", "/usr/bin/", "/sbin/", "/usr/sbin/", "/usr/local/bin/", "c:\\windows\\system32\\")


# One token per match: a single-quoted string, a double-quoted string, an escaped character, an
# operator, or a lone quote (unterminated). Everything else is skipped by `finditer` in C.
_SHELL_TOKEN = re.compile(
    r"'[^']*'|\"(?:\\.|[^\"\\])*\"|\\.|\\$|&&|\|\||[;&|\n\r`]|<\(|>\(|[<>]|\$\(|\$\{|['\"]",
    re.DOTALL,
)
_IN_DOUBLE_QUOTES = re.compile(r"\\.|`|\$\(|\$\{", re.DOTALL)
_TOKEN_KINDS = {
    "&&": "and", "||": "or", ";": "chain", "&": "background", "|": "pipe", "\n": "newline", "\r": "newline",
    "`": "substitution", "$(": "substitution", "<(": "substitution", ">(": "substitution", "${": "expansion",
    "<": "redirect", ">": "redirect",
}  # fmt: skip
MAX_OPERATORS = 64


def shell_operators(command: str) -> list[tuple[str, int]]:
    """Shell operators outside single quotes, in order: (kind, index). Kinds: `chain` (`;`),
    `and`, `or`, `pipe`, `background`, `redirect`, `newline`, `substitution` (`$(`, backticks,
    `<(`), `expansion` (`${`). Double quotes still allow substitution. At most `MAX_OPERATORS`
    are returned; one regex pass, so linear."""
    ops: list[tuple[str, int]] = []
    for m in _SHELL_TOKEN.finditer(command):
        tok = m.group(0)
        kind = _TOKEN_KINDS.get(tok)
        if kind is not None:
            if kind == "background" and m.start() > 0 and command[m.start() - 1] in "<>":
                continue  # `2>&1`: part of a redirection already reported
            ops.append((kind, m.start()))
        elif tok.startswith('"') and len(tok) > 1:
            for inner in _IN_DOUBLE_QUOTES.finditer(tok):
                if not inner.group(0).startswith("\\"):
                    ops.append(("expansion" if inner.group(0) == "${" else "substitution", m.start() + inner.start()))
        elif tok in ("\\\n", "\\\r"):
            ops.append(("newline", m.start()))
        if len(ops) >= MAX_OPERATORS:
            break
    return ops


def _unbalanced(command: str) -> bool:
    return any(m.group(0) in ("'", '"') for m in _SHELL_TOKEN.finditer(command))


_OPERATOR_MESSAGES = {
    "chain": "command chaining with `;`",
    "and": "command chaining with `&&`",
    "or": "command chaining with `||`",
    "pipe": "pipe `|` into another command",
    "background": "`&` runs another command",
    "redirect": "redirection `<`/`>`",
    "newline": "newline starts another command",
    "substitution": "command substitution (`$()`, backticks, `<()`)",
    "expansion": "parameter expansion `${...}`",
}


def _command_word(word: str) -> str:
    w = word.lower().strip("\\")
    for d in _BIN_DIRS:
        if w.startswith(d):
            return w[len(d) :] or w
    return w


def _in_table_row(text: str, index: int) -> bool:
    line_start = text.rfind("\n", 0, index) + 1
    line_end = text.find("\n", index)
    line = text[line_start : line_end if line_end != -1 else len(text)].strip()
    return line.startswith("|") and line.endswith("|") and line.count("|") >= 3


def _command_line(stripped: str) -> str | None:
    """The attack tool a whole value invokes (`curl -s ...`, `nc -e ...`), or None."""
    head = stripped[:256].split(None, 1)
    if len(head) == 2 and head[1].startswith(_ARGUMENT_START):
        word = _command_word(head[0])
        if word in _LINE_COMMANDS:
            return word
    return None


# Every untyped signal needs one of these characters, except a whole-value command line.
_SHELL_TRIGGER = re.compile(r"[;&|\n\r`$<>({]")


def may_find(value: str, kind: ArgKind | None) -> bool:
    """False only when `check_shell([value], ...)` is certainly empty (the value itself, undecoded)."""
    if kind == "command" or _SHELL_TRIGGER.search(value) is not None:
        return True
    return _command_line(value.strip(" \t")) is not None


def _untyped(form: str, add: _Add, kind: ArgKind | None) -> None:
    lowered = form.lower()
    if "ifs" in lowered and ("${ifs}" in lowered or "$ifs" in lowered):
        add("ifs", "`$IFS` used as a word separator", form)
    if "<?php" in lowered or "<?=" in lowered:
        add("code_injection", "PHP code", form)
    if "(" in form and _CODE_CALL.search(form) is not None:
        add("code_injection", "call to a code-execution function", form)
    if ">" in form and _REDIRECT_TARGET.search(form) is not None:
        add("redirect", "redirection into a system path or a script file", form)
    if ("<!--" in form or "{" in form or "$_" in form or "(" in form) and _CODE_MARKERS.search(form) is not None:
        add("code_injection", "server-side include or PHP code", form)
    stripped = form.strip(" \t")
    line = _command_line(stripped) if kind != "command" else None
    if line is not None:
        add("command_line", f"the value is a {line!r} command line", form)
    if not any(c in form for c in ";&|\n\r`$"):
        return
    if len(stripped) <= 64 and set(stripped) <= _ONLY_SEPARATORS and set(stripped) - {"\n", "\r", " ", "\t"}:
        add("separator_probe", "nothing but shell separators (injection probe)", form)
    value_end = len(form.rstrip())
    for m in _SEPARATED_WORD.finditer(form):
        if "injection" in add.found:
            break
        separator, raw_word, after = m.group(1), m.group(2), m.group(3)
        if separator == "|" and _in_table_row(form, m.start()):
            continue  # a Markdown table cell, not a pipe
        if raw_word.lower().startswith(_BIN_DIRS):
            add("injection", f"separator followed by {raw_word!r}", form)
            break
        word = _command_word(raw_word)
        if word not in _CASE_INSENSITIVE and not raw_word.split("/")[-1].islower():
            continue
        if word.startswith("/") or word.startswith(("c:\\", "c:/")):
            if any(raw_word.lower().startswith(d) for d in _BIN_DIRS):
                add("injection", f"separator followed by {raw_word!r}", form)
            continue
        if word in _COMMANDS:
            add("injection", f"separator followed by the command {word!r}", form)
        elif word in _WORD_COMMANDS or word in _SUBCOMMANDS:
            rest = after.lstrip(" \t")
            spaced = after[:1] in (" ", "\t")
            end_of_value = m.end(2) == value_end
            argument = spaced and (
                rest.startswith(_ARGUMENT_START)
                or _DRIVE_ARG.match(rest) is not None
                or (word in _NUMERIC_ARG and rest[:1].isdigit())
                or rest.lower().startswith(_SUBCOMMANDS.get(word, ("\x00",)))
            )
            if end_of_value or argument or after[:1] in (";", "|", "&", "`", ")"):
                add("injection", f"separator followed by the command {word!r}", form)


class _Add:
    def __init__(self, pointer: str) -> None:
        self.pointer = pointer
        self.found: dict[str, Finding] = {}

    def __call__(self, kind: str, message: str, form: str) -> None:
        if kind not in self.found:
            self.found[kind] = Finding(NAME, kind, self.pointer, message, excerpt(form))


def check_shell(forms: Sequence[str], pointer: str, kind: ArgKind | None, ctx: ScanContext) -> list[Finding]:
    """Shell findings for one argument value given its decoded forms (raw first)."""
    add = _Add(pointer)
    for form in forms:
        if kind == "command":
            for op, _idx in shell_operators(form):
                add(op if op != "expansion" or "ifs" not in form.lower() else "ifs", _OPERATOR_MESSAGES[op], form)
            if "\x00" in form:
                add("nul_byte", "NUL byte in a command", form)
            if _unbalanced(form):
                add("unbalanced_quote", "unterminated quote (breaks out of the quoting around the argument)", form)
        _untyped(form, add, kind)
    if kind == "command" and ctx.commands is not None:
        try:
            words = shlex.split(forms[0], comments=False, posix=True)
        except ValueError:
            add("unparsable", "command cannot be split into words (unbalanced quotes)", forms[0])
        else:
            if not words:
                add("not_allowed", "empty command", forms[0])
            elif words[0] not in ctx.commands:
                add("not_allowed", f"command {words[0]!r} is not in the allowlist", forms[0])
    return list(add.found.values())
