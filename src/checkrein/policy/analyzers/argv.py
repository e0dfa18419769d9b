"""Argument injection without any shell operator: options that make an allowed program run
another program, write a file, or send a local file away.

`option_problem(argv)` judges one command's words (program first, as `shlex.split` gives them).
It knows, per program, the options whose whole purpose is one of those effects (`git -c
core.sshCommand=`, `--upload-pack=`, `ssh -oProxyCommand=`, `find -exec`/`-delete`,
`tar --checkpoint-action=exec=`, `rsync -e`, `curl -o`, `zip -TT`, a `sed` script with `e` or
`w`, `sendmail -X`...), environment assignments that load code (`LD_PRELOAD=`, `GIT_SSH_COMMAND=`)
and wrappers whose arguments are another command (`env`, `xargs`, `timeout`, `sudo`...), whose
inner program is judged the same way. `injected_option(value)` is the untyped check: a value that
begins with one of the distinctive long options is an option smuggled into someone's argv.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["EXEC_ENV", "OptionProblem", "injected_option", "option_problem", "program_name"]

RUNS = "runs another program"
WRITES = "writes a file"
SENDS = "sends a local file"
CONFIG = "loads configuration that can run programs"

Check = Callable[[str], bool]


@dataclass(frozen=True, slots=True)
class OptionProblem:
    kind: str
    """`dangerous_option`, `exec_environment`, `wrapped_command`, `not_allowed`."""
    message: str


@dataclass(frozen=True)
class _Spec:
    long: Mapping[str, str] = field(default_factory=dict)
    """Long option (without `--`) -> effect; any value."""
    short: Mapping[str, str] = field(default_factory=dict)
    """Short option letter (or `find`-style single-dash word) -> effect; any value."""
    valued: Mapping[str, tuple[str, Check]] = field(default_factory=dict)
    """Option (short letter or long name) -> (effect, predicate on its value): dangerous only for some values."""
    takes_value: frozenset[str] = frozenset()
    """Other short options that take a value (so a cluster like `-sSo` is read right)."""
    single_dash_long: bool = False
    """`find -exec`: words are whole option names after one dash."""
    script: Callable[[Sequence[str]], str | None] | None = None
    """A check of the program's non-option arguments (a `sed` or `awk` script)."""


_GIT_EXEC_KEYS = re.compile(
    r"(?i)^(?:core\.(?:sshcommand|pager|editor|fsmonitor|hookspath|gitproxy|askpass|alternaterefscommand|worktree)"
    r"|alias\.[^=]*=\s*!|sequence\.editor|diff\.external|include\.path|includeif\.|credential\.|gpg\.(?:\w+\.)?program"
    r"|protocol\.(?:ext|fd|file)\.allow|uploadpack\.|receive\.|remote\.[^=]*\.(?:uploadpack|receivepack|proxy)"
    r"|http\.(?:[^=]*\.)?proxy|[^=]*\.(?:command|cmd|program|helper|textconv|clean|smudge|process|driver|tool|path)\s*=)"
)
_SSH_EXEC_KEYS = re.compile(r"(?i)^\s*(?:proxycommand|localcommand|permitlocalcommand|knownhostscommand|proxyusefdpass|match\b|include\b|identityagent|securitykeyprovider|pkcs11provider)")
_AT_FILE = re.compile(r"(?:^|=)@[^@\s]")


def _always(_: str) -> bool:
    return True


def _git_url(words: Sequence[str]) -> str | None:
    for w in words:
        if w.lower().startswith(("ext::", "fd::")):
            return f"the {w.split('::', 1)[0]}:: transport {RUNS}"
    return None


