#!/usr/bin/env bash
# The README's second command: set everything up, check the code's shape, run the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The set-up steps that do not depend on each other run side by side: apt and Maven wait on
# the network, the checks and the class archive on a core. One after the other they took
# (2026-11-30) 15-20 s (lint, layers, types), 50-60 s (the class archive of a new venv) and,
# on a fresh machine, about 55 s (the jars) and Chromium's apt install; side by side, about
# the longest of them. Each step's output is printed when all are done, with its seconds; a
# failed step stops the run before the tests. apt takes a lock (scripts/apt-install.sh).
SETUP="$(mktemp -d)"
steps=()
started=$(date +%s)
step() {  # step KEY TITLE COMMAND...: in the background, its output into $SETUP/KEY.log
  local key="$1" title="$2"; shift 2
  echo "$title" >"$SETUP/$key.title"
  ( "$@" && status=0 || status=$?; echo $(( $(date +%s) - started )) >"$SETUP/$key.took"; exit $status ) \
    >"$SETUP/$key.log" 2>&1 &
  steps+=("$!:$key")
}
if ! command -v chromium >/dev/null 2>&1; then
  # The pipeline report is checked in a real browser (the test skips without one).
  step chromium "installing Chromium (for the report's browser test)" \
    bash -c 'bash scripts/apt-install.sh chromium || echo "   (Chromium not installed)"'
fi
step checks "lint (ruff), layers (import-linter), types (mypy)" bash -c '
  set -e
  .venv/bin/ruff check src tests bench
  .venv/bin/ruff format --check --quiet src tests bench
  .venv/bin/lint-imports --no-cache
  .venv/bin/mypy'
# All the tiers' jars now, one Maven for them all: the tiers below run side by side and then
# find their jars in the cache (two Mavens writing one local repository could clash).
step jars "JVM jars the test tiers use (jars/pom.xml; fetched once, then from the cache)" \
  bash -c 'bash scripts/fetch-jars.sh s3a delta-spark kafka kafka-broker cdc jdbc-postgres >/dev/null'
# The JVM options of every Spark driver the tests start, the workers' own sessions among
# them (a class archive, made once per venv, C1 only with a full-size code cache).
step jvm "JVM options of the tests' Spark drivers (scripts/test-jvm-opts.sh)" \
  bash -c 'bash scripts/test-jvm-opts.sh .venv >"$1"' _ "$SETUP/driver-opts"
setup_status=0
for entry in "${steps[@]}"; do
  key="${entry#*:}"
  wait "${entry%%:*}" && outcome="" || { outcome=": FAILED"; setup_status=1; }
  echo "== $(cat "$SETUP/$key.title") ($(cat "$SETUP/$key.took") s)$outcome"
  cat "$SETUP/$key.log"
done
DRIVER_OPTS="$(cat "$SETUP/driver-opts" 2>/dev/null || true)"
rm -rf "$SETUP"
[ "$setup_status" = 0 ] || exit 1
echo "== tests"
# Two worker processes (HEADWATER_TEST_WORKERS; 0 runs in this process), whole files per
# worker: each keeps one SparkSession for its files. Most tests wait on Spark's scheduler,
# subprocesses or sleeps, so two workers on two cores cut the run by a quarter.
WORKERS="${HEADWATER_TEST_WORKERS:-2}"

