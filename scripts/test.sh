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
echo "== JVM jars the test tiers use (jars/pom.xml; fetched once, then from the cache)"
bash scripts/fetch-jars.sh s3a >/dev/null
echo "== tests"
# Two worker processes (HEADWATER_TEST_WORKERS; 0 runs in this process), whole files per
# worker: each keeps one SparkSession for its files. Most tests wait on Spark's scheduler,
# subprocesses or sleeps, so two workers on two cores cut the run by a quarter.
WORKERS="${HEADWATER_TEST_WORKERS:-2}"
exec .venv/bin/python -m pytest -n "$WORKERS" --dist loadfile "$@"
