"""The sandbox's command allowlist: parsing is pure, running uses no shell."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkrein.servers.sandbox_commands import CommandRefused, parse_command, run_command

ALLOWED = {
    "ls": ("ls",),
    "ls -la": ("ls", "-la"),
    "ls notes.txt": ("ls", "notes.txt"),
    "pwd": ("pwd",),
    "echo hello world": ("echo", "hello", "world"),
    "echo 'two words'": ("echo", "two words"),
    "date": ("date",),
    "date -u +%Y-%m-%d": ("date", "-u", "+%Y-%m-%d"),
    "whoami": ("whoami",),
    "cat notes.txt": ("cat", "notes.txt"),
    "cat -n notes.txt": ("cat", "-n", "notes.txt"),
}

REFUSED = [
    "ls | cat",
    "ls; rm -rf /",
    "ls && rm x",
    "ls || id",
    "ls & id",
    "echo $(whoami)",
    "echo `id`",
    "echo $HOME",
    "echo hi > notes.txt",
    "cat < notes.txt",
    "ls\nrm -rf /",
    "ls %7C id",
    "ls %3B id",
    "echo %2524%2528id%2529",
    "cat /etc/passwd",
    "cat ../../etc/passwd",
    "cat %2e%2e%2fetc%2fpasswd",
    "cat ~/.bashrc",
    "ls /",
    "ls -la ..",
    "rm -rf /",
    "/bin/ls",
    "sh -c ls",
    "bash",
    "python3 -c 'print(1)'",
    "curl http://example.com",
    "date -s 2020-01-01",
    "date -f notes.txt",
    "date -r notes.txt",
    "date tomorrow",
    "pwd -P extra",
    "whoami --help",
    "cat -",
    "ls --color=always",
    "echo 'unterminated",
    "",
    "   ",
    "echo " + "a" * 1200,
]


@pytest.mark.parametrize(("command", "argv"), ALLOWED.items())
def test_allowlisted_commands_parse_to_argv(command: str, argv: tuple[str, ...]) -> None:
    assert parse_command(command) == argv


@pytest.mark.parametrize("command", REFUSED)
def test_shell_syntax_other_programs_and_outside_paths_are_refused(command: str) -> None:
    with pytest.raises(CommandRefused):
        parse_command(command)


def test_run_uses_no_shell_and_the_sandbox_as_cwd(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    result = run_command(parse_command("echo 'a b'"), tmp_path)
    assert result.stdout == "a b\n" and result.exit_code == 0
    assert run_command(parse_command("pwd"), tmp_path).stdout.strip() == str(tmp_path)
    assert run_command(parse_command("cat notes.txt"), tmp_path).stdout == "hello"


def test_a_command_past_its_timeout_is_stopped(tmp_path: Path) -> None:
    with pytest.raises(CommandRefused, match="timed out"):
        run_command(("sleep", "30"), tmp_path, timeout_s=0.2)
