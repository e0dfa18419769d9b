"""Cost of publishing one checkpoint: C2SP note signing, its durable write, one witness push.

    .venv/bin/python benchmarks/checkpoint.py [--leaves 100000] [--rounds 40] [--json FILE]

Runs a real aics-witness (the test witness, see the Makefile) on 127.0.0.1 and drives the
gateway's own `CheckpointPublisher.publish` against it: each round appends `--batch` events to a
tree of `--leaves`, then signs, writes (fsync, rename) and pushes the checkpoint with its
consistency proof. The baseline measured in the same run is the checkpoint *event* the writer
already signed before this feature (canonical JSON + Ed25519). All of it runs on the publisher's
thread, after the checkpoint's events are on disk: no call waits for it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from audit.witness_server import AicsWitness
from checkrein.audit.checkpoints import CheckpointPublisher, CheckpointStore
from checkrein.audit.proofs import MerkleTree
from checkrein.audit.signing import CheckpointSigner, generate_keypair
from checkrein.audit.witness_http import HttpWitnessTransport


def ms(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"p50_ms": round(statistics.median(xs) * 1000, 3), "p90_ms": round(xs[int(len(xs) * 0.9)] * 1000, 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--leaves", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="checkrein-bench-"))
    key = generate_keypair(root / "keys")[0]
    signer = CheckpointSigner.from_file(key)
    origin = "checkrein/bench/log"
    note_signer = signer.note_signer(origin)
    witness = AicsWitness(root / "witness")
    witness.trust(origin, note_signer.vkey.encode())
    url = witness.start()
    transport = HttpWitnessTransport()
    counters: dict[str, int] = {}
    tree = MerkleTree()
    import hashlib

    for i in range(args.leaves):
        tree.append(hashlib.sha256(b"%d" % i).digest())
    audit = root / "audit"
    audit.mkdir()
    store = CheckpointStore(audit)
    plain = CheckpointPublisher(store=store, signer=note_signer, tree=tree, counters=counters)
    pushed = CheckpointPublisher(store=store, signer=note_signer, tree=tree, counters=counters, witnesses=(url,),
                                 quorum=1, transport=transport)
    event_sign, note_only, with_push = [], [], []
    try:
        pushed.publish(tree.size, tree.root())  # first contact: the witness learns the log
        n = tree.size
        for r in range(args.rounds):
            for i in range(args.batch):
                tree.append(hashlib.sha256(b"r%d-%d" % (r, i)).digest())
            root_hash = tree.root()
            body = {"log_id": "bench", "seq": tree.size, "count": tree.size, "head_hash": "0" * 64,
                    "merkle_root": root_hash.hex()}
            t0 = time.perf_counter()
            signer.sign(body)
            t1 = time.perf_counter()
            plain.publish(tree.size, root_hash, witness=False)
            t2 = time.perf_counter()
            pushed.publish(tree.size, root_hash)
            t3 = time.perf_counter()
            event_sign.append(t1 - t0)
            note_only.append(t2 - t1)
            with_push.append(t3 - t2)
        assert counters["witness_failures"] == 0 and counters["witness_cosigned"] == args.rounds + 1, counters
    finally:
        transport.close()
        witness.stop()
    result = {
        "leaves_at_start": n, "batch": args.batch, "rounds": args.rounds,
        "baseline_checkpoint_event_signature": ms(event_sign),
        "note_sign_and_durable_write": ms(note_only),
        "note_sign_write_and_one_witness_push": ms(with_push),
        "tree_memory_mb": round(sum(len(level) for level in tree.levels) / 1e6, 1),
    }
    base = result["baseline_checkpoint_event_signature"]["p50_ms"] or 1e-9
    result["ratio_note_vs_baseline"] = round(result["note_sign_and_durable_write"]["p50_ms"] / base, 1)
    result["ratio_push_vs_baseline"] = round(result["note_sign_write_and_one_witness_push"]["p50_ms"] / base, 1)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
