#!/usr/bin/env bash
# Installs one pinned PyPI package into a virtualenv of its own: `pypi_venv.sh DIR SPEC MODULE`
# (DIR under target/, SPEC as pip takes it, MODULE the import that proves it works). Cached: a
# second run with the same SPEC does nothing. Exits 0 without installing when python3 is missing
# (the tests that need it then skip, loudly; under CI=true they fail).
set -euo pipefail
DIR=$1 SPEC=$2 MODULE=$3
STAMP="$DIR/.installed"
if ! command -v python3 >/dev/null 2>&1; then
  echo "!!!!!!!! python3 not found: $SPEC is not installed; the tests that need it will be SKIPPED !!!!!!!!" >&2
  exit 0
fi
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$SPEC" ] && "$DIR/bin/python" -c "import $MODULE" 2>/dev/null; then
  exit 0
fi
echo "installing $SPEC into $DIR…" >&2
python3 -m venv "$DIR" >&2
timeout 600 "$DIR/bin/pip" install --quiet --disable-pip-version-check "$SPEC" >&2
echo "$SPEC" >"$STAMP"