def _sed_script(script: str) -> str | None:
    """Why a sed script runs a command or writes a file (`e`, `s///e`, `w`, `W`), or None."""
    for raw in re.split(r"[;\n]", script):
        cmd = raw.strip().lstrip("{}").strip()
        # Drop an address: line numbers, `$`, `/regex/`, ranges, and `!`.
        cmd = re.sub(r"^(?:\d+|\$|/(?:\\.|[^/])*/[IM]*)(?:\s*[,~]\s*(?:\d+|\$|/(?:\\.|[^/])*/[IM]*|\+\d+))?\s*!?\s*", "", cmd)
        if not cmd:
            continue
        if cmd[0] in "eWw" and (len(cmd) == 1 or cmd[1] in " \t"):
            return f"the sed command {cmd[0]!r} {RUNS if cmd[0] == 'e' else WRITES}"
        if cmd[0] in "sy" and len(cmd) > 1:
            delim = cmd[1]
            parts = re.split(r"(?<!\\)" + re.escape(delim), cmd[2:]) if delim not in "\\\n" else []
            if cmd[0] == "s" and len(parts) >= 3:
                flags = parts[2].split(" ", 1)[0]
                if "e" in flags:
                    return f"the sed flag s///e {RUNS}"
                if "w" in flags:
                    return f"the sed flag s///w {WRITES}"
    return None


def _sed(words: Sequence[str]) -> str | None:
    scripts: list[str] = []
    i, has_expression = 0, False
    while i < len(words):
        w = words[i]
        if w in ("-e", "--expression") and i + 1 < len(words):
            scripts.append(words[i + 1])
            has_expression = True
            i += 2
            continue
        if w.startswith("--expression="):
            scripts.append(w.partition("=")[2])
            has_expression = True
        elif w.startswith("-e") and len(w) > 2 and not w.startswith("--"):
            scripts.append(w[2:])
            has_expression = True
        elif not w.startswith("-") and not has_expression and not scripts:
            scripts.append(w)  # the first operand is the script when no -e is given
        i += 1
    for script in scripts:
        why = _sed_script(script)
        if why is not None:
            return why
    return None


_AWK_EFFECT = re.compile(r"\bsystem\s*\(|\|\s*getline|\|&|\bprintf?\b[^;{}]*?(?<![<>=!])>{1,2}(?!=)|\bclose\s*\(\s*\"|\bgetline\s*<")


def _awk(words: Sequence[str]) -> str | None:
    for w in words:
        if not w.startswith("-") and _AWK_EFFECT.search(w) is not None:
            return f"the awk program {RUNS} or {WRITES}"
    return None


def _s(**kw: str) -> dict[str, str]:
    return {k.replace("_", "-"): v for k, v in kw.items()}


