#!/usr/bin/env bash
# Installs the PyPI `mcp` package (pinned) into a virtualenv at target/mcp-py, for the tests that
# run palaver against an OAuth-protected server built with it (tests/mcp_server/oauth_mcp_server.py).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
exec bash "$ROOT/tests/pypi_venv.sh" "$ROOT/target/mcp-py" "${MCP_PY_SPEC:-mcp==1.30.0}" mcp
