"""`shell`: command injection.

For a `command` argument the value reaches a shell, so every operator outside single quotes is a
finding (`;`, `&&`, `||`, `|`, `&`, redirection, newlines, `$()`, backticks, `<()`, `${...}`,
`$VAR`, ANSI-C `$'...'` quoting), quoted text is not; a program name spelled to dodge a check
(`c''at`, `/???/c?t`, `{cat,x}`) is a finding; and the words are judged by `argv.option_problem`:
options that run programs or write files (`git -c core.sshCommand=`, `find -exec`, `curl -o`),
environment assignments that load code (`LD_PRELOAD=`), and, when `ctx.commands` is set, every
program (wrapped ones too: `env`, `xargs`, `timeout`...) must be in the allowlist. Other strings
get only high-confidence signals: a separator or substitution followed by a known command
(`; rm -rf`, `$(curl ...)`, `| sh`, `&& wget`), `$IFS`, redirection into system or script files,
PHP tags, calls to code-execution functions, a whole value that is a command line with such an
option, a value that starts with one (`--upload-pack=...`: an option smuggled into someone's
argv), and `LD_PRELOAD=`-style assignments.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence, Set

from checkrein._trie import LiteralStarts
from checkrein.config.policy import ArgKind
from checkrein.policy.decision import Finding

from .api import ScanContext, char_class
from .argv import EXEC_ENV, injected_option, option_problem, program_name
from .evidence import excerpt
from .gated import AnyMatch

__all__ = ["TRIGGERS", "check_shell", "may_find", "shell_operators"]

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
_ANY_COMMAND = _COMMANDS | _WORD_COMMANDS | frozenset(_SUBCOMMANDS)
"""Every word the separator loop can report (besides paths into `_BIN_DIRS`)."""
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
# `re` tries these at every position (~0.2 ms per 4 KB of code each): in ASCII text they are tried
# only where a match can start (`LiteralStarts`), or asked branch by branch behind their factors.
_CODE_CALL_STARTS = LiteralStarts(
    _CODE_CALL, ("system", "exec", "passthru", "shell_exec", "popen", "proc_open", "pcntl_exec", "eval", "assert", "create_function")
)
_CODE_MARKER_STARTS = LiteralStarts(_CODE_MARKERS, ("<!--", "{${", "$_", "phpinfo", "phpversion", "php_uname", "getenv", "${", "()"))
_REDIRECT_TARGET = re.compile(r">{1,2}\s{0,4}(?:/(?:tmp|var|etc|dev|root|home|usr|proc)\b|[\w./\\-]{1,80}\.(?:php\d?|phtml|jsp|aspx?|sh|py|pl|cgi|exe|bat|ps1)\b)", re.IGNORECASE)
# Programs whose command line, as a whole untyped value, is judged by its options.
_OPTION_PROGRAMS = frozenset({"git", "ssh", "scp", "sftp", "rsync", "find", "tar", "curl", "wget", "zip", "sed", "awk", "sendmail", "tcpdump", "nc", "socat", "env", "xargs", "timeout", "sudo", "nohup"})
_BIN_DIRS = ("/bin/", "/usr/bin/", "/sbin/", "/usr/sbin/", "/usr/local/bin/", "c:\\windows\\system32\\")


# One token per match: a single-quoted string, a double-quoted string, an escaped character, an
# operator, or a lone quote (unterminated). Everything else is skipped by `finditer` in C.
_SHELL_TOKEN = re.compile(
    r"\$'(?:\\.|[^'\\])*'|'[^']*'|\"(?:\\.|[^\"\\])*\"|\\.|\\$|&&|\|\||[;&|\n\r`]|<\(|>\(|[<>]|\$\(|\$\{"
    r"|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9@*#?$!-]|['\"]",
    re.DOTALL,
)
_IN_DOUBLE_QUOTES = re.compile(r"\\.|`|\$\(|\$\{|\$[A-Za-z_@*#?$!0-9]", re.DOTALL)
_TOKEN_KINDS = {
    "&&": "and", "||": "or", ";": "chain", "&": "background", "|": "pipe", "\n": "newline", "\r": "newline",
    "`": "substitution", "$(": "substitution", "<(": "substitution", ">(": "substitution", "${": "expansion",
    "<": "redirect", ">": "redirect",
}  # fmt: skip
MAX_OPERATORS = 64


def shell_operators(command: str) -> list[tuple[str, int]]:
    """Shell operators outside single quotes, in order: (kind, index). Kinds: `chain` (`;`),
    `and`, `or`, `pipe`, `background`, `redirect`, `newline`, `substitution` (`$(`, backticks,
    `<(`), `expansion` (`${`), `variable` (`$NAME`, `$1`, `$@`), `ansi_c_quote` (`$'\\x72m'`).
    Double quotes still allow substitution and variables. At most `MAX_OPERATORS` are returned;
    one regex pass, so linear."""
    ops: list[tuple[str, int]] = []
    for m in _SHELL_TOKEN.finditer(command):
        tok = m.group(0)
        kind = _TOKEN_KINDS.get(tok)
        if kind is None and tok[:1] == "$" and len(tok) > 1:
            kind = "ansi_c_quote" if tok[1] == "'" else "variable"
        if kind is not None:
            if kind == "background" and m.start() > 0 and command[m.start() - 1] in "<>":
                continue  # `2>&1`: part of a redirection already reported
            ops.append((kind, m.start()))
        elif tok.startswith('"') and len(tok) > 1:
            for inner in _IN_DOUBLE_QUOTES.finditer(tok):
                found = inner.group(0)
                if not found.startswith("\\"):
                    kind = "expansion" if found == "${" else "substitution" if found in ("`", "$(") else "variable"
                    ops.append((kind, m.start() + inner.start()))
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
    "variable": "variable expansion `$NAME` (reads the environment or builds a command from pieces)",
    "ansi_c_quote": "ANSI-C quoting `$'...'` (spells characters as escapes)",
}


def _command_word(word: str) -> str:
    w = word.lower().strip("\\")
    if w[:1] == "/" or w[:2] == "c:":  # where every `_BIN_DIRS` entry starts
        for d in _BIN_DIRS:
            if w.startswith(d):
                return w[len(d) :] or w
    return w


def _in_table_row(text: str, index: int) -> bool:
    line_start = text.rfind("\n", 0, index) + 1
    line_end = text.find("\n", index)
    line = text[line_start : line_end if line_end != -1 else len(text)].strip()
    return line.startswith("|") and line.endswith("|") and line.count("|") >= 3


def _option_line(stripped: str) -> str | None:
    """Why a whole value that is a known program's command line (`find . -delete`) does more
    than that program's job, or None."""
    head = stripped[:64].split(None, 1)[0]
    if program_name(head) in _OPTION_PROGRAMS:
        try:
            words = shlex.split(stripped[:4096])
        except ValueError:
            words = stripped[:4096].split()
        problem = option_problem(words)
        if problem is not None:
            return problem.message
    return None


