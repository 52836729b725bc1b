#!/usr/bin/env bash
# The floor bench (issue 18): builds palaver in release, then runs benches/floor.py, which runs
# curl, headless palaver and the chat screen on the same local 100,000-delta streams, alternating,
# and prints median CPU times (user + sys) and the ratios against the targets. Arguments go to
# floor.py (--rounds N, --deltas N, --only headless|screen, --bulk). Needs curl and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --bin palaver
exec python3 benches/floor.py target/release/palaver "$@"
