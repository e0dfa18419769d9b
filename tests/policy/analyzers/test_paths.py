"""`paths`: traversal, system files, Windows and UNC forms, wrappers; plain names stay clean."""

from __future__ import annotations

import pytest
from _analyzer_helpers import kinds_of, scan_one
from hypothesis import given, settings
from hypothesis import strategies as st

from checkrein.policy.analyzers import ScanContext, paths
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


_ROUTE_ROOTS = ["/srv/data", "/workspace/data", "/srv/data/", "/", "/etc", "data", "C:\\data", "/srv/a..;b", "/srv/Data", "//srv/data"]
_ROUTE_NAMES = sorted(
    {*paths._NAMED, "reports", "q3", "revenue-by-region.csv", "a.b", "x", "ETC", "Passwd", "id_rsa.bak", "key.pem", "vault.kdbx",
     "file.", "passwd.", "..", ".", "", "0x2e", "a..b", ".env.prod", "a b", "a:b", "~", "%2e", "data", "srv", "workspace"}
)  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(
    st.lists(st.sampled_from(_ROUTE_ROOTS), max_size=2).map(lambda extra: ["/srv/data", *extra]),
    st.sampled_from(["/srv/data"] * 4 + ["/workspace/data", "/srv", "", "/etc", "/srv/Data", "/srv/database"]),
    st.lists(st.sampled_from(_ROUTE_NAMES) | st.text(alphabet="abcXYZ019_-", min_size=1, max_size=8) | st.text(alphabet="abc._-", max_size=4), max_size=5),
    st.sampled_from(["", "", "", "/", "."]),
)
def test_the_plain_path_route_reports_what_the_general_check_reports(roots: list[str], head: str, names: list[str], tail: str) -> None:
    """`check_path`'s fast route for a clean path inside a root agrees with the general check."""
    value = head + "".join("/" + n for n in names) + tail
    ctx = ScanContext(path_roots=tuple(roots))
    assert paths.check_path([value], "/p", "path", ctx) == paths.general_check_path([value], "/p", "path", ctx)


def test_the_plain_path_route_is_taken_for_a_clean_path_and_not_for_a_named_one() -> None:
    """The route answers for a clean path under a root and defers for names the stores know."""
    roots = ("/workspace/data",)
    assert paths._plain_inside("/workspace/data/reports/2026/q3/revenue-by-region.csv", roots)
    for value in ("/workspace/data/.ssh/id_rsa", "/workspace/data/a/id_rsa.bak", "/workspace/data/windows/system32", "/workspace/database/x", "/workspace/data/x/../../etc"):
        assert not paths._plain_inside(value, roots)