def _command_line(stripped: str) -> str | None:
    """The attack tool a whole value invokes (`curl -s ...`, `nc -e ...`), or None."""
    head = stripped[:256].split(None, 1)
    if len(head) == 2 and head[1].startswith(_ARGUMENT_START):
        word = _command_word(head[0])
        if word in _LINE_COMMANDS:
            return word
    return None


# Every untyped signal needs one of these characters, except a whole-value command line.
TRIGGERS = frozenset(";&|\n\r`$<>({")
_SHELL_TRIGGER = char_class(TRIGGERS)


def may_find(value: str, kind: ArgKind | None, triggers: Set[str] | None = None) -> bool:
    """False only when `check_shell([value], ...)` is certainly empty (the value itself, undecoded).
    ``triggers``: see `paths.may_find`."""
    if kind == "command":
        return True
    if _SHELL_TRIGGER.search(value) is not None if triggers is None else not TRIGGERS.isdisjoint(triggers):
        return True
    stripped = value.strip(" \t")
    if stripped[:1] == "-" or ("=" in value and _EXEC_GATE.search(value)(0)):
        return True
    if " -" in stripped[:256] and _option_line(stripped) is not None:
        return True
    return _command_line(stripped) is not None


def _untyped(form: str, add: _Add, kind: ArgKind | None) -> None:
    lowered = form.lower()
    if "ifs" in lowered and ("${ifs}" in lowered or "$ifs" in lowered):
        add("ifs", "`$IFS` used as a word separator", form)
    if "<?php" in lowered or "<?=" in lowered:
        add("code_injection", "PHP code", form)
    if "(" in form and _CODE_CALL_STARTS.searcher(form)(0) is not None:
        add("code_injection", "call to a code-execution function", form)
    if ">" in form and _REDIRECT_TARGET.search(form) is not None:
        add("redirect", "redirection into a system path or a script file", form)
    if ("<!--" in form or "{" in form or "$_" in form or "(" in form) and _CODE_MARKER_STARTS.searcher(form)(0) is not None:
        add("code_injection", "server-side include or PHP code", form)
    stripped = form.strip(" \t")
    line = _command_line(stripped) if kind != "command" else None
    if line is not None:
        add("command_line", f"the value is a {line!r} command line", form)
    if kind != "command":
        if "=" in form and _EXEC_GATE.search(form)(0):
            add("exec_environment", "an environment assignment that loads or runs code (LD_PRELOAD=...)", form)
        if stripped[:1] == "-" and kind in (None, "path", "url"):
            option = injected_option(stripped) if kind is None else stripped.split(None, 1)[0][:40]
            if option is not None:
                # A path or URL never starts with `-`; for other text only the distinctive options count.
                add("option_injection", f"the value starts with the option {option!r} (argument injection)", form)
        elif " -" in stripped[:256]:
            problem = _option_line(stripped)
            if problem is not None:
                add("dangerous_option", f"the value is a command line: {problem}", form)
    if not any(c in form for c in ";&|\n\r`$"):
        return
    if len(stripped) <= 64 and set(stripped) <= _ONLY_SEPARATORS and set(stripped) - {"\n", "\r", " ", "\t"}:
        add("separator_probe", "nothing but shell separators (injection probe)", form)
    _separated_commands(form, add)


