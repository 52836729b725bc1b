#!/usr/bin/env bash
# Installs PyPI `junitparser` (pinned) into target/junit-py: the real JUnit reader
# tests/compare_outputs.rs checks `--output out.xml` with.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
exec bash "$ROOT/tests/pypi_venv.sh" "$ROOT/target/junit-py" "${JUNITPARSER_SPEC:-junitparser==5.0.3}" junitparser
