#!/usr/bin/env bash
# The official OpenAI SDKs (Python `openai` from PyPI, Node `openai` from npm) against
# `palaver serve-demo`: strict response types, parse and stream helpers, logprobs, on every demo
# model. Installs into target/sdk-venv and target/sdk-node (cached).
#
#   bash tests/sdk/run.sh [target/debug/palaver]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-target/debug/palaver}
PY_SPEC=${SDK_OPENAI_PY_SPEC:-'openai==3.57.0'}
NODE_SPEC=${SDK_OPENAI_NODE_SPEC:-'openai@6'}
VENV=target/sdk-venv
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$VENV/.sdk-installed" 2>/dev/null)" != "$PY_SPEC" ]; then
  python3 -m venv "$VENV"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/pip" install -q "$PY_SPEC"
  echo "$PY_SPEC" >"$VENV/.sdk-installed"
fi
"$VENV/bin/python" tests/sdk/check.py "$BIN"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "!!!!!!!! SKIPPED: node/npm not found; the Node SDK was NOT checked !!!!!!!!" >&2
  exit 0
fi
NODE_DIR=target/sdk-node
if [ "$(cat "$NODE_DIR/.sdk-installed" 2>/dev/null)" != "$NODE_SPEC" ]; then
  mkdir -p "$NODE_DIR"
  (cd "$NODE_DIR" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund "$NODE_SPEC")
  echo "$NODE_SPEC" >"$NODE_DIR/.sdk-installed"
fi
cp tests/sdk/check.mjs "$NODE_DIR/check.mjs"
"$BIN" serve-demo >"$NODE_DIR/serve.out" &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -s "$NODE_DIR/serve.out" ] && break; sleep 0.1; done
node "$NODE_DIR/check.mjs" "$(head -n 1 "$NODE_DIR/serve.out")"
