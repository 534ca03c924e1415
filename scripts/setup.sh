#!/usr/bin/env bash
# Prepare a fresh machine: Java 17 (from Debian, only when `java` is missing), a virtual
# environment in .venv, and headwater installed into it with its test extras.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v java >/dev/null 2>&1; then
  echo "== installing Java 17 (openjdk-17-jre-headless)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv"
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
echo "== installing headwater"
.venv/bin/python -m pip install -q -e ".[test]"
