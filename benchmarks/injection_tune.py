"""Development script: the injection detector's recall and false positives on the local corpus.

Reads `injection/bipia_train.jsonl` (injected and clean e-mails and tables) and
`injection/benign_emails.jsonl` from the corpus folder (default `shared/corpora` beside the checkout, or
`$CHECKREIN_CORPORA`), and prints recall per BIPIA attack category and the false-positive rate per
benign set, with throughput. Development numbers only: the held-out split is not here.

Run: `.venv/bin/python benchmarks/injection_tune.py [--corpora PATH] [--show-fp N] [--show-miss CATEGORY]`
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from detection import default_corpora

from checkrein.policy.injection import scan_injection

_FOUND, _LOOKED = default_corpora()
DEFAULT = Path(os.environ.get("CHECKREIN_CORPORA") or _FOUND or _LOOKED[0])
"""$CHECKREIN_CORPORA, else ``shared/corpora`` beside this checkout or, in a git worktree, beside
the main checkout (as benchmarks/detection.py looks); when none holds the corpora, the first place
looked, not a path relative to the working directory."""


def _rows(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpora", type=Path, default=DEFAULT)
    ap.add_argument("--show-fp", type=int, default=0, help="print this many false positives")
    ap.add_argument("--show-miss", default="", help="print misses of this attack category")
    args = ap.parse_args(argv)
    folder = args.corpora / "injection"
    if not folder.is_dir():
        print(f"corpus folder {folder} is absent; pass --corpora", file=sys.stderr)
        return 2
    rows = _rows(folder / "bipia_train.jsonl")
    benign = _rows(folder / "benign_emails.jsonl")
    hit: Counter[str] = Counter()
    total: Counter[str] = Counter()
    fps: list[tuple[str, str, str]] = []
    nbytes = 0
    t0 = time.perf_counter()
    for r in rows + [dict(b, id="llmail/" + b["id"]) for b in benign]:
        text = r["text"]
        nbytes += len(text.encode("utf-8"))
        scan = scan_injection(text)
        if r["label"] == 1:
            category = r["id"].split("/")[4].rsplit("-", 1)[0]
            key = f"{r['task']}:{category}"
            total[key] += 1
            hit[key] += scan.flagged
            if args.show_miss and category == args.show_miss and not scan.flagged:
                print("MISS", r["id"], round(scan.score, 2), repr(text[-300:]))
        else:
            key = "benign:" + ("llmail" if r["id"].startswith("llmail") else r["task"])
            total[key] += 1
            hit[key] += scan.flagged
            if scan.flagged:
                fps.append(
                    (r["id"], f"{scan.score:.2f}", ";".join(f"{s.kind}:{s.evidence}" for s in scan.signals))
                )
    dt = time.perf_counter() - t0
    print("| set | flagged | rate |\n|---|---|---|")
    for key in sorted(total):
        print(f"| {key} | {hit[key]}/{total[key]} | {100 * hit[key] / total[key]:.1f}% |")
    inj = [k for k in total if not k.startswith("benign")]
    print(f"\nrecall (all BIPIA train categories): {sum(hit[k] for k in inj)}/{sum(total[k] for k in inj)}")
    print(f"throughput: {nbytes / dt / 1e6:.1f} MB/s over {len(rows) + len(benign)} texts")
    for fp in fps[: args.show_fp]:
        print("FP", *fp)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
