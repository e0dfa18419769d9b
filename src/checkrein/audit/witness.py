"""The C2SP tlog-witness `add-checkpoint` exchange, without the network.

The HTTP transport is injected (`WitnessTransport`; the httpx2 one is `audit/witness_http.py`,
the only module of `audit/` that opens sockets), so this module and everything that uses it stay
pure and testable. One `push` may take two requests: a witness that has cosigned this log before
answers the first with 409 and its size, and the second carries a consistency proof from there.

What a push can end in (`PushResult.outcome`):

    cosigned       200: one or more cosignature lines came back
    witness_ahead  the witness has cosigned a larger tree of this log: the log was cut back
    fork           the witness holds a different tree for a size this log has (422, or a 409
                   for an equal size): two histories under one origin
    rejected       400/403/404: the witness does not know this log or key, or refuses the body
    unreachable    transport error, timeout or 5xx
    bad_reply      a 200 whose body is not signature lines, or a 409 without a size
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from .note import NoteError, NoteSignature, SignedNote, b64, parse_checkpoint, parse_signature_line
from .proofs import ProofError

__all__ = [
    "PushOutcome",
    "PushResult",
    "WitnessTransport",
    "WitnessUnreachable",
    "add_checkpoint_body",
    "push_checkpoint",
]

PushOutcome = Literal["cosigned", "witness_ahead", "fork", "rejected", "unreachable", "bad_reply"]
MAX_PROOF_LINES = 63
SIZE_CONTENT_TYPE = "text/x.tlog.size"


class WitnessUnreachable(Exception):
    """The transport could not complete the request (connection, TLS, timeout)."""


class WitnessTransport(Protocol):
    def post(self, url: str, body: bytes, timeout_s: float) -> tuple[int, str, bytes]:
        """POST ``body`` to ``url``; (status, content type, response body). Raises
        ``WitnessUnreachable``."""
        ...


ProofSource = Callable[[int, int], list[bytes]]
"""(old size, new size) -> RFC 6962 consistency proof; raises ``ProofError`` when impossible."""


@dataclass
class PushResult:
    url: str
    outcome: PushOutcome
    witness_size: int | None = None
    """The size the witness reported having cosigned (from a 409), if any."""
    signatures: list[NoteSignature] = field(default_factory=list)
    status: int | None = None
    detail: str = ""
    requests: int = 0


def add_checkpoint_body(old_size: int, proof: list[bytes], note: SignedNote) -> bytes:
    """The tlog-witness request body: ``old N``, proof lines, a blank line, the signed checkpoint."""
    if len(proof) > MAX_PROOF_LINES:
        raise ProofError(f"consistency proof of {len(proof)} hashes is over the protocol's {MAX_PROOF_LINES}")
    head = f"old {old_size}\n" + "".join(b64(h) + "\n" for h in proof)
    return (head + "\n" + note.render()).encode("utf-8")


def _endpoint(prefix: str) -> str:
    return prefix.rstrip("/") + "/add-checkpoint"


def _size_of(body: bytes) -> int | None:
    text = body.decode("ascii", "replace")
    if not text.endswith("\n") or not text[:-1].isdigit() or len(text) > 21:
        return None
    return int(text[:-1])


def _signature_lines(body: bytes) -> list[NoteSignature]:
    text = body.decode("utf-8")
    if not text.endswith("\n"):
        raise NoteError("response does not end with a newline")
    return [parse_signature_line(line) for line in text[:-1].split("\n")]


def push_checkpoint(
    transport: WitnessTransport,
    url: str,
    note: SignedNote,
    proofs: ProofSource,
    *,
    known_size: int = 0,
    timeout_s: float = 10.0,
) -> PushResult:
    """Ask the witness at ``url`` (its submission prefix) to cosign ``note``. ``known_size`` is the
    size this witness last cosigned, if remembered (0: unknown, it will tell). Never raises."""
    size = parse_checkpoint(note.text).size
    result = PushResult(url, "unreachable")
    old = min(known_size, size)
    for _ in range(2):
        try:
            body = add_checkpoint_body(old, proofs(old, size), note)
        except ProofError as exc:
            result.outcome, result.detail = "fork", f"no consistency proof from size {old}: {exc}"
            return result
        result.requests += 1
        try:
            status, ctype, reply = transport.post(_endpoint(url), body, timeout_s)
        except WitnessUnreachable as exc:
            result.outcome, result.detail = "unreachable", str(exc)[:200]
            return result
        result.status = status
        if status == 200:
            try:
                result.signatures = _signature_lines(reply)
            except (NoteError, UnicodeDecodeError) as exc:
                result.outcome, result.detail = "bad_reply", f"200 without signature lines: {exc}"
                return result
            result.outcome, result.witness_size = "cosigned", size
            return result
        if status == 409:
            theirs = _size_of(reply)
            if theirs is None:
                result.outcome, result.detail = "bad_reply", "409 without a tree size"
                return result
            result.witness_size = theirs
            if theirs > size:
                result.outcome = "witness_ahead"
                result.detail = f"witness has cosigned size {theirs}; this log's newest checkpoint is size {size}"
                return result
            if theirs == old:  # it refused the size we already sent: same size, another root
                result.outcome = "fork"
                result.detail = f"witness holds a different tree of size {theirs}"
                return result
            old = theirs
            continue
        if status == 422:
            result.outcome = "fork"
            result.detail = f"witness refused the consistency proof from size {old}: its tree differs from this log's"
            return result
        if status in (400, 403, 404):
            result.outcome = "rejected"
            result.detail = {403: "the witness does not trust this log's key",
                             404: "the witness does not know this log's origin"}.get(status, "bad request")
            result.detail += f": {reply[:200].decode('utf-8', 'replace').strip()}"
            return result
        result.outcome, result.detail = "unreachable", f"HTTP {status}: {reply[:200].decode('utf-8', 'replace').strip()}"
        return result
    result.outcome, result.detail = "bad_reply", "witness kept answering 409"
    return result