_SSH = _Spec(short={"F": CONFIG, "E": WRITES}, valued={"o": (RUNS, lambda v: _SSH_EXEC_KEYS.match(v) is not None)}, takes_value=frozenset("bcDeIiJLlmOpQRSWw"))
_SPECS: dict[str, _Spec] = {
    "git": _Spec(
        long=_s(upload_pack=RUNS, receive_pack=RUNS, exec=RUNS, output=WRITES, template=RUNS, separate_git_dir=WRITES, open_files_in_pager=RUNS, extcmd=RUNS, config_env=CONFIG),
        short={"u": RUNS, "O": RUNS, "x": RUNS},
        valued={"c": (RUNS, lambda v: _GIT_EXEC_KEYS.match(v) is not None), "config": (RUNS, lambda v: _GIT_EXEC_KEYS.match(v) is not None)},
        takes_value=frozenset("CmbFo"),
        script=_git_url,
    ),
    "ssh": _SSH,
    "scp": _Spec(short={"S": RUNS, "F": CONFIG}, valued=_SSH.valued, takes_value=frozenset("cDiJlOoPX")),
    "sftp": _Spec(short={"S": RUNS, "F": CONFIG, "D": RUNS}, valued=_SSH.valued, takes_value=frozenset("BbcijlOoPRsX")),
    "rsync": _Spec(long=_s(rsh=RUNS, rsync_path=RUNS, log_file=WRITES, write_batch=WRITES, only_write_batch=WRITES, config=CONFIG), short={"e": RUNS}, takes_value=frozenset("fBMT")),
    "find": _Spec(short={"exec": RUNS, "execdir": RUNS, "ok": RUNS, "okdir": RUNS, "delete": WRITES, "fprint": WRITES, "fprint0": WRITES, "fprintf": WRITES, "fls": WRITES}, single_dash_long=True),
    "tar": _Spec(
        long=_s(to_command=RUNS, use_compress_program=RUNS, info_script=RUNS, new_volume_script=RUNS, rsh_command=RUNS, rmt_command=RUNS, index_file=WRITES),
        short={"I": RUNS, "F": RUNS},
        valued={"checkpoint-action": (RUNS, lambda v: v.lstrip().startswith(("exec", "sh"))) },
        takes_value=frozenset("fbCgHKLNTVX"),
    ),
    "curl": _Spec(
        long=_s(output=WRITES, remote_name=WRITES, remote_name_all=WRITES, output_dir=WRITES, dump_header=WRITES, cookie_jar=WRITES, trace=WRITES, trace_ascii=WRITES, libcurl=WRITES, stderr=WRITES, config=CONFIG, upload_file=SENDS, create_dirs=WRITES, etag_save=WRITES, hsts=WRITES, alt_svc=WRITES),
        short={"o": WRITES, "O": WRITES, "D": WRITES, "c": WRITES, "K": CONFIG, "T": SENDS},
        valued={k: (SENDS, lambda v: _AT_FILE.search(v) is not None) for k in ("d", "data", "data-binary", "data-urlencode", "data-ascii", "json", "F", "form", "form-string", "H", "header")},
        takes_value=frozenset("AbCEeHiKmrQuUwXxYyz"),
    ),
    "wget": _Spec(
        long=_s(output_document=WRITES, output_file=WRITES, append_output=WRITES, directory_prefix=WRITES, post_file=SENDS, body_file=SENDS, execute=RUNS, use_askpass=RUNS, config=CONFIG),
        short={"O": WRITES, "o": WRITES, "a": WRITES, "P": WRITES, "e": RUNS},
        takes_value=frozenset("iBtTwQUlAR"),
    ),
    "zip": _Spec(long=_s(unzip_command=RUNS), short={"TT": RUNS}),
    "sed": _Spec(long=_s(file=CONFIG), short={"f": CONFIG}, script=_sed),
    "awk": _Spec(short={"f": CONFIG}, script=_awk, takes_value=frozenset("vF")),
    "sendmail": _Spec(short={"X": WRITES, "C": CONFIG}, valued={"O": (WRITES, lambda v: v.lower().startswith(("queuedirectory", "logfile")))}),
    "sort": _Spec(long=_s(output=WRITES, compress_program=RUNS), short={"o": WRITES}, takes_value=frozenset("kSTt")),
    "split": _Spec(long=_s(filter=RUNS)),
    "tcpdump": _Spec(short={"z": RUNS, "w": WRITES, "W": WRITES}, takes_value=frozenset("cCiIsTyBEFGMr")),
    "man": _Spec(long=_s(pager=RUNS, html=RUNS, browser=RUNS), short={"P": RUNS, "H": RUNS}),
    "vim": _Spec(long=_s(cmd=RUNS), short={"c": RUNS, "S": RUNS}),
    "mysql": _Spec(long=_s(pager=RUNS, tee=WRITES, init_command=RUNS, plugin_dir=RUNS)),
    "psql": _Spec(long=_s(output=WRITES, log_file=WRITES), short={"o": WRITES, "L": WRITES}, takes_value=frozenset("cdfhpUvP")),
    "nmap": _Spec(long=_s(script=RUNS, oN=WRITES, oX=WRITES, oG=WRITES, oA=WRITES, oS=WRITES, resume=CONFIG, datadir=CONFIG)),
    "make": _Spec(long=_s(eval=RUNS), short={"E": RUNS}),
    "gcc": _Spec(long=_s(wrapper=RUNS), valued={"fplugin": (RUNS, _always), "wrapper": (RUNS, _always)}, single_dash_long=True),
    "npm": _Spec(long=_s(script_shell=RUNS, call=RUNS), short={"c": RUNS}),
    "nc": _Spec(short={"e": RUNS, "c": RUNS}),
    "socat": _Spec(script=lambda ws: f"a socat EXEC/SYSTEM address {RUNS}" if any(re.match(r"(?i)(?:exec|system):", w) for w in ws) else None),
    "aria2c": _Spec(long=_s(on_download_complete=RUNS, on_download_start=RUNS, on_download_error=RUNS, on_bt_download_complete=RUNS, on_download_stop=RUNS, on_download_pause=RUNS)),
    "hg": _Spec(valued={"config": (RUNS, lambda v: "=!" in v.replace(" ", "") or v.lower().startswith(("hooks.", "ui.ssh", "extensions.", "pager.")))}),
    "svn": _Spec(valued={"config-option": (RUNS, lambda v: "tunnels" in v.lower())}),
    "python": _Spec(short={"c": RUNS}),
    "node": _Spec(long=_s(eval=RUNS, require=RUNS, import_=RUNS, loader=RUNS), short={"e": RUNS, "r": RUNS, "p": RUNS}),
    "perl": _Spec(short={"e": RUNS, "E": RUNS, "M": RUNS}),
    "ruby": _Spec(short={"e": RUNS, "r": RUNS}),
    "php": _Spec(short={"r": RUNS, "d": CONFIG}),
    "bash": _Spec(short={"c": RUNS}, long=_s(rcfile=RUNS, init_file=RUNS)),
    "docker": _Spec(long=_s(privileged=RUNS), valued={"v": (WRITES, lambda v: v.startswith("/:") or v.startswith("/etc")), "volume": (WRITES, lambda v: v.startswith("/:") or v.startswith("/etc"))}),
}
_ALIASES = {
    "gawk": "awk", "mawk": "awk", "nawk": "awk", "busybox-awk": "awk", "gsed": "sed", "gtar": "tar", "bsdtar": "tar",
    "vi": "vim", "nvim": "vim", "view": "vim", "ex": "vim", "mariadb": "mysql", "cc": "gcc", "clang": "gcc", "g++": "gcc",
    "clang++": "gcc", "npx": "npm", "pnpm": "npm", "yarn": "npm", "ncat": "nc", "netcat": "nc", "python3": "python",
    "python2": "python", "pypy": "python", "pypy3": "python", "nodejs": "node", "sh": "bash", "zsh": "bash", "dash": "bash",
    "ksh": "bash", "podman": "docker", "exim": "sendmail", "postfix": "sendmail", "ssmtp": "sendmail", "msmtp": "sendmail",
}  # fmt: skip
# Programs whose operands are another command line: that inner program is judged too.
_WRAPPERS: dict[str, frozenset[str]] = {
    # wrapper -> its options that take a value (skipped before the inner program)
    "env": frozenset({"u", "unset", "C", "chdir", "S", "split-string"}),
    "xargs": frozenset({"a", "arg-file", "d", "delimiter", "E", "e", "eof", "I", "i", "replace", "L", "l", "max-lines", "n", "max-args", "P", "max-procs", "s", "max-chars", "process-slot-var"}),
    "timeout": frozenset({"k", "kill-after", "s", "signal"}),
    "nice": frozenset({"n", "adjustment"}),
    "nohup": frozenset(),
    "stdbuf": frozenset({"i", "input", "o", "output", "e", "error"}),
    "time": frozenset({"f", "format", "o", "output"}),
    "sudo": frozenset({"u", "user", "g", "group", "C", "close-from", "h", "host", "p", "prompt", "r", "role", "t", "type", "U", "other-user", "D", "chdir"}),
    "doas": frozenset({"u", "C"}),
    "strace": frozenset({"e", "o", "p", "s", "u", "E", "a", "b", "I", "O", "P", "S", "X"}),
    "ltrace": frozenset({"e", "o", "p", "s", "u", "a", "A", "D", "n", "x"}),
    "chroot": frozenset({"userspec", "groups"}),
    "watch": frozenset({"n", "interval", "d", "differences", "q", "equexit"}),
    "setsid": frozenset(),
    "ionice": frozenset({"c", "class", "n", "classdata", "p", "pid", "P", "pgid", "u", "uid"}),
    "taskset": frozenset(),
    "flock": frozenset({"w", "wait", "timeout", "E", "conflict-exit-code"}),
    "unshare": frozenset(),
    "command": frozenset(),
    "exec": frozenset({"a"}),
    "builtin": frozenset(),
}  # fmt: skip
EXEC_ENV = frozenset(
    {
        "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "DYLD_LIBRARY_PATH", "BASH_ENV", "ENV",
        "PROMPT_COMMAND", "PS4", "SHELLOPTS", "BASHOPTS", "IFS", "PATH", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF",
        "GIT_PAGER", "GIT_EDITOR", "GIT_ASKPASS", "GIT_PROXY_COMMAND", "GIT_EXEC_PATH", "GIT_TEMPLATE_DIR",
        "GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "EDITOR", "VISUAL", "PAGER", "MANPAGER",
        "LESSOPEN", "LESSCLOSE", "PERL5OPT", "PERL5LIB", "PERLLIB", "PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME",
        "PYTHONINSPECT", "NODE_OPTIONS", "NODE_PATH", "RUBYOPT", "RUBYLIB", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
        "JDK_JAVA_OPTIONS", "SSH_ASKPASS", "SUDO_ASKPASS", "BROWSER", "TAR_OPTIONS", "RSYNC_RSH", "RSYNC_CONNECT_PROG",
        "CURL_HOME", "WGETRC", "npm_config_script_shell", "HISTFILE", "ZDOTDIR", "XDG_CONFIG_HOME", "TERMINFO",
    }
)  # fmt: skip
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_MAX_WORDS = 4096
_MAX_WRAPS = 8


