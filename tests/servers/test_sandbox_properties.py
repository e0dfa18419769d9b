"""Property tests: whatever the input, the sandbox either refuses it or stays inside its rules."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from checkrein.servers.sandbox_commands import ALLOWED_PROGRAMS, CommandRefused, parse_command
from checkrein.servers.sandbox_paths import PathRefused, resolve_in_sandbox

PIECES = st.sampled_from(["a", "b.txt", ".", "..", "/", "\\", "%2e", "%2f", "%25", "%5c", "~", "$", "|", ";",
                          "&", " ", "-", "\x00", "\uff0e", "\uff0f", "\u2215", "notes", "ls", "cat", "'", '"'])
NAMES = st.one_of(st.lists(PIECES, max_size=8).map("".join), st.text(max_size=40))


@settings(max_examples=400, deadline=None)
@given(name=NAMES)
def test_an_accepted_name_always_resolves_directly_inside_the_sandbox(name: str) -> None:
    root = Path("/tmp/checkrein-property-sandbox")
    try:
        path = resolve_in_sandbox(root, name)
    except PathRefused:
        return
    assert path.parent == root.resolve()
    assert ".." not in name and "/" not in name and "\\" not in name


@settings(max_examples=400, deadline=None)
@given(command=st.one_of(st.lists(PIECES, max_size=10).map(" ".join), st.text(max_size=60)))
def test_an_accepted_command_is_an_allowlisted_program_with_inert_arguments(command: str) -> None:
    try:
        argv = parse_command(command)
    except CommandRefused:
        return
    assert argv[0] in ALLOWED_PROGRAMS
    for arg in argv[1:]:
        assert not any(ch in arg for ch in "|;&<>`$\n\x00")
        if argv[0] in ("cat", "ls") and not arg.startswith("-"):
            assert "/" not in arg and ".." not in arg
