#!/usr/bin/env bash
# Installs @modelcontextprotocol/server-everything (npm) into target/mcp-node, for the tests that
# run palaver against it over streamable HTTP. Cached: a second run with the same version does
# nothing. Exits 0 without installing when node/npm are missing (the tests then skip, loudly).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SPEC=${MCP_EVERYTHING_SPEC:-'@modelcontextprotocol/server-everything@2026.8.31'}
DIR="$ROOT/target/mcp-node"
STAMP="$DIR/.installed"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "!!!!!!!! node/npm not found: the MCP tests against server-everything will be SKIPPED !!!!!!!!" >&2
  exit 0
fi
mkdir -p "$DIR"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$SPEC" ] \
    && [ -f "$DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js" ]; then
  exit 0
fi
echo "installing $SPEC into $DIR…" >&2
timeout 600 npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error "$SPEC" >&2
echo "$SPEC" >"$STAMP"
