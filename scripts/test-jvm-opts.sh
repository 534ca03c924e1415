#!/usr/bin/env bash
# Print the JVM options of the Spark drivers the tests start in subprocesses (scripts/test.sh
# and tier.sh export them as HEADWATER_TEST_DRIVER_OPTS; tests/conftest.py puts them in
# SPARK_SUBMIT_OPTS once the worker's own session is up), making the venv's class archive
# first if it is missing.
#
#   scripts/test-jvm-opts.sh .venv
#
# Most Spark drivers of the tests live seconds to a minute (crash, CLI and benchmark tests
# start 60-odd of them), and most of that is start-up: loading and verifying ~20,000
# classes, and compiling Spark's planner twice (C1, then C2 for the hot parts). So:
#   - an application class archive (CDS) of the classes a session loads, made once per
#     venv, pyspark and Java version by scripts/jvm_class_archive.py (about 30 s; 180 MB);
#   - C1 only (-XX:TieredStopAtLevel=1): short-lived JVMs never earn C2's compile time back.
# The test workers' own sessions, which live the whole run, start with neither: with these
# options a clean-clone run of the main suite went 2.5x slower on its in-worker tests, and
# tests/formats csv+json + tests/sql took 194 s against 141 s with the archive alone.
# Measured 2026-11-27 on 2 cores: a session's start and a few Delta writes 29-40 s -> 13-15 s;
# tests/pipelines/test_crash.py + test_cli.py 201 s -> 137 s.
# Users' sessions are not affected: only the test scripts set these options.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${1:?name a venv, e.g. .venv}"
# JVM warnings (the archive's, among them) would land on the stdout the CLI tests read.
QUIET="-Xlog:disable -Xlog:all=error:stderr"
OPTS="-XX:TieredStopAtLevel=1 $QUIET"
KEY="$("$VENV/bin/python" -c 'import pyspark; print(pyspark.__version__)')-$(java -version 2>&1 | sha256sum | cut -c1-10)"
ARCHIVE="$PWD/$VENV/spark-classes-$KEY.jsa"
if [ ! -s "$ARCHIVE" ]; then
  WORK="$(mktemp -d)"
  if SPARK_SUBMIT_OPTS="-XX:ArchiveClassesAtExit=$WORK/classes.jsa $OPTS" \
    "$VENV/bin/python" scripts/jvm_class_archive.py "$WORK" >"$WORK/log" 2>&1 \
    && [ -s "$WORK/classes.jsa" ]; then
    mv "$WORK/classes.jsa" "$ARCHIVE"
  else
    echo "test-jvm-opts.sh: no class archive for $VENV (tests start slower); its log:" >&2
    tail -5 "$WORK/log" >&2 || true
  fi
  rm -rf "$WORK"
fi
[ -s "$ARCHIVE" ] && OPTS="-XX:SharedArchiveFile=$ARCHIVE $OPTS"
echo "$OPTS"
