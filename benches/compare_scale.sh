#!/usr/bin/env bash
# Scale of a prompt-set run: N prompts × 4 demo models (default 1,000 × 4 = 4,000 cells).
#
#   benches/compare_scale.sh [PROMPTS] [CONCURRENCY]      (defaults: 1000, 128)
#   PALAVER_BIN=target/debug/palaver benches/compare_scale.sh 200
#
# The demo provider runs as its own process (`palaver serve-demo`), so the figures are the
# client's alone: wall time, user+system CPU time and peak RSS from /usr/bin/time -v, plus a
# sample of the client's RSS every second against the cells stored so far — memory must level
# off instead of growing with finished cells (answers go to the store, not to memory). A
# second, smaller run (a quarter of the prompts) gives a peak to compare with.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-1000}"
CONC="${2:-128}"
BIN="${PALAVER_BIN:-target/release/palaver}"
if [ ! -x "$BIN" ]; then
  cargo build --release --bin palaver
fi
WORK="$(mktemp -d)"
cleanup() { [ -n "${DEMO_PID:-}" ] && kill "$DEMO_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

"$BIN" serve-demo > "$WORK/demo.url" 2>/dev/null &
DEMO_PID=$!
for _ in $(seq 1 50); do [ -s "$WORK/demo.url" ] && break; sleep 0.1; done
URL="$(head -1 "$WORK/demo.url")"

one_run() { # prompts, label
  local n="$1" label="$2"
  export PALAVER_HOME="$WORK/home-$label"
  mkdir -p "$PALAVER_HOME"
  seq 1 "$n" | sed 's/^/Prompt number /; s/$/: explain it in a few words/' > "$WORK/p-$label.txt"
  /usr/bin/time -v -o "$WORK/time-$label.txt" "$BIN" --base-url "$URL" --tools auto compare \
    -m demo -m demo-reasoning -m demo-tools -m demo-safety --prompts "$WORK/p-$label.txt" \
    --concurrency "$CONC" --json > "$WORK/out-$label.jsonl" 2> "$WORK/err-$label.txt" &
  local tpid=$!
  sleep 0.3
  local pid
  pid="$(pgrep -P "$tpid" | head -1 || true)"
  : > "$WORK/rss-$label.txt"
  while kill -0 "$tpid" 2>/dev/null; do
    if [ -n "$pid" ] && [ -r "/proc/$pid/status" ]; then
      local rss cells
      rss="$(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)"
      cells="$(grep -c '"type":"cell"' "$WORK/out-$label.jsonl" 2>/dev/null || true)"
      echo "$cells $rss" >> "$WORK/rss-$label.txt"
    fi
    sleep 1
  done
  wait "$tpid" || true
  local wall user sys peak cells
  wall="$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$WORK/time-$label.txt")"
  user="$(awk -F': ' '/User time/ {print $2}' "$WORK/time-$label.txt")"
  sys="$(awk -F': ' '/System time/ {print $2}' "$WORK/time-$label.txt")"
  peak="$(awk -F': ' '/Maximum resident/ {print $2}' "$WORK/time-$label.txt")"
  cells="$(grep -c '"type":"cell"' "$WORK/out-$label.jsonl" || true)"
  local failed
  failed="$(grep -c '"ok":false' "$WORK/out-$label.jsonl" || true)"
  local db
  db="$(du -sk "$PALAVER_HOME" | awk '{print $1}')"
  printf '%-6s %6s prompts × 4 = %5s cells (%s failed) · wall %s · cpu user %ss + sys %ss · peak RSS %s KiB · store %s KiB\n' \
    "$label" "$n" "$cells" "$failed" "$wall" "$user" "$sys" "$peak" "$db"
  echo "       RSS while running (cells stored → KiB):"
  awk '$2 > 0 && (NR == 1 || NR % 5 == 0) {printf "         %5d → %d\n", $1, $2}' "$WORK/rss-$label.txt"
  awk '$2 > 0' "$WORK/rss-$label.txt" | tail -1 | awk '{printf "         %5d → %d (last sample)\n", $1, $2}'
}

echo "palaver compare scale: $BIN, demo at $URL, concurrency $CONC, $(nproc) cores"
one_run "$((N / 4))" small
one_run "$N" full
