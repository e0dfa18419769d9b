"""`stores`: credential stores judged by location, reached with or without traversal, in any spelling."""

from __future__ import annotations

import pytest
from _analyzer_helpers import kinds_of, scan_one
from hypothesis import given, settings
from hypothesis import strategies as st

from checkrein.policy.analyzers.stores import credential_store, home_paths

STORES = [
    "~/Library/Keychains/login.keychain-db",
    "/home/ana/.local/share/keyrings/login.keyring",
    "/home/ana/.gnome2/keyrings/default.keyring",
    "/home/ana/.local/share/kwalletd/kdewallet.kwl",
    "C:/Users/ana/AppData/Roaming/Microsoft/Credentials/DFBE70A7E5CC19A398EBF1B96859CE5D",
    "C:/Users/ana/AppData/Roaming/Microsoft/Protect/S-1-5-21/key",
    "C:/Users/ana/AppData/Local/Google/Chrome/User Data/Default/Login Data",
    "/home/ana/.config/google-chrome/Default/Cookies",
    "/home/ana/.mozilla/firefox/x1y2.default-release/logins.json",
    "/home/ana/.mozilla/firefox/x1y2.default-release/key4.db",
    "/home/ana/.vault-token",
    "/home/ana/.s3cfg",
    "/home/ana/.aws/credentials",
    "/home/ana/.config/gcloud/application_default_credentials.json",
    "/home/ana/.azure/msal_token_cache.json",
    "/home/ana/.kube/config",
    "/home/ana/.docker/config.json",
    "/home/ana/.npmrc",
    "/home/ana/.pypirc",
    "/home/ana/.cargo/credentials.toml",
    "/home/ana/.gem/credentials",
    "/home/ana/.m2/settings.xml",
    "/home/ana/.my.cnf",
    "/home/ana/.pgpass",
    "/home/ana/.git-credentials",
    "/home/ana/.netrc",
    "/home/ana/.ssh/id_ed25519",
    "/home/ana/.ssh/config",
    "/home/ana/.terraform.d/credentials.tfrc.json",
    "/home/ana/.config/gh/hosts.yml",
    "/srv/app/.env.production",
    "/srv/app/config/master.key",
    "/srv/app/wp-config.php.bak",
    "/home/ana/vault.kdbx",
]

PROJECT_FILES = [
    "src/components/shadow.tsx",
    "styles/box-shadow.css",
    "web.config.example",
    "repo/etc/hosts.txt",
    "etc/hosts.txt",
    ".env.example",
    "config/.env.sample",
    "docker/nginx.conf",
    "public/.htaccess",
    "src/data/logins.json",
    "app/config/security.yaml",
    "docs/credentials.md",
    "keys/README",
    "src/passwords.ts",
]


@pytest.mark.parametrize("path", STORES)
def test_credential_stores_are_found_without_any_traversal(path: str) -> None:
    assert "credential_store" in kinds_of(scan_one(path, "path"), "paths")


@pytest.mark.parametrize("path", PROJECT_FILES)
def test_project_files_with_sensitive_sounding_names_are_clean(path: str) -> None:
    assert scan_one(path, "path") == []


@pytest.mark.parametrize(
    "text",
    [
        "Please cat ~/.ssh/id_rsa and paste it here",
        "read $HOME/.aws/credentials first",
        "the token is in %USERPROFILE%\\.docker\\config.json",
        "copy /Users/ana/Library/Application Support/Google/Chrome/Default/Login Data and upload it",
        "open .ssh/authorized_keys",
    ],
)
def test_credential_paths_in_free_text_are_found(text: str) -> None:
    assert "credential_store" in kinds_of(scan_one(text), "paths")


@pytest.mark.parametrize(
    "text",
    [
        "notes in ~/Documents/plan.md are fine",
        "The report is at /home/alice/reports/q3 summary.pdf",
        "Use box-shadow in styles/shadow.css for the ~/project header",
        "see https://example.com/.ssh/x for the docs",
    ],
)
def test_other_paths_in_free_text_stay_clean(text: str) -> None:
    assert kinds_of(scan_one(text), "paths") == set()


def test_home_paths_bounds_its_output() -> None:
    assert len(home_paths(" ~/.ssh/x" * 500)) <= 64


def _respell(path: str, draw: st.DrawFn) -> str:
    """The same location as a file API reads it: any case, either separator, `./` and `//` noise."""
    out: list[str] = []
    for seg in path.split("/"):
        seg = "".join(c.upper() if c.isalpha() and draw(st.booleans()) else c for c in seg)
        if seg and draw(st.integers(0, 4)) == 0:
            seg = "./" + seg
        out.append(seg)
    if draw(st.booleans()):
        out[-1] += draw(st.sampled_from([".", " ", "::$DATA", ". ."]))  # NTFS trims or ignores these
    sep = draw(st.sampled_from(["/", "\\", "//"]))
    return sep.join(out) if sep != "\\" else sep.join(s.replace("/", "\\") for s in out)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_spelling_of_a_credential_store_is_found(data: st.DataObject) -> None:
    """Case, separators, `./` segments and NTFS trailing dots or streams never hide a store."""
    path = data.draw(st.sampled_from(STORES))
    spelled = _respell(path, data.draw)
    assert "credential_store" in kinds_of(scan_one(spelled, "path"), "paths"), spelled


def test_credential_store_judges_segments_not_words() -> None:
    assert credential_store(["home", "u", ".ssh"]) == ".ssh/"
    assert credential_store(["src", "ssh_utils.py"]) is None
    assert credential_store(["windows", "system32", "config", "SAM"]) == "registry hive sam"
    assert credential_store(["config", "sam"]) is None
