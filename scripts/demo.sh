#!/usr/bin/env bash
# The README's first command: set everything up, then run the demo on embedded defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/headwater demo "$@"
