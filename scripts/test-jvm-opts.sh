#!/usr/bin/env bash
# Print the JVM options of every Spark driver the tests start (scripts/test.sh and tier.sh
# export them as HEADWATER_TEST_DRIVER_OPTS; tests/conftest.py puts them in
# SPARK_SUBMIT_OPTS before the worker's own session starts), making the venv's class archive
# first if it is missing.
#
#   scripts/test-jvm-opts.sh .venv
#
# CI is bound by CPU, and most of a test driver's CPU is the JIT: on 2026-11-30 the C2
# compiler threads took 47 of a worker session's 134 CPU-seconds over
# tests/pipelines/test_view_avg.py, and 31 of 75 over tests/sql + the CSV and JSON readers.
# The tests' data is small, so the optimised code never earns its compile time back. So:
#   - C1 only (-XX:TieredStopAtLevel=1), with the code cache tiered compilation has
#     (-XX:ReservedCodeCacheSize=240m): with C1 only the JVM reserves 48 MB, which a
#     session fills in under a minute; then it disables its compiler and runs everything
#     interpreted (this, not C1, is why C1 only once made the main suite 2.5x slower and
#     the parity tier twice as slow). With the cache: 134 -> 79 CPU-s (view_avg), 75 -> 45
#     (sql + readers), the Executor's task time unchanged.
#   - an application class archive (CDS) of the classes a session loads, made once per
#     venv, pyspark and Java version by scripts/jvm_class_archive.py (about 30 s; 180 MB):
#     most drivers tests start in subprocesses (crash, CLI and benchmark tests start 60-odd)
#     live seconds, and most of that is loading and verifying ~20,000 classes.
#   Measured 2026-11-27 on 2 cores: a session's start and a few Delta writes 29-40 s -> 13-15 s;
#   tests/pipelines/test_crash.py + test_cli.py 201 s -> 137 s.
#   - no whole-stage code generation (-Dspark.sql.codegen.wholeStage=false, a spark.*
#     system property, which every SparkConf reads): Spark's operators run one by one
#     instead of as Java source Janino compiles for each new query shape. On the tests'
#     small data the compile is much of a query's cost: in a profile of the main suite's
#     two drivers (2026-12-01, JFR) code generation was 17-27% of their sampled CPU,
#     Janino's class lookups through 300 jars among it. A setting users have too, results
#     the same. Measured (same files, one after the other, 2 cores): the view, SQL and
#     SCD2 files 516 -> 439 CPU-s (with the sources' bytecode, scripts/setup.sh). Spark's
#     internal spark.sql.codegen.factoryMode=NO_CODEGEN (expressions interpreted too) saved
#     a little more but broke spark.catalog.listTables (EXPRESSION_DECODING_FAILED).
# Users' sessions are not affected: only the test scripts set these options.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${1:?name a venv, e.g. .venv}"
# JVM warnings (the archive's, among them) would land on the stdout the CLI tests read.
QUIET="-Xlog:disable -Xlog:all=error:stderr"
OPTS="-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m $QUIET"
CODEGEN="-Dspark.sql.codegen.wholeStage=false"
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
echo "$OPTS $CODEGEN"