def program_name(word: str) -> str:
    """The program a command word names: the basename, lowercased, without `.exe`, versions
    (`python3.12` -> `python`) and aliases (`gawk` -> `awk`)."""
    name = word.replace("\\", "/").rsplit("/", 1)[-1].lower()
    if name.endswith(".exe"):
        name = name[:-4]
    base = _ALIASES.get(name, name)
    if base not in _SPECS and base not in _WRAPPERS:
        stem = re.sub(r"[\d.]+$", "", name)
        base = _ALIASES.get(stem, stem) if stem else base
    return base


def _options(spec: _Spec, args: Sequence[str]) -> str | None:
    """Why one of ``args`` (the words after the program) is a dangerous option, or None."""
    i = 0
    n = min(len(args), _MAX_WORDS)
    while i < n:
        w = args[i]
        nxt = args[i + 1] if i + 1 < n else ""
        if w == "--":
            break
        if w.startswith("--") and len(w) > 2:
            name, eq, value = w[2:].partition("=")
            effect = spec.long.get(name)
            if effect is not None:
                return f"--{name} {effect}"
            check = spec.valued.get(name)
            if check is not None and check[1](value if eq else nxt):
                return f"--{name} {check[0]}"
            if not eq and name in spec.valued:
                i += 1
        elif w.startswith("-") and len(w) > 1:
            body = w[1:]
            if spec.single_dash_long or body in spec.short:
                name, eq, value = body.partition("=")
                if name in spec.short:
                    return f"-{name} {spec.short[name]}"
                check = spec.valued.get(name)
                if check is not None and check[1](value if eq else nxt):
                    return f"-{name} {check[0]}"
                if spec.single_dash_long:
                    i += 1
                    continue
            for j, letter in enumerate(body):
                if letter in spec.short:
                    return f"-{letter} {spec.short[letter]}"
                check = spec.valued.get(letter)
                if check is not None:
                    value = body[j + 1 :].lstrip("=") or nxt
                    if check[1](value):
                        return f"-{letter} {check[0]}"
                    if j + 1 == len(body):
                        i += 1
                    break
                if letter in spec.takes_value:
                    if j + 1 == len(body):
                        i += 1  # the value is the next word
                    break
        i += 1
    if spec.script is not None:
        return spec.script(list(args[:n]))
    return None


