#!/usr/bin/env bash
# Run one optional test tier: a tier needs a pyspark other than the default venv's, or JVM
# jars (jars/pom.xml), so it gets a virtual environment of its own, .venv-<tier>, and its
# jars in the shared cache; the default .venv (pip only, no jar) is never touched.
#
#   scripts/tier.sh delta-spark               # the tier's tests (tests/engines)
#   scripts/tier.sh delta-spark -k cdf -x     # any pytest arguments pass through
#   scripts/tier.sh delta-spark tests/engines/test_shared_tables.py::test_plain
#   scripts/tier.sh kafka --install-only      # its venv and jars only
#
# Tiers:
#   delta-spark  pyspark 4.2.0 + delta-spark 4.4.0 (pyproject's `delta-spark` extra; the
#                jars of the same version are jars/pom.xml's delta-spark profile), and
#                headwater; tests/engines shares tables between the two Delta engines.
#   engines-bench  the same venv: bench/bench_engines.py's smoke test (both engines, same
#                data), apart from delta-spark's so that CI's two lanes end together.
#   kafka        pyspark 4.2.0 + Spark's Kafka connector (jars/pom.xml's kafka profile) and
#                a KRaft broker from the kafka-broker jars; tests/kafka.
#   cdc          the kafka venv and jars, plus PostgreSQL and Kafka Connect with Debezium
#                (the cdc jars); tests/cdc.
#
# The install is repeated only when what pip reads changed (pyproject.toml, this script,
# the checkout's place, the venv's Python) or when HEADWATER_REINSTALL=1, as in setup.sh;
# a second run goes straight to the tests.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "tier.sh: $*" >&2; exit 2; }

# PostgreSQL's server programs for the cdc tier, from Debian when initdb is missing (as
# setup.sh does for Java); the tests find them in /usr/lib/postgresql/<version>/bin.
ensure_postgres() {
  command -v initdb >/dev/null 2>&1 && return
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && return
  command -v apt-get >/dev/null 2>&1 || die "PostgreSQL is missing and there is no apt-get to install it; install PostgreSQL 15"
  echo "== installing PostgreSQL (postgresql)"
  bash scripts/apt-install.sh postgresql
}

