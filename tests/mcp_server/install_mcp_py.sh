#!/usr/bin/env bash
# Installs the PyPI `mcp` package (pinned) into a virtualenv at target/mcp-py, for the tests that
# run palaver against an OAuth-protected server built with it (tests/mcp_server/oauth_mcp_server.py).
# Cached: a second run with the same version does nothing. Exits 0 without installing when python3
# cannot make a virtualenv (the tests then skip, loudly; under CI=true they fail).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SPEC=${MCP_PY_SPEC:-'mcp==1.30.0'}
DIR="$ROOT/target/mcp-py"
STAMP="$DIR/.installed"
if ! command -v python3 >/dev/null 2>&1; then
  echo "!!!!!!!! python3 not found: the MCP OAuth tests will be SKIPPED !!!!!!!!" >&2
  exit 0
fi
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$SPEC" ] && "$DIR/bin/python" -c 'import mcp' 2>/dev/null; then
  exit 0
fi
echo "installing $SPEC into $DIR…" >&2
python3 -m venv "$DIR" >&2
timeout 600 "$DIR/bin/pip" install --quiet --disable-pip-version-check "$SPEC" >&2
echo "$SPEC" >"$STAMP"
