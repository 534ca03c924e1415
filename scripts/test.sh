#!/usr/bin/env bash
# The README's second command: set everything up, check the code's shape, run the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  # The pipeline report is checked in a real browser (the test skips without one).
  echo "== installing Chromium (for the report's browser test)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  ($SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
    $SUDO apt-get install -y -qq chromium >/dev/null) || echo "   (Chromium not installed)"
fi
echo "== lint (ruff), layers (import-linter), types (mypy)"
.venv/bin/ruff check src tests bench
.venv/bin/ruff format --check --quiet src tests bench
.venv/bin/lint-imports --no-cache
.venv/bin/mypy
echo "== tests"
exec .venv/bin/python -m pytest "$@"