TIER="${1:-}"
[ -n "$TIER" ] || die "name a tier: delta-spark engines-bench parity on-delta-spark kafka cdc"
shift
case "$TIER" in
  delta-spark)
    # Maven Central here serves Spark's _2.13 artifacts up to 4.2.0 and delta-spark's up
    # to 4.4.0; delta-spark 4.4.0 declares pyspark>=4.0.1,<=4.2.0. Pinned exactly, so the
    # tier runs the same Spark on every machine.
    PIP_ARGS=(-e ".[test,delta-spark]" "pyspark==4.2.0")
    JAR_TIERS=(delta-spark)
    # (the engine benchmark's smoke test and the parity matrix are tiers of their own,
    # below, to balance CI's lanes)
    TESTS=(tests/engines --ignore=tests/engines/test_bench_engines_smoke.py
      --ignore=tests/engines/parity)
    ;;
  parity)
    # Engine parity as a matrix (tests/engines/parity): every public operation on both
    # engines, compared row for row; its two processes live for the whole tier.
    VENV_OF=delta-spark
    PIP_ARGS=(-e ".[test,delta-spark]" "pyspark==4.2.0")
    JAR_TIERS=(delta-spark)
    TESTS=(tests/engines/parity)
    ;;
  engines-bench)
    VENV_OF=delta-spark
    PIP_ARGS=(-e ".[test,delta-spark]" "pyspark==4.2.0")
    JAR_TIERS=(delta-spark)
    TESTS=(tests/engines/test_bench_engines_smoke.py)
    ;;
  on-delta-spark)
    # The main suite's tests, unchanged, on the delta-spark engine (the session fixture's
    # headwater.session() reads HEADWATER_DELTA_ENGINE): pipelines with expectations,
    # quarantine, AUTO CDC and refresh kinds, a SIGKILLed update (Auto Loader's source
    # killed with it), Auto Loader, COPY INTO (races, SIGKILLed loads; tests needing
    # headwater's engine skip, tests/engine_marks.py), ~5 min of the lane; and
    # tests/on_delta_spark. Same venv and jars as delta-spark. delta-spark's own Python
    # suite (tests/delta_spark_suite) runs here when named, upstream's tests on upstream's
    # engine: the reference to check after re-vendoring it, not on every CI run (about 6
    # min of a CI lane; headwater's session on delta-spark is the parity matrix's).
    VENV_OF=delta-spark
    PIP_ARGS=(-e ".[test,delta-spark]" "pyspark==4.2.0")
    JAR_TIERS=(delta-spark)
    export HEADWATER_DELTA_ENGINE=delta-spark
    TESTS=(
      tests/on_delta_spark
      tests/test_default_format.py
      tests/pipelines/test_expectations.py::test_warn_drop_and_quarantine_on_a_streaming_table_count_every_rule
      tests/pipelines/test_expectations.py::test_materialized_view_and_view_expectations
      tests/pipelines/test_expectations.py::test_fail_stops_the_flow_atomically_skips_downstream_and_rerun_continues
      tests/pipelines/test_expectations.py::test_sql_constraints_on_tables_views_and_materialized_views
      "tests/pipelines/test_auto_cdc_scd1.py::test_scd1_delete_leaves_a_tombstone_and_a_newer_upsert_brings_the_key_back"
      "tests/pipelines/test_auto_cdc_scd2.py::test_scd2_late_events_split_close_and_reopen_history"
      "tests/pipelines/test_auto_cdc_evolve.py::test_a_column_added_to_the_source_is_added_to_the_target[2]"
      "tests/pipelines/test_auto_cdc_snapshots.py::test_snapshots_from_a_function_apply_in_version_order_once"
      "tests/pipelines/test_updates.py::test_full_refresh_clears_the_table_and_reprocesses_every_file"
      "tests/pipelines/test_read_kafka.py::test_without_the_connector_the_error_says_how_to_add_it"
      tests/pipelines/test_crash.py
      "tests/pipelines/test_view_outside_inputs.py::test_a_table_read_by_path_without_a_change_feed_is_an_input_with_versions"
      "tests/pipelines/test_update_fixed_cost.py::test_no_change_update_starts_no_stream_and_the_next_change_flows_once"
      "tests/pipelines/test_auto_cdc_change_feed.py::test_an_scd1_target_feeds_another_through_its_change_feed[python]"
      tests/pipelines/test_sdp_auto_cdc_arguments.py  # pyspark 4.2's AutoCdcFlow, no Spark
      "tests/copyinto/test_copy_into.py::test_load_then_rerun_loads_nothing_even_if_a_file_changed"
      "tests/copyinto/test_copy_into.py::test_merge_schema_adds_new_columns"
      "tests/copyinto/test_copy_into.py::test_corrupt_files_are_skipped_with_ignore_corrupt_files_and_counted"
      "tests/copyinto/test_copy_into.py::test_history_records_files_bytes_rows"
      "tests/copyinto/test_copy_into.py::test_rescued_data_column_and_modes"
      "tests/copyinto/test_copy_into.py::test_pattern_and_files_choose_the_files"
      "tests/copyinto/test_record.py::test_a_load_planned_before_a_concurrent_load_of_the_same_files_conflicts"
      "tests/copyinto/test_record.py::test_a_load_planned_before_a_concurrent_load_of_other_files_commits"
      "tests/copyinto/test_copy_into_formats.py::test_format_into_a_typed_table[json]"
      "tests/copyinto/test_copy_into_formats.py::test_format_into_a_typed_table[parquet]"
      "tests/copyinto/test_concurrency_and_crash.py::test_two_concurrent_loads_of_the_same_files_load_each_once"
      "tests/copyinto/test_concurrency_and_crash.py::test_killed_repeatedly_while_files_land_loads_every_file_exactly_once"
      "tests/autoloader/test_source.py::test_json_ingest_infers_strings_then_types_and_picks_up_only_new_files"
      "tests/autoloader/test_source.py::test_type_mismatch_and_case_clash_are_rescued_not_dropped"
      "tests/autoloader/test_source.py::test_explicit_schema_csv_with_partition_columns"
    )
    ;;
  kafka)
    # Spark's Kafka connector is published for Spark's exact version (4.2.0 is the newest
    # served); confluent-kafka makes topics and produces from the tests.
    PIP_ARGS=(-e ".[test,cdc]" "pyspark==4.2.0" "confluent-kafka==2.16.1")
    JAR_TIERS=(kafka kafka-broker)
    TESTS=(tests/kafka)
    ;;
  cdc)
    # Database change data capture end to end: PostgreSQL (installed from Debian when
    # initdb is missing), Debezium's PostgreSQL connector on Kafka Connect (the cdc jars),
    # the Kafka tier's broker and venv, PostgreSQL's JDBC driver (snapshots); tests/cdc.
    VENV_OF=kafka
    PIP_ARGS=(-e ".[test,cdc]" "pyspark==4.2.0" "confluent-kafka==2.16.1")
    JAR_TIERS=(kafka kafka-broker cdc jdbc-postgres)
    TESTS=(tests/cdc)
    ensure_postgres
    ;;
  *) die "no tier '$TIER' (tiers: delta-spark engines-bench parity on-delta-spark kafka cdc)" ;;
