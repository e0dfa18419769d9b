"""C2SP tlog-policy files: known logs, known witnesses (with optional URLs), groups and a quorum.

    log <vkey> [<url>]
    witness <name> <vkey> [<url>]
    group <name> all|any|<k> <member>...
    quorum <name>|none

Names are defined before use, each member listed once per group, exactly one quorum line.
`TlogPolicy.satisfied(names)` says whether the witnesses named (those whose cosignature
verified) meet the quorum. Parsing raises ``PolicyFileError`` naming the line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .note import ALG_COSIGNATURE_V1, ALG_ED25519, NoteError, VerifierKey, parse_vkey

__all__ = ["Group", "PolicyFileError", "PolicyWitness", "TlogPolicy", "parse_tlog_policy"]

MAX_ITEMS = 256


class PolicyFileError(ValueError):
    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(f"line {line}: {message}" if line else message)
        self.line = line


@dataclass(frozen=True)
class PolicyWitness:
    name: str
    key: VerifierKey
    url: str | None = None


@dataclass(frozen=True)
class Group:
    name: str
    threshold: int
    members: tuple[str, ...]


@dataclass
class TlogPolicy:
    logs: list[tuple[VerifierKey, str | None]] = field(default_factory=list)
    witnesses: dict[str, PolicyWitness] = field(default_factory=dict)
    groups: dict[str, Group] = field(default_factory=dict)
    quorum: str = "none"

    def log_key(self, origin: str) -> VerifierKey | None:
        """The policy's key for a log whose origin (= key name) is ``origin``."""
        for key, _ in self.logs:
            if key.name == origin:
                return key
        return None

    def satisfied(self, cosigned: set[str]) -> bool:
        return self._met(self.quorum, cosigned)

    def _met(self, name: str, cosigned: set[str]) -> bool:
        if name == "none":
            return True
        if name in self.witnesses:
            return name in cosigned
        group = self.groups[name]
        return sum(self._met(m, cosigned) for m in group.members) >= group.threshold

    def describe_quorum(self) -> str:
        if self.quorum == "none":
            return "none"
        if self.quorum in self.witnesses:
            return f"witness {self.quorum}"
        g = self.groups[self.quorum]
        return f"{g.threshold} of {', '.join(g.members)}"


def parse_tlog_policy(text: str) -> TlogPolicy:
    policy = TlogPolicy()
    quorum_line: int | None = None
    seen_keys: set[bytes] = set()
    for lineno, raw in enumerate(text.split("\n"), start=1):
        if any((ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F for c in raw):
            raise PolicyFileError("control character", lineno)
        words = raw.replace("\t", " ").split()
        if not words or words[0].startswith("#"):
            continue
        kind, args = words[0], words[1:]
        if len(policy.logs) + len(policy.witnesses) + len(policy.groups) > MAX_ITEMS:
            raise PolicyFileError(f"more than {MAX_ITEMS} logs, witnesses and groups", lineno)
        if kind == "log":
            if len(args) not in (1, 2):
                raise PolicyFileError("expected: log <vkey> [<url>]", lineno)
            key = _vkey(args[0], ALG_ED25519, lineno)
            if key.public in seen_keys:
                raise PolicyFileError("duplicate key", lineno)
            seen_keys.add(key.public)
            policy.logs.append((key, args[1] if len(args) == 2 else None))
        elif kind == "witness":
            if len(args) not in (2, 3):
                raise PolicyFileError("expected: witness <name> <vkey> [<url>]", lineno)
            name = _new_name(policy, args[0], lineno)
            key = _vkey(args[1], ALG_COSIGNATURE_V1, lineno)
            if key.public in seen_keys:
                raise PolicyFileError("duplicate key", lineno)
            seen_keys.add(key.public)
            policy.witnesses[name] = PolicyWitness(name, key, args[2] if len(args) == 3 else None)
        elif kind == "group":
            if len(args) < 3:
                raise PolicyFileError("expected: group <name> all|any|<k> <member>...", lineno)
            name = _new_name(policy, args[0], lineno)
            members = tuple(args[2:])
            for m in members:
                if m not in policy.witnesses and m not in policy.groups:
                    raise PolicyFileError(f"{m!r} is not a witness or group defined above", lineno)
            if len(set(members)) != len(members):
                raise PolicyFileError("a member is listed twice", lineno)
            policy.groups[name] = Group(name, _threshold(args[1], len(members), lineno), members)
        elif kind == "quorum":
            if len(args) != 1:
                raise PolicyFileError("expected: quorum <name>", lineno)
            if quorum_line is not None:
                raise PolicyFileError(f"second quorum line (first on line {quorum_line})", lineno)
            if args[0] != "none" and args[0] not in policy.witnesses and args[0] not in policy.groups:
                raise PolicyFileError(f"quorum {args[0]!r} is not a witness or group defined above", lineno)
            policy.quorum, quorum_line = args[0], lineno
        else:
            raise PolicyFileError(f"unknown line type {kind[:30]!r} (log, witness, group, quorum)", lineno)
    if quorum_line is None:
        raise PolicyFileError("the policy has no quorum line (use 'quorum none' to require no witness)")
    return policy


def _vkey(text: str, alg: int, lineno: int) -> VerifierKey:
    try:
        key = parse_vkey(text)
    except NoteError as exc:
        raise PolicyFileError(str(exc), lineno) from None
    if key.alg != alg:
        want = "a log key (type 0x01)" if alg == ALG_ED25519 else "a cosignature key (type 0x04)"
        raise PolicyFileError(f"expected {want}", lineno)
    return key


def _new_name(policy: TlogPolicy, name: str, lineno: int) -> str:
    if name == "none":
        raise PolicyFileError("'none' is reserved", lineno)
    if name in policy.witnesses or name in policy.groups:
        raise PolicyFileError(f"{name!r} is already defined", lineno)
    return name


def _threshold(text: str, n: int, lineno: int) -> int:
    if text == "all":
        return n
    if text == "any":
        return 1
    if not text.isdigit() or not 1 <= int(text) <= n:
        raise PolicyFileError(f"threshold must be all, any or 1..{n}", lineno)
    return int(text)
