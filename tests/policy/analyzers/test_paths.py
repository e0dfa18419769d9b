"""`paths`: traversal, system files, Windows and UNC forms, wrappers; plain names stay clean."""

from __future__ import annotations

import pytest
from _analyzer_helpers import kinds_of, scan_one

from checkrein.policy.analyzers import ScanContext
from checkrein.policy.analyzers.paths import check_path


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("../../etc/passwd", "traversal"),
        ("..\\..\\windows\\win.ini", "traversal"),
        ("a/../../b", "traversal"),
        ("....//....//x", "traversal"),
        ("..;/..;/x", "traversal"),
        ("%2e%2e%2f%2e%2e%2fsecret", "traversal"),
        ("..%c0%af..%c0%afx", "traversal"),
        ("/etc/shadow", "sensitive_file"),
        ("/proc/self/environ", "sensitive_file"),
        ("/root/.ssh/id_rsa", "credential_store"),
        ("/var/log/syslog", "system_path"),
        ("C:\\Windows\\System32\\config\\SAM", "system_path"),
        ("\\\\attacker\\share\\x", "unc_path"),
        ("\\\\?\\C:\\x", "windows_device_path"),
        ("~/.bashrc", "home_expansion"),
        ("~root/x", "home_expansion"),
        ("notes.txt\x00.png", "nul_byte"),
        ("notes.txt%00.png", "nul_byte"),
        ("php://filter/convert.base64-encode/resource=index", "inclusion_wrapper"),
        ("file:///etc/hosts", "inclusion_wrapper"),
        ("zip://archive.zip#x", "inclusion_wrapper"),
        ("phar://x.phar/y", "inclusion_wrapper"),
        ("expect://id", "inclusion_wrapper"),
        ("data://text/plain;base64,SGk=", "inclusion_wrapper"),
        ("D:\\data\\x.txt", "windows_drive"),
        ("..%bg%qf..%bg%qfboot.ini", "malformed_encoding"),
        ("..0x2f..0x2fx", "encoded_separator"),
        ("Li4vLi4vZXRjL3Bhc3N3ZA==", "encoded_traversal"),
        ("/" + "A" * 300, "overlong_segment"),
    ],
)
def test_path_attacks_are_reported(value: str, kind: str) -> None:
    assert kind in kinds_of(scan_one(value, "path"), "paths")


@pytest.mark.parametrize(
    "value",
    ["notes 2024.txt", "a/b.c", "report..final.pdf", "docs/readme.md", "./src/main.py", ".", "Archived_Quarter1", "résumé.pdf", "100% done.txt"],
)
def test_plain_relative_names_are_benign(value: str) -> None:
    assert scan_one(value, "path") == []


def test_roots_allow_paths_inside_and_deny_paths_outside() -> None:
    ctx = ScanContext(path_roots=("/srv/data",))
    inside = check_path(["/srv/data/reports/q1.csv"], "/p", "path", ctx)
    relative = check_path(["reports/q1.csv"], "/p", "path", ctx)
    outside = check_path(["/srv/database/x"], "/p", "path", ctx)
    escaped = check_path(["/srv/data/../secrets"], "/p", "path", ctx)
    assert inside == [] and relative == []
    assert "outside_roots" in kinds_of(outside)
    assert "outside_roots" in kinds_of(escaped)


def test_relative_roots_compare_normalized_paths() -> None:
    ctx = ScanContext(path_roots=("workspace",))
    assert check_path(["workspace/a.txt"], "/p", "path", ctx) == []
    assert "outside_roots" in kinds_of(check_path(["workspace2/a.txt"], "/p", "path", ctx))


@pytest.mark.parametrize(
    "value",
    ["see ../README.md for details", "Meet at 10/11 in the lobby", "/home/user/projects", "Use C: drive", "The file is notes.txt"],
)
def test_untyped_text_is_only_flagged_on_high_confidence(value: str) -> None:
    assert kinds_of(scan_one(value), "paths") == set()


@pytest.mark.parametrize(
    "value",
    ["../../../../etc/passwd", "php://input", "/etc/passwd", "..%252f..%252f..%252fx", "user/.htpasswd"],
)
def test_untyped_values_still_catch_unambiguous_traversal(value: str) -> None:
    assert kinds_of(scan_one(value), "paths")


@pytest.mark.parametrize(
    "value",
    ["css/box-shadow.css", "https://example.com/account/passwd-reset", "img/system32-icon.png", "docs/web.config.md"],
)
def test_untyped_relative_paths_with_sensitive_looking_words_are_clean(value: str) -> None:
    assert kinds_of(scan_one(value), "paths") == set()