esac

command -v java >/dev/null 2>&1 || die "Java is missing: run scripts/setup.sh first (it installs Java 17)"

VENV=".venv-${VENV_OF:-$TIER}"
PY=${PYTHON:-python3}
# Tiers sharing a venv run side by side: one installs, the other waits for it.
mkdir -p "$VENV"
exec 8>"$VENV.lock"
flock 8
if [ ! -x "$VENV/bin/python" ]; then
  echo "== creating $VENV"
  "$PY" -m venv "$VENV"
fi
STAMP="$VENV/.headwater-install-stamp"
WANT="$(cat pyproject.toml | sha256sum | cut -d' ' -f1) ${PIP_ARGS[*]} $(pwd) $("$VENV/bin/python" -V 2>&1)"
if [ -n "${HEADWATER_REINSTALL:-}" ] || [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ] \
  || ! "$VENV/bin/python" -c "import headwater" >/dev/null 2>&1; then
  "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
  echo "== installing headwater into $VENV (${PIP_ARGS[*]})"
  "$VENV/bin/python" -m pip install -q "${PIP_ARGS[@]}"
  echo "$WANT" > "$STAMP"
fi
# The JVM options of the drivers tests start in subprocesses (scripts/test-jvm-opts.sh),
# the venv's class archive made once, under the venv's lock: tiers sharing a venv would
# otherwise each make it at once.
HEADWATER_TEST_DRIVER_OPTS="$(bash scripts/test-jvm-opts.sh "$VENV")"
export HEADWATER_TEST_DRIVER_OPTS
flock -u 8

echo "== JVM jars of the $TIER tier (jars/pom.xml; fetched once, then from the cache)"
bash scripts/fetch-jars.sh "${JAR_TIERS[@]}" >/dev/null
# `--install-only`: the venv and jars, no tests (scripts/test.sh prepares the tiers this
# way while the main suite runs, so their lanes start on their tests).
if [ "${1:-}" = "--install-only" ]; then exit 0; fi

# The tier's tests unless the arguments name tests themselves.
for arg in "$@"; do
  case "$arg" in tests/*|./tests/*) TESTS=() ;; esac
done
echo "== tests ($TIER)"
# With HEADWATER_SLOW_SHARD=i/k (scripts/test.sh: a part of the long work per commit) the
# tier keeps part i of its files, shared out by the tier's own recorded seconds
# (tests/sharding.py); a part that holds none of its files runs no test, not a failure.
export HEADWATER_SHARD_SUITE="$TIER"
status=0
"$VENV/bin/python" -m pytest "${TESTS[@]}" "$@" || status=$?
if [ "$status" = 5 ] && [ -n "${HEADWATER_SLOW_SHARD:-}" ]; then
  echo "   (no test of the $TIER tier in part $HEADWATER_SLOW_SHARD)"
  status=0
fi
exit "$status"
