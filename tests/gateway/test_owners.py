"""`SessionOwners`: a session id is bound to the identity that opened it; bounded memory."""

from __future__ import annotations

from checkrein.frontend.owners import SessionOwners


def test_only_the_owner_is_admitted_and_refusals_are_counted() -> None:
    """The owner passes, another identity and an unknown id do not."""
    owners = SessionOwners()
    owners.record("s1", "token:ci")
    assert owners.admits("s1", "token:ci")
    assert not owners.admits("s1", "token:ops")
    assert not owners.admits("never-issued", "token:ci")
    assert owners.refused == 2
    owners.forget("s1")
    assert not owners.admits("s1", "token:ci")


def test_the_oldest_record_goes_first_and_its_session_is_then_refused() -> None:
    """Past the bound the oldest session loses its record and is refused, never served unbound."""
    owners = SessionOwners(max_sessions=2)
    for sid in ("a", "b", "c"):
        owners.record(sid, "token:ci")
    assert len(owners) == 2
    assert not owners.admits("a", "token:ci")
    assert owners.admits("b", "token:ci") and owners.admits("c", "token:ci")


def test_a_fleet_member_lets_ids_it_never_saw_go_on_to_the_shared_check() -> None:
    """strict=False: unknown ids pass (the shared state checks them); known ones stay bound."""
    owners = SessionOwners(strict=False)
    owners.record("s1", "token:ci")
    assert owners.admits("elsewhere", "token:ops")
    assert not owners.admits("s1", "token:ops")
