#!/usr/bin/env bash
# Installs PyPI `junitparser` (pinned) into a virtualenv at target/junit-py: the real JUnit
# reader tests/compare_outputs.rs checks `--output out.xml` with. Cached: a second run with the
# same version does nothing. Exits 0 without installing when python3 cannot make a virtualenv
# (the test then skips, loudly; under CI=true it fails).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SPEC=${JUNITPARSER_SPEC:-'junitparser==5.0.3'}
DIR="$ROOT/target/junit-py"
STAMP="$DIR/.installed"
if ! command -v python3 >/dev/null 2>&1; then
  echo "!!!!!!!! python3 not found: the JUnit check will be SKIPPED !!!!!!!!" >&2
  exit 0
fi
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$SPEC" ] && "$DIR/bin/python" -c 'import junitparser' 2>/dev/null; then
  exit 0
fi
echo "installing $SPEC into $DIR…" >&2
python3 -m venv "$DIR" >&2
timeout 600 "$DIR/bin/pip" install --quiet --disable-pip-version-check "$SPEC" >&2
echo "$SPEC" >"$STAMP"