def _inner_command(wrapper: str, args: Sequence[str]) -> int | None:
    """Index in ``args`` of the wrapped program, or None when there is none."""
    valued = _WRAPPERS[wrapper]
    i = 0
    while i < len(args):
        w = args[i]
        if w == "--":
            return i + 1 if i + 1 < len(args) else None
        if w.startswith("-") and len(w) > 1:
            name = w.lstrip("-").partition("=")[0]
            if "=" not in w and (name in valued or (not w.startswith("--") and name[-1:] in valued)):
                i += 2
            else:
                i += 1
            continue
        if wrapper == "env" and _ASSIGNMENT.match(w):
            i += 1
            continue
        if wrapper in ("timeout", "nice", "taskset", "chroot") and (w[:1].isdigit() or (wrapper == "chroot" and w.startswith("/"))):
            i += 1  # the duration, priority, CPU mask or new root
            continue
        return i
    return None


def option_problem(argv: Sequence[str], allowed: Sequence[str] | None = None) -> OptionProblem | None:
    """Why running ``argv`` (program first) does more than the program's own job, or None.

    With ``allowed`` (the tool's `commands` allowlist), the program and every program a wrapper
    runs must be in it. Never raises."""
    words = list(argv[:_MAX_WORDS])
    for _ in range(_MAX_WRAPS):
        while words and _ASSIGNMENT.match(words[0]):
            var = words[0].partition("=")[0]
            if var in EXEC_ENV or var.startswith(("LD_", "DYLD_", "GIT_CONFIG_")):
                return OptionProblem("exec_environment", f"the environment assignment {var}= changes what the program loads or runs")
            words = words[1:]
        if not words:
            return None
        first = words[0]
        program = program_name(first)
        if allowed is not None and first not in allowed:
            return OptionProblem("not_allowed", f"command {first!r} is not in the allowlist")
        if program in _WRAPPERS:
            at = _inner_command(program, words[1:])
            if program == "env":
                for w in words[1 : 1 + (at if at is not None else len(words))]:
                    var = w.partition("=")[0] if _ASSIGNMENT.match(w) else ""
                    if var in EXEC_ENV or var.startswith(("LD_", "DYLD_", "GIT_CONFIG_")):
                        return OptionProblem("exec_environment", f"the environment assignment {var}= changes what the program loads or runs")
            if program == "env" and any(w in ("-S", "--split-string") or w.startswith(("-S", "--split-string=")) for w in words[1:]):
                return OptionProblem("dangerous_option", f"env -S {RUNS} from one string")
            if at is None:
                return None
            words = words[1 + at :]
            continue
        spec = _SPECS.get(program)
        if spec is None:
            return None
        why = _options(spec, words[1:])
        return OptionProblem("dangerous_option", f"{program} {why}") if why is not None else None
    return OptionProblem("wrapped_command", "too many nested command wrappers")


