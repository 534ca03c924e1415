#!/usr/bin/env bash
# The README's second command: set everything up, then run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check src tests bench
exec .venv/bin/python -m pytest "$@"
