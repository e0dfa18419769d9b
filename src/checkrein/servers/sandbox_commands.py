"""Commands the `sandbox` server runs: a short allowlist, no shell, cwd = the sandbox.

`parse_command` is pure: it splits the line with POSIX rules and refuses shell syntax (pipes,
redirection, chaining, substitution, variables), programs outside the allowlist,
options outside each program's small list, and file arguments that fail `check_filename`.
`run_command` re-checks each file argument against the directory it runs in (a symlink in the
sandbox that points outside is refused, as `read_file` refuses it), then executes the argv
without a shell, with a minimal environment, a timeout and a cap on the output kept.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from .sandbox_paths import PathRefused, check_filename, resolve_in_sandbox

__all__ = [
    "ALLOWED_PROGRAMS",
    "COMMAND_TIMEOUT_S",
    "CommandRefused",
    "CommandResult",
    "parse_command",
    "run_command",
]

COMMAND_TIMEOUT_S = 10.0
MAX_COMMAND_CHARS = 1000
MAX_OUTPUT_CHARS = 20_000
ALLOWED_PROGRAMS = ("ls", "pwd", "echo", "date", "whoami", "cat")

# Characters that mean shell syntax. Without a shell they would be inert, but a command that
# contains them was written for a shell, so it is refused rather than run in a surprising way.
_SHELL_SYNTAX = ("|", ";", "&", ">", "<", "`", "$", "\n", "\r", "\x00")

_OPTIONS = {
    "ls": re.compile(r"^-[lahtrS1AFR]+$"),
    "cat": re.compile(r"^-[nbsAETv]+$"),
    "echo": re.compile(r"^-[neE]+$"),
    "date": re.compile(r"^(-u|--utc|-R|--rfc-email|-I(date|seconds|minutes|hours)?|\+[%A-Za-z0-9 :_./,-]*)$"),
}
_TAKES_FILES = frozenset({"ls", "cat"})
_NO_ARGS = frozenset({"pwd", "whoami"})


class CommandRefused(ValueError):
    """A command the sandbox will not run; the message is safe to show to a client."""


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    exit_code: int
    stdout: str
    stderr: str
    truncated: bool


def parse_command(command: str) -> tuple[str, ...]:
    """The argv to run for ``command``; raises `CommandRefused`. Pure."""
    if not isinstance(command, str) or not command.strip():
        raise CommandRefused("refused: empty command")
    if len(command) > MAX_COMMAND_CHARS:
        raise CommandRefused(f"refused: command longer than {MAX_COMMAND_CHARS} characters")
    for variant in (command, unquote(command), unquote(unquote(command))):
        bad = sorted({ch for ch in _SHELL_SYNTAX if ch in variant})
        if bad:
            shown = ", ".join(repr(c) for c in bad)
            raise CommandRefused(
                f"refused: shell syntax is not allowed ({shown}); no pipes, redirection, chaining or substitution"
            )
    try:
        argv = shlex.split(command, posix=True)
    except ValueError as exc:
        raise CommandRefused(f"refused: cannot parse command ({exc})") from None
    if not argv:
        raise CommandRefused("refused: empty command")
    program, args = argv[0], argv[1:]
    if program not in ALLOWED_PROGRAMS:
        raise CommandRefused(
            f"refused: {program!r} is not allowed; allowed commands are {', '.join(ALLOWED_PROGRAMS)}"
        )
    if program in _NO_ARGS and args:
        raise CommandRefused(f"refused: {program} takes no arguments here")
    options = _OPTIONS.get(program)
    for arg in args:
        if arg.startswith(("-", "+")) and not (program == "echo" and not arg.startswith("-")):
            if options is None or not options.fullmatch(arg):
                raise CommandRefused(f"refused: option {arg!r} is not allowed for {program}")
            continue
        if program in _TAKES_FILES:
            try:
                check_filename(arg)
            except PathRefused as exc:
                raise CommandRefused(f"{exc} (argument {arg!r})") from None
        elif program == "date":
            raise CommandRefused(f"refused: argument {arg!r} is not allowed for date")
    return tuple(argv)


def _file_arguments(argv: tuple[str, ...]) -> list[str]:
    if argv[0] not in _TAKES_FILES:
        return []
    return [a for a in argv[1:] if not a.startswith("-")]


def run_command(argv: tuple[str, ...], cwd: Path, *, timeout_s: float = COMMAND_TIMEOUT_S) -> CommandResult:
    """Run ``argv`` (from `parse_command`) in ``cwd`` without a shell.

    Raises `CommandRefused` when a file argument resolves outside ``cwd`` (a symlink pointing
    out), when the command times out, or when the program cannot be started.
    """
    for arg in _file_arguments(argv):
        try:
            resolve_in_sandbox(cwd, arg)
        except PathRefused as exc:
            raise CommandRefused(f"{exc} (argument {arg!r})") from None
    try:
        # argv comes from parse_command's allowlist; no shell is involved.
        proc = subprocess.run(
            list(argv),
            cwd=cwd,
            shell=False,
            capture_output=True,
            timeout=timeout_s,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC"},
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CommandRefused(f"command timed out after {timeout_s:g} s") from None
    except OSError as exc:
        raise CommandRefused(f"command could not start: {exc.strerror}") from None
    out = proc.stdout.decode("utf-8", errors="replace")
    err = proc.stderr.decode("utf-8", errors="replace")
    truncated = len(out) > MAX_OUTPUT_CHARS or len(err) > MAX_OUTPUT_CHARS
    return CommandResult(argv, proc.returncode, out[:MAX_OUTPUT_CHARS], err[:MAX_OUTPUT_CHARS], truncated)
