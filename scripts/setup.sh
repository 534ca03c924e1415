#!/usr/bin/env bash
# Prepare a fresh machine: Java 17 (from Debian, only when `java` is missing), a virtual
# environment in .venv, and headwater installed into it with its test extras (skipped when
# nothing pip reads has changed since the last install).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v java >/dev/null 2>&1; then
  echo "== installing Java 17 (openjdk-17-jre-headless)"
  bash scripts/apt-install.sh openjdk-17-jre-headless
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv"
  "$PY" -m venv .venv
fi
# Bytecode for the checkout's own modules, made here because an editable install leaves
# it to the first import, and a PYTHONDONTWRITEBYTECODE=1 environment (as on our machines)
# never writes it: every Python process then compiled headwater's ~240 modules from
# source. The tests start hundreds (child sessions, Spark's Python workers, a streaming
# source's runner per stream start): about 0.5 CPU-s each, measured 2026-12-01. compileall
# skips what is up to date, and Python ignores a .pyc older than its source.
compile_sources() { .venv/bin/python -m compileall -q src tests bench >/dev/null; }
# The install is editable, so source edits need none: install again only when what pip
# reads changed (pyproject.toml, this checkout's place, the venv's Python), or when asked
# (HEADWATER_REINSTALL=1). The stamp is written only after a successful install.
STAMP=.venv/.headwater-install-stamp
WANT="$(sha256sum pyproject.toml | cut -d' ' -f1) $(pwd) $(.venv/bin/python -V 2>&1)"
if [ -z "${HEADWATER_REINSTALL:-}" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] \
  && .venv/bin/python -c "import headwater" >/dev/null 2>&1; then
  echo "== headwater already installed (pyproject.toml unchanged)"
  compile_sources
  exit 0
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
echo "== installing headwater"
.venv/bin/python -m pip install -q -e ".[test]"
echo "$WANT" > "$STAMP"
compile_sources