# The optional tiers (a pyspark 4.2 venv of their own and jars from jars/pom.xml; see
# docs/engines.md and docs/kafka.md) run after the main suite: beside it, even niced, they
# starved (the delta-spark tier took 50 min instead of 12) and loaded the main suite's
# Python workers into timeouts. Beside each other they fit, in two lanes, one per core: the
# tiers of a lane ("a+b") run one after the other. Skipped when the arguments name tests;
# HEADWATER_TIERS="" skips them too. The engines' tiers run C1 only, as the main suite: CI
# is bound by CPU, not by one lane's wall (the parity matrix alone, 2026-11-30: 721 s and
# 1,086 CPU-s; beside peers with C2 as well, 687 s and 1,179 CPU-s).
#
# A part of the long work per commit, in turn. On 2 cores the whole of the tests takes
# from one to over two hours, by the machine (2026-12-01, a slow machine: the main suite 73
# min, the tiers' lanes about 50; 2026-12-02, this one: the main suite 3,750 test-seconds,
# about 32 min, the lanes 19 and 29 min), over CI's hard limit of 90 min and its aim of 60;
# CPU is what bounds it, so each run has to do less. Thirds of the slow-marked files and a
# third of the tiers whole were not enough: a run took 81 min on CI (2026-12-01), as the
# files without a slow mark ran every time (their long ones among them) and a third of the
# tiers was one long tier or two. Now each run takes the main suite's short files whole
# (706 of its test-seconds here, 434 once the files of 15 s and more are shared out) and one
# of PARTS parts of its long files (slow-marked, or 15 s or more in the record) and of
# every tier's files, the parts of equal recorded seconds (tests/sharding.py,
# tests/durations.json: `python -m tests.sharding SUITE REPORT` refreshes it from a run
# with HEADWATER_TEST_JUNIT, below). By that record a fifth of it is 1,095-1,101
# test-seconds of the main suite (about 9 min) and lanes of 4.4-9.2 and 5.4-7.4 min: 14.5
# to 18.3 min a part here, against about 33 min for a third of the old split, which CI ran
# in 81. The lanes: delta-spark, cdc and kafka (19 min whole) beside on-delta-spark, the
# parity matrix and the engine benchmark (25 min). The part is chosen by the checkout's
# commit count, so consecutive commits take the parts in turn (below: a shallow clone or no
# git); HEADWATER_TEST_SHARD=all runs everything, 1..PARTS a part.
PARTS=5
LANES="delta-spark+cdc+kafka on-delta-spark+parity+engines-bench"
NAMED=""  # arguments that name tests: every named test runs, and no tier
for arg in "$@"; do
  case "$arg" in tests/*|./tests/*) NAMED=1 ;; esac
done
SHARD="${HEADWATER_TEST_SHARD:-auto}"
if [ -n "$NAMED" ]; then SHARD=all; fi
CHOSEN_BY="HEADWATER_TEST_SHARD"
if [ "$SHARD" = auto ]; then
  # Consecutive commits take turns by the commit count; a shallow clone has no count, so its
  # commit's id decides (any part, evenly over commits); outside git, the day of the year.
  if [ "$(git rev-parse --is-shallow-repository 2>/dev/null)" = false ]; then
    n="$(git rev-list --count HEAD)" CHOSEN_BY="commit count $n"
  elif id="$(git rev-parse --short=7 HEAD 2>/dev/null)"; then
    n=$(( 16#$id )) CHOSEN_BY="commit $id"
  else
    n=$(( 10#$(date +%j) )) CHOSEN_BY="day $n of the year"
  fi
  SHARD=$(( n % PARTS + 1 ))
fi
if [ "$SHARD" = all ]; then
  SLOW_SHARD="" what="all of it"
elif [[ "$SHARD" =~ ^[1-9][0-9]*$ ]] && [ "$SHARD" -le "$PARTS" ]; then
  SLOW_SHARD="$SHARD/$PARTS"
  what="part $SHARD of $PARTS (by $CHOSEN_BY; HEADWATER_TEST_SHARD=all: all of it)"
else
  echo "test.sh: HEADWATER_TEST_SHARD=$SHARD: write auto, all or a part from 1 to $PARTS" >&2
  exit 2
fi
TIERS="${HEADWATER_TIERS-$LANES}"
if [ -n "$NAMED" ]; then TIERS=""; fi
echo "   the long work, $what; tiers ${TIERS:-none}"
# The tiers' venvs (pyspark 4.2 and their extras: a few minutes of pip on a fresh machine)
# are installed in the background while the main suite runs, so the lanes after it start
# on their tests; a failed install is retried, and reported, by its lane. One after the
# other: pyspark is published as a source archive (450 MB) that pip downloads and builds
# into a wheel (24 CPU-s) once, then takes from its cache; two venvs installed at once both
# did it, on the cores the main suite needs.
LOGS="$(mktemp -d)"
(
  for tier in $(echo "$TIERS" | tr ' +' '\n\n' | sort -u); do
    grep -q "^  $tier)" scripts/tier.sh || continue
    nice bash scripts/tier.sh "$tier" --install-only >"$LOGS/install-$tier.log" 2>&1 || true
  done
) &
prep=("$!")
status=0
# The slowest tests are printed at the end: where the next minutes of CI time are won.
# --no-loadscope-reorder: files go to the workers in collection order, which
# tests/conftest.py makes the long files first, the longest first; by default xdist sends
# files with many tests first, so the few-test crash and benchmark files ran last and left
# one worker busy for minutes while the other idled.
# HEADWATER_TEST_JUNIT=DIR: JUnit reports of the main suite and of each tier into DIR
# (DIR/main.xml, DIR/<tier>.xml), for `python -m tests.sharding SUITE REPORT` to record.
JUNIT="${HEADWATER_TEST_JUNIT:-}"
junit() { if [ -n "$JUNIT" ]; then mkdir -p "$JUNIT"; echo "--junitxml=$(realpath "$JUNIT")/$1.xml"; fi; }
export HEADWATER_SLOW_SHARD="$SLOW_SHARD"
HEADWATER_TEST_DRIVER_OPTS="$DRIVER_OPTS" .venv/bin/python -m pytest -n "$WORKERS" \
  --dist loadfile --no-loadscope-reorder --durations=40 $(junit main) "$@" || status=$?
for pid in "${prep[@]+"${prep[@]}"}"; do wait "$pid" || true; done
# The lanes run side by side (one Spark process each, mostly waiting on a broker or on
# each other's commits), each tier into its own log, printed whole when its lane ends.
# Every 5 minutes a line per running tier (its minutes so far and its progress), so a
# run stopped from outside still shows where each lane was.
pids=()
for lane in $TIERS; do
  (
    lane_status=0
    for tier in ${lane//+/ }; do
      grep -q "^  $tier)" scripts/tier.sh || continue
      date +%s >"$LOGS/$tier.start"
      # --maxfail: a tier whose tests fail one after another (a broken session fails each
      # slowly) stops after five and prints why, instead of holding CI to its limit.
      bash scripts/tier.sh "$tier" --durations=15 --maxfail=5 $(junit "$tier") "$@" \
        >"$LOGS/$tier.log" 2>&1 || lane_status=1
      echo $(( $(date +%s) - $(cat "$LOGS/$tier.start") )) >"$LOGS/$tier.took"
    done
    exit "$lane_status"
  ) &
  pids+=("$!:$lane")
done
(
  while sleep 300 </dev/null >/dev/null 2>&1; do  # (an orphaned sleep holds no pipe)
    for started in "$LOGS"/*.start; do
      [ -e "$started" ] || continue
      tier="$(basename "$started" .start)"
      [ -f "$LOGS/$tier.took" ] && continue
      # pytest -q's progress lines: a character per test done (. s x F E)
      done_="$(sed -n '/^== tests/,$p' "$LOGS/$tier.log" | grep -E '^[.sxXFE]+( |$)' \
        | cut -d' ' -f1 | tr -d '\n' | wc -c || true)"
      echo "== $(date +%T) tier $tier running for $(( ($(date +%s) - $(cat "$started")) / 60 )) min, ${done_:-0} tests done"
    done
  done
) &
heartbeat=$!
for entry in "${pids[@]+"${pids[@]}"}"; do
  pid="${entry%%:*}"; lane="${entry#*:}"
  wait "$pid" || status=1
  for tier in ${lane//+/ }; do
    [ -f "$LOGS/$tier.log" ] || continue
    echo "== tier: $tier ($(cat "$LOGS/$tier.took" 2>/dev/null || echo '?') s)"
    cat "$LOGS/$tier.log"
  done
done
kill "$heartbeat" 2>/dev/null || true
rm -rf "$LOGS"
exit "$status"
