"""The sandbox's file-name checks against traversal strings and their encoded variants."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from checkrein.servers.sandbox_paths import PathRefused, check_filename, resolve_in_sandbox, seed_sandbox

ATTACKS = [
    "../etc/passwd",
    "../../../../etc/shadow",
    "..\\..\\windows\\win.ini",
    "/etc/passwd",
    "~/.ssh/id_rsa",
    "~root",
    "$HOME",
    "${PATH}",
    "notes.txt|id",
    "notes.txt;rm -rf x",
    "notes.txt&&id",
    "a&b",
    "..",
    ".",
    "%2e%2e%2fetc%2fpasswd",
    "%2E%2E%2F",
    "..%2fsecret",
    "%2e%2e",
    "%252e%252e%252fetc%252fpasswd",
    "%25252e%25252e%25252f",
    "%2fetc%2fpasswd",
    "%5c..%5cwin.ini",
    "notes.txt%00.png",
    "notes.txt\x00.png",
    "a\nb",
    "\uff0e\uff0e\uff0fetc",  # fullwidth ../
    "C:\\boot.ini",
    "file:secret",
    "*.txt",
    "-rf",
    "",
    "   ",
    "x" * 200,
]


@pytest.mark.parametrize("name", ATTACKS)
def test_attack_names_are_refused(name: str) -> None:
    with pytest.raises(PathRefused):
        check_filename(name)


@pytest.mark.parametrize("name", ["notes.txt", "report-2026.md", "data_1.csv", ".hidden", "Ünïcode.txt", "a b.txt"])
def test_plain_names_are_accepted(name: str) -> None:
    assert check_filename(name) == name


def test_a_symlink_pointing_outside_is_refused_after_resolving(tmp_path: Path) -> None:
    root = tmp_path / "box"
    seed_sandbox(root)
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    os.symlink(outside, root / "link.txt")
    with pytest.raises(PathRefused, match="leaves the sandbox"):
        resolve_in_sandbox(root, "link.txt")
    assert resolve_in_sandbox(root, "notes.txt") == (root / "notes.txt").resolve()


def test_seeding_keeps_existing_files(tmp_path: Path) -> None:
    root = tmp_path / "box"
    root.mkdir()
    (root / "notes.txt").write_text("mine")
    seed_sandbox(root)
    assert (root / "notes.txt").read_text() == "mine"
    assert (root / "important.txt").exists() and (root / "config.ini").exists()
