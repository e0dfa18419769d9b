#!/bin/sh
# Harbor runs this in the verifier sandbox. verify.py writes /logs/verifier/reward.txt for a
# pass (1) or a candidate failure (0), and writes nothing on an infrastructure failure (exit 3).
set -u
mkdir -p /logs/verifier
exec python3 /tests/verify.py \
  --audit-tar /var/lib/checkrein/audit.tar \
  --report /app/report.md \
  --reward-dir /logs/verifier
