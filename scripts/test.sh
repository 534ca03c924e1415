#!/usr/bin/env bash
# The README's second command: set everything up, check the code's shape, run the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== lint (ruff), layers (import-linter), types (mypy)"
.venv/bin/ruff check src tests bench
.venv/bin/ruff format --check --quiet src tests bench
.venv/bin/lint-imports --no-cache
.venv/bin/mypy
echo "== tests"
exec .venv/bin/python -m pytest "$@"
