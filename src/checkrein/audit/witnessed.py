"""`verify --policy`: the log checked against what a C2SP tlog-policy says can vouch for it.

Run after the chain itself verified, with the Merkle tree of every event hash. It fails (one
named `Problem` each) when:

    rewrite     a signed checkpoint note is not a prefix of this log (its root differs), or a
                note's log signature or a known witness's cosignature does not verify
    cut_back    a note covers more events than the log holds, or a witness named in the policy
                (with its URL) has cosigned a larger tree of this log than the log's newest
    fork        a witness holds a different tree of a size this log has
    no_quorum   the newest checkpoint has no note, or fewer cosignatures than the quorum
    no_origin   the log was never published as C2SP notes, or the policy has no key for it

Presenting the newest checkpoint to a witness is an ordinary `add-checkpoint` (it may cosign
it); nothing in the audit directory is changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .checkpoints import CheckpointStore
from .note import NoteError, SignedNote, parse_checkpoint
from .proofs import MerkleTree
from .tlog_policy import TlogPolicy
from .witness import WitnessTransport, push_checkpoint

__all__ = ["WitnessedFinding", "WitnessedReport", "check_witnessed"]


@dataclass(frozen=True)
class WitnessedFinding:
    kind: str
    reason: str
    size: int | None = None
    file: str | None = None


@dataclass
class WitnessedReport:
    problem: WitnessedFinding | None = None
    origin: str | None = None
    notes_checked: int = 0
    newest_size: int | None = None
    cosigned_by: list[str] = field(default_factory=list)
    witnesses_asked: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    undetected: list[str] = field(default_factory=list)


class _Fail(Exception):
    def __init__(self, finding: WitnessedFinding) -> None:
        super().__init__(finding.reason)
        self.finding = finding


def check_witnessed(
    store: CheckpointStore,
    tree: MerkleTree,
    checkpoint_sizes: list[int],
    policy: TlogPolicy,
    *,
    transport: WitnessTransport | None,
    live: bool = False,
    timeout_s: float = 10.0,
) -> WitnessedReport:
    """See the module docstring. ``checkpoint_sizes``: the counts of the log's checkpoint
    events, in order. Raises ``OSError`` for an unreadable ``checkpoints/`` folder."""
    report = WitnessedReport()
    try:
        _run(report, store, tree, checkpoint_sizes, policy, transport, live, timeout_s)
    except _Fail as fail:
        report.problem = fail.finding
    return report


def _run(
    report: WitnessedReport,
    store: CheckpointStore,
    tree: MerkleTree,
    checkpoint_sizes: list[int],
    policy: TlogPolicy,
    transport: WitnessTransport | None,
    live: bool,
    timeout_s: float,
) -> None:
    origin = store.read_origin()
    if origin is None:
        raise _Fail(WitnessedFinding("no_origin", "the log has no checkpoints/origin: it was never published as "
                                     "signed C2SP checkpoints ([audit] signing_key = false?)"))
    report.origin = origin
    log_key = policy.log_key(origin)
    if log_key is None:
        raise _Fail(WitnessedFinding("no_origin", f"the policy has no log key named {origin!r}"))
    notes: dict[int, SignedNote] = {}
    for size in store.sizes():
        name = store.path(size).name
        try:
            note = store.load(size)
            body = parse_checkpoint(note.text)
        except NoteError as exc:
            raise _Fail(WitnessedFinding("rewrite", f"not a checkpoint note: {exc}", size, name)) from None
        if note.verified_by(log_key) is not True:
            raise _Fail(WitnessedFinding("rewrite", "the log's signature on this checkpoint is missing or does "
                                         "not verify with the policy's log key (forged or re-signed)", size, name))
        if body.origin != origin or body.size != size:
            raise _Fail(WitnessedFinding("rewrite", f"note says {body.origin} size {body.size}", size, name))
        if size > tree.size:
            raise _Fail(WitnessedFinding(
                "cut_back", f"a signed checkpoint covers {size} events but the log holds {tree.size}: "
                "events were cut", size, name))
        if tree.root(size) != body.root:
            raise _Fail(WitnessedFinding(
                "rewrite", f"signed checkpoint of size {size} is not a prefix of this log (its root differs): "
                "the log was rewritten", size, name))
        for w in policy.witnesses.values():
            if note.verified_by(w.key) is False:
                raise _Fail(WitnessedFinding(
                    "rewrite", f"witness {w.name}'s cosignature does not verify over this checkpoint "
                    "(the note was altered)", size, name))
        notes[size] = note
        report.notes_checked += 1
    newest = _newest(checkpoint_sizes, notes, live, report)
    note = notes[newest]
    report.newest_size = newest
    report.cosigned_by = sorted(w.name for w in policy.witnesses.values() if note.verified_by(w.key))
    # Witnesses first: "a witness saw a longer or another history" names the attack better than
    # the missing cosignature it also causes.
    _ask_witnesses(report, policy, note, newest, tree, transport, timeout_s)
    if not policy.satisfied(set(report.cosigned_by)):
        raise _Fail(WitnessedFinding(
            "no_quorum", f"the newest checkpoint (size {newest}) is cosigned by "
            f"{', '.join(report.cosigned_by) or 'no witness'}; the policy needs {policy.describe_quorum()}",
            newest, store.path(newest).name))


def _newest(checkpoint_sizes: list[int], notes: dict[int, SignedNote], live: bool, report: WitnessedReport) -> int:
    if not checkpoint_sizes:
        raise _Fail(WitnessedFinding("no_quorum", "the log has no checkpoint"))
    newest = checkpoint_sizes[-1]
    if newest in notes:
        return newest
    if live:
        older = [s for s in checkpoint_sizes if s in notes]
        if older:
            report.warnings.append(
                f"newest checkpoint (size {newest}) has no note yet (--live); checked size {older[-1]}")
            return older[-1]
    raise _Fail(WitnessedFinding("no_quorum", f"the newest checkpoint (size {newest}) has no signed note in "
                                 "checkpoints/ (deleted, or never published)", newest))


def _ask_witnesses(
    report: WitnessedReport,
    policy: TlogPolicy,
    note: SignedNote,
    size: int,
    tree: MerkleTree,
    transport: WitnessTransport | None,
    timeout_s: float,
) -> None:
    with_url = [w for w in policy.witnesses.values() if w.url]
    if not with_url or transport is None:
        report.undetected.append("a cut back to an earlier cosigned checkpoint (no witness URL in the policy to ask)")
        return
    for w in with_url:
        r = push_checkpoint(transport, w.url or "", note, tree.consistency_proof, timeout_s=timeout_s)
        report.witnesses_asked.append(w.name)
        if r.outcome == "witness_ahead":
            raise _Fail(WitnessedFinding(
                "cut_back", f"witness {w.name} has cosigned size {r.witness_size} of this log, but it ends at "
                f"checkpoint size {size}: events were cut (or this is an old copy)", size))
        if r.outcome == "fork":
            raise _Fail(WitnessedFinding("fork", f"witness {w.name}: {r.detail}: two histories under one origin", size))
        if r.outcome != "cosigned":
            report.warnings.append(f"witness {w.name} could not be asked ({r.outcome}: {r.detail})")
            report.undetected.append(f"a cut back that only witness {w.name} has seen")