def _separated_commands(form: str, add: _Add) -> None:
    """A separator or substitution followed by a known command (`; rm -rf`, `$(curl ...)`)."""
    value_end = len(form.rstrip())
    for m in _SEPARATED_WORD.finditer(form):
        if "injection" in add.found:
            break
        separator, raw_word, after = m.group(1, 2, 3)
        binary = raw_word.lower().startswith(_BIN_DIRS)
        word = _command_word(raw_word)
        if not binary and word not in _ANY_COMMAND and word[:1] != "/" and not word.startswith(("c:\\", "c:/")):
            continue  # nothing below can add (a line of code or prose after a newline, mostly)
        if separator == "|" and _in_table_row(form, m.start()):
            continue  # a Markdown table cell, not a pipe
        if binary:
            add("injection", f"separator followed by {raw_word!r}", form)
            break
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
                add(op if op not in ("expansion", "variable") or "ifs" not in form.lower() else "ifs", _OPERATOR_MESSAGES[op], form)
            if "\x00" in form:
                add("nul_byte", "NUL byte in a command", form)
            if _unbalanced(form):
                add("unbalanced_quote", "unterminated quote (breaks out of the quoting around the argument)", form)
        _untyped(form, add, kind)
    if kind == "command":
        _command_words(forms, add, ctx)
    return list(add.found.values())


# A program word spelled so that a filter reading it sees something else: quotes or backslashes
# inside it (`c''at`, `w\hoami`), globs (`/???/c?t`) or brace expansion (`{cat,/etc/passwd}`).
_OBFUSCATED_WORD = re.compile(r"^[^\s'\"\\:]+['\"]|^[^\s'\"\\:]+\\[a-z]|^[^\s]*[*?\[]|^\{[^\s}]*,")


def _command_words(forms: Sequence[str], add: _Add, ctx: ScanContext) -> None:
    """The checks of a `command` value's words: its program, options, environment, allowlist."""
    for index, form in enumerate(forms[:4]):
        try:
            words = shlex.split(form, comments=False, posix=True)
        except ValueError:
            if ctx.commands is not None and index == 0:
                add("unparsable", "command cannot be split into words (unbalanced quotes)", form)
            continue
        if not words:
            if ctx.commands is not None and index == 0:
                add("not_allowed", "empty command", form)
            continue
        raw_words = form.split()
        head = next((w for w in raw_words if not _ASSIGNMENT_WORD.match(w)), "")
        if head and _OBFUSCATED_WORD.match(head) and not (head[:1] in "'\"" and head[-1:] == head[:1] and head.count(head[0]) == 2):
            add("obfuscated_command", f"the program name {head[:40]!r} is spelled to read as something else", form)
        problem = option_problem(words, ctx.commands)
        if problem is not None:
            add(problem.kind, problem.message, form)


_ASSIGNMENT_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# `LD_PRELOAD=/tmp/x.so`, `GIT_SSH_COMMAND='...'`: only the variables that load or run code.
_EXEC_ASSIGNMENT = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(sorted(EXEC_ENV - {"PATH", "IFS", "ENV", "EDITOR", "VISUAL", "PAGER", "BROWSER", "HISTFILE", "TERMINFO", "PS4"}, key=len, reverse=True)) + r")=\S")
_EXEC_GATE = AnyMatch([_EXEC_ASSIGNMENT])