# Long options distinctive enough that a value beginning with one is an injected option, whatever
# program receives it (`--upload-pack=touch /tmp/x` as a repository URL).
_INJECTED = re.compile(
    r"^\s*(?:--(?:upload-pack|receive-pack|exec|template|config-env|open-files-in-pager|extcmd|rsh|rsync-path|"
    r"checkpoint-action|to-command|use-compress-program|info-script|new-volume-script|rsh-command|rmt-command|"
    r"output|output-document|output-file|post-file|body-file|upload-file|unzip-command|use-askpass|script-shell|"
    r"compress-program|filter|pager|eval|require|log-file|write-batch|cookie-jar|dump-header|directory-prefix|"
    r"config|separate-git-dir)\b"
    r"|-o\s*(?:proxycommand|localcommand|knownhostscommand|permitlocalcommand)|-(?:exec|execdir|ok|okdir|delete|fprintf?|fls)\b"
    r"|-c\s*(?:core\.|alias\.|protocol\.|credential\.|include)|-TT\b)",
    re.IGNORECASE,
)


def injected_option(value: str) -> str | None:
    """The option a value smuggles into a program's argv (it starts with one that runs programs,
    writes or sends files), or None."""
    if not value.lstrip().startswith("-"):
        return None
    m = _INJECTED.match(value)
    return m.group(0).strip() if m is not None else None
