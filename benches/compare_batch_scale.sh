#!/usr/bin/env bash
# Scale of a batch run: N prompts × 4 demo models through `serve-demo`'s files and batches
# endpoints (default 10,000 × 4 = 40,000 cells, four batches of 10,000 lines).
#
#   benches/compare_batch_scale.sh [PROMPTS] [BATCH_MS]     (defaults: 10000, 20000)
#   PALAVER_BIN=target/debug/palaver benches/compare_batch_scale.sh 2000 5000
#
# The demo server is its own process, so the figures are the client's alone (wall time, CPU
# and peak RSS from /usr/bin/time -v). Three runs:
#   full     the whole set, submitted, polled and gathered in one go;
#   quarter  a quarter of the prompts: its peak RSS against full's says whether memory is flat
#            (JSON Lines are written and read a line at a time, never held);
#   killed   the whole set again, killed with SIGKILL while polling (after the four batches
#            exist), then `compare --resume` (timed) — it must poll the same four batches (the
#            server sees no fifth) and end with every cell stored exactly once (rows counted).
# BATCH_MS is how long each demo batch takes from creation to completion.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-10000}"
BATCH_MS="${2:-20000}"
BIN="${PALAVER_BIN:-target/release/palaver}"
if [ ! -x "$BIN" ]; then
  cargo build --release --bin palaver
fi
WORK="$(mktemp -d)"
cleanup() { [ -n "${DEMO_PID:-}" ] && kill "$DEMO_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

PALAVER_DEMO_BATCH_MS="$BATCH_MS" "$BIN" serve-demo > "$WORK/demo.url" 2>/dev/null &
DEMO_PID=$!
for _ in $(seq 1 50); do [ -s "$WORK/demo.url" ] && break; sleep 0.1; done
URL="$(head -1 "$WORK/demo.url")"
MODELS=(-m demo -m demo-reasoning -m demo-tools -m demo-safety)

batches_at_server() {
  curl -s "$URL/batches?limit=100" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]))'
}

setup() { # label, prompts
  export PALAVER_HOME="$WORK/home-$1"
  mkdir -p "$PALAVER_HOME"
  printf '[providers.local]\nbase_url = "%s"\nbatch = true\n' "$URL" > "$PALAVER_HOME/config.toml"
  seq 1 "$2" | sed 's/^/Prompt number /; s/$/: explain it in a few words/' > "$WORK/p-$1.txt"
}

report() { # label, time file
  local wall user sys peak rows distinct
  wall="$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$2")"
  user="$(awk -F': ' '/User time/ {print $2}' "$2")"
  sys="$(awk -F': ' '/System time/ {print $2}' "$2")"
  peak="$(awk -F': ' '/Maximum resident/ {print $2}' "$2")"
  rows="$(sqlite3 "$PALAVER_HOME/palaver.sqlite3" 'SELECT count(*) FROM compare_cells')"
  distinct="$(sqlite3 "$PALAVER_HOME/palaver.sqlite3" \
    'SELECT count(*) FROM (SELECT DISTINCT run_id, prompt_idx, model_idx FROM compare_cells)')"
  printf '%-8s wall %-8s cpu %ss+%ss  peak RSS %6d KiB  cells stored %d (distinct %d)\n' \
    "$1" "$wall" "$user" "$sys" "$peak" "$rows" "$distinct"
}

for label in full quarter; do
  n=$N
  [ "$label" = quarter ] && n=$((N / 4))
  setup "$label" "$n"
  /usr/bin/time -v -o "$WORK/time-$label.txt" "$BIN" --provider local compare "${MODELS[@]}" \
    --prompts "$WORK/p-$label.txt" --batch > "$WORK/out-$label.txt" 2> "$WORK/err-$label.txt" || true
  report "$label" "$WORK/time-$label.txt"
done

setup killed "$N"
before="$(batches_at_server)"
"$BIN" --provider local compare "${MODELS[@]}" --prompts "$WORK/p-killed.txt" --batch \
  > "$WORK/out-killed.txt" 2> "$WORK/err-killed.txt" &
PID=$!
until [ "$(batches_at_server)" -ge $((before + 4)) ]; do sleep 0.2; done
sleep 2
kill -9 "$PID"
wait "$PID" 2>/dev/null || true
stored="$(sqlite3 "$PALAVER_HOME/palaver.sqlite3" 'SELECT count(*) FROM compare_cells')"
RUN="$("$BIN" compare runs | awk 'NR == 1 {print $1}')"
echo "killed   with SIGKILL while polling: $stored cells stored; $("$BIN" compare runs | head -1 | grep -o 'batch: .*')"
/usr/bin/time -v -o "$WORK/time-resume.txt" "$BIN" --provider local compare --resume "$RUN" \
  > "$WORK/out-resume.txt" 2> "$WORK/err-resume.txt" || true
report resumed "$WORK/time-resume.txt"
echo "batches the server saw: $(( $(batches_at_server) - before )) for the killed run (4 = none sent again)"
grep -h 'costs at the batch price' "$WORK/out-full.txt" || true
