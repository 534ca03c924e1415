"""Batch reads and writes of the ``delta`` format by path."""

from __future__ import annotations

import datetime as dt
import json
import os
from decimal import Decimal

import pytest
from deltalake import DeltaTable
from pyspark.sql import Row
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from headwater.delta.log.delta_log import DeltaLog
from headwater.errors import (
    CorruptLogError,
    NotADeltaTableError,
    OptionError,
    SchemaMismatchError,
    TableAlreadyExistsError,
    TableNotFoundError,
    VersionNotFoundError,
)

ALL_TYPES = StructType(
    [
        StructField("b", BooleanType()),
        StructField("i8", ByteType()),
        StructField("i16", ShortType()),
        StructField("i32", IntegerType()),
        StructField("i64", LongType()),
        StructField("f32", FloatType()),
        StructField("f64", DoubleType()),
        StructField("dec", DecimalType(38, 10)),
        StructField("dec_small", DecimalType(5, 2)),
        StructField("s", StringType()),
        StructField("bin", BinaryType()),
        StructField("d", DateType()),
        StructField("ts", TimestampType()),
        StructField("ts_ntz", TimestampNTZType()),
        StructField(
            "st",
            StructType(
                [StructField("x", IntegerType()), StructField("y", ArrayType(StringType()))]
            ),
        ),
        StructField(
            "arr",
            ArrayType(StructType([StructField("k", StringType()), StructField("v", LongType())])),
        ),
        StructField("m", MapType(StringType(), ArrayType(IntegerType()))),
    ]
)

ROWS = [
    (
        True, 1, 2, 3, 4, 1.5, 2.25, Decimal("12345678901234567890.0123456789"), Decimal("1.25"),
        "héllo", b"\x00\x01", dt.date(2024, 2, 29),
        dt.datetime(2024, 1, 1, 12, 30, 45, 123456, tzinfo=dt.timezone.utc),
        dt.datetime(2024, 1, 1, 12, 30, 45, 654321),
        (7, ["a", None]), [("k1", 1), ("k2", None)], {"a": [1, 2], "b": None},
    ),
    (None,) * 17,
    (
        False, -128, -32768, -(2**31), -(2**63), float("nan"), float("-inf"), Decimal("-1.0000000001"),
        Decimal("-999.99"), "", b"", dt.date(1, 1, 1),
        dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc), dt.datetime(9999, 12, 31, 23, 59, 59),
        (None, []), [], {},
    ),
]  # fmt: skip


def _log_actions(table_path, version):
    with open(os.path.join(table_path, "_delta_log", f"{version:020d}.json")) as f:
        return [json.loads(line) for line in f]


def _sorted(rows):
    """Rows as comparable text (NaN != NaN as floats, equal as text)."""
    return sorted(json.dumps(r.asDict(recursive=True), default=repr, sort_keys=True) for r in rows)


def test_roundtrip_preserves_every_type_nulls_and_nesting(spark, table_path):
    df = spark.createDataFrame(ROWS, ALL_TYPES)
    df.write.format("delta").save(table_path)
    back = spark.read.format("delta").load(table_path)
    assert back.schema == ALL_TYPES
    assert _sorted(back.collect()) == _sorted(df.collect())


def test_partition_columns_read_back_as_columns_with_nulls(spark, table_path):
    df = spark.createDataFrame(
        [(1, "a", dt.date(2024, 1, 1)), (2, None, dt.date(2024, 1, 2)), (3, "a/b=c:d", None)],
        "id long, p string, day date",
    )
    df.write.format("delta").option("partitionBy", "p,day").save(table_path)
    assert DeltaTable(table_path).metadata().partition_columns == ["p", "day"]
    back = spark.read.format("delta").load(table_path)
    assert back.columns == ["id", "p", "day"]
    assert sorted(back.collect()) == sorted(df.collect())


def test_dataframe_partitionby_is_honoured_too(spark, table_path):
    spark.range(10).withColumn("k", F.col("id") % 2).write.format("delta").partitionBy("k").save(
        table_path
    )
    assert DeltaTable(table_path).metadata().partition_columns == ["k"]
    assert {os.path.basename(d) for d in os.listdir(table_path) if d.startswith("k=")} == {
        "k=0",
        "k=1",
    }


def test_partition_filter_prunes_files_in_the_native_plan(spark, table_path):
    spark.range(100).withColumn("k", F.col("id") % 5).write.format("delta").option(
        "partitionBy", "k"
    ).save(table_path)
    df = spark.read.format("delta").load(table_path).where("k = 3")
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "PartitionFilters: [isnotnull(k" in plan and "(k#" in plan and "= 3)" in plan
    # Only the k=3 files are scanned.
    files = {r[0] for r in df.select(F.input_file_name()).distinct().collect()}
    assert files and all("/k=3/" in f for f in files)
    assert df.count() == 20


def test_each_write_is_one_commit_with_per_file_stats(spark, table_path):
    df = spark.range(1000).selectExpr(
        "id", "cast(id % 7 as int) as k", "concat('v', id) as s", "id * 1.5 as x"
    )
    df.repartition(4).write.format("delta").save(table_path)
    log_dir = os.path.join(table_path, "_delta_log")
    assert sorted(f for f in os.listdir(log_dir) if f.endswith(".json")) == [
        "00000000000000000000.json"
    ]
    actions = _log_actions(table_path, 0)
    adds = [a["add"] for a in actions if "add" in a]
    assert len(adds) == 4
    total = 0
    for add in adds:
        stats = json.loads(add["stats"])
        total += stats["numRecords"]
        assert set(stats["nullCount"]) == {"id", "k", "s", "x"}
        assert stats["minValues"]["id"] <= stats["maxValues"]["id"]
        assert "x" not in stats["minValues"]  # doubles: NaN ordering differs, no bounds
    assert total == 1000
    mins = sorted(json.loads(a["stats"])["minValues"]["id"] for a in adds)
    assert mins[0] == 0
    df.write.format("delta").mode("append").save(table_path)
    assert DeltaTable(table_path).version() == 1


def test_stats_bounds_are_safe_for_timestamps_and_long_strings(spark, table_path):
    ts = dt.datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=dt.timezone.utc)
    long = "z" * 40
    spark.createDataFrame([(ts, long), (ts, "a")], "t timestamp, s string").coalesce(
        1
    ).write.format("delta").save(table_path)
    add = next(a["add"] for a in _log_actions(table_path, 0) if "add" in a)
    stats = json.loads(add["stats"])
    assert stats["minValues"]["t"] == "2024-05-01T10:00:00.123Z"
    assert stats["maxValues"]["t"] == "2024-05-01T10:00:00.124Z"
    assert stats["minValues"]["s"] == "a" and "s" not in stats["maxValues"]
    # delta-rs file skipping with these stats still finds the row.
    found = DeltaTable(table_path).to_pyarrow_table(filters=[("t", ">=", ts)])
    assert found.num_rows == 2


def test_time_travel_by_version_and_timestamp(spark, table_path):
    spark.range(3).write.format("delta").save(table_path)
    spark.range(3, 5).write.format("delta").mode("append").save(table_path)
    spark.range(100, 101).write.format("delta").mode("overwrite").save(table_path)
    read = spark.read.format("delta")
    assert read.load(table_path).count() == 1
    assert sorted(
        r.id for r in spark.read.format("delta").option("versionAsOf", 0).load(table_path).collect()
    ) == [0, 1, 2]
    assert spark.read.format("delta").option("versionAsOf", "1").load(table_path).count() == 5
    history = DeltaLog(table_path).history()  # the commits' times, as the protocol's
    v1_time = next(h["timestamp"] for h in history if h["version"] == 1)
    stamp = dt.datetime.fromtimestamp(v1_time / 1000, dt.timezone.utc).isoformat()
    assert spark.read.format("delta").option("timestampAsOf", stamp).load(table_path).count() == 5
    with pytest.raises(VersionNotFoundError, match="version 7"):
        spark.read.format("delta").option("versionAsOf", 7).load(table_path)


def test_overwrite_replaces_and_error_and_ignore_modes(spark, table_path):
    spark.range(5).write.format("delta").save(table_path)
    with pytest.raises(TableAlreadyExistsError, match="already exists"):
        spark.range(5).write.format("delta").save(table_path)
    spark.range(50).write.format("delta").mode("ignore").save(table_path)
    assert spark.read.format("delta").load(table_path).count() == 5
    spark.range(2).write.format("delta").mode("overwrite").save(table_path)
    assert spark.read.format("delta").load(table_path).count() == 2


def test_schema_mismatch_is_refused_naming_columns_and_table_unchanged(spark, table_path):
    spark.range(3).selectExpr("id", "'a' as s").write.format("delta").save(table_path)
    with pytest.raises(SchemaMismatchError, match="`extra`.*mergeSchema"):
        spark.range(3).selectExpr("id", "'a' as s", "1 as extra").write.format("delta").mode(
            "append"
        ).save(table_path)
    with pytest.raises(SchemaMismatchError, match="`s` is string in the table but int"):
        spark.range(3).selectExpr("id", "1 as s").write.format("delta").mode("append").save(
            table_path
        )
    assert DeltaTable(table_path).version() == 0
    assert spark.read.format("delta").load(table_path).count() == 3


def test_merge_schema_adds_columns_and_missing_columns_read_null(spark, table_path):
    spark.range(2).selectExpr("id", "'a' as s").write.format("delta").save(table_path)
    spark.range(2, 4).selectExpr("id", "'b' as s", "id * 10 as extra").write.format("delta").mode(
        "append"
    ).option("mergeSchema", "true").save(table_path)
    spark.range(4, 5).selectExpr("id").write.format("delta").mode("append").save(table_path)
    back = spark.read.format("delta").load(table_path)
    assert back.columns == ["id", "s", "extra"]
    assert sorted(tuple(r) for r in back.collect()) == [
        (0, "a", None),
        (1, "a", None),
        (2, "b", 20),
        (3, "b", 30),
        (4, None, None),
    ]


def test_overwrite_schema_replaces_schema_and_partitioning(spark, table_path):
    spark.range(3).selectExpr("id", "'a' as s").write.format("delta").save(table_path)
    with pytest.raises(SchemaMismatchError):
        spark.range(3).selectExpr("cast(id as string) as id").write.format("delta").mode(
            "overwrite"
        ).save(table_path)
    spark.range(3).selectExpr("cast(id as string) as id", "id % 2 as k").write.format("delta").mode(
        "overwrite"
    ).option("overwriteSchema", "true").option("partitionBy", "k").save(table_path)
    back = spark.read.format("delta").load(table_path)
    assert back.schema.simpleString() == "struct<id:string,k:bigint>"
    assert DeltaTable(table_path).metadata().partition_columns == ["k"]


def test_replace_where_replaces_only_matching_rows(spark, table_path):
    spark.range(10).selectExpr("id", "id % 3 as k").write.format("delta").option(
        "partitionBy", "k"
    ).save(table_path)
    new = spark.createDataFrame([(100, 1), (101, 1)], "id long, k long")
    new.write.format("delta").mode("overwrite").option("replaceWhere", "k = 1").save(table_path)
    rows = sorted((r.id, r.k) for r in spark.read.format("delta").load(table_path).collect())
    assert rows == sorted([(i, i % 3) for i in range(10) if i % 3 != 1] + [(100, 1), (101, 1)])
    # A data-column predicate keeps the other rows of the touched files.
    spark.createDataFrame([(7, 0)], "id long, k long").write.format("delta").mode(
        "overwrite"
    ).option("replaceWhere", "id >= 6 AND id < 9").save(table_path)
    ids = sorted(r.id for r in spark.read.format("delta").load(table_path).collect())
    assert ids == [0, 2, 3, 5, 7, 9, 100, 101]
    with pytest.raises(SchemaMismatchError, match="do not match the predicate"):
        spark.createDataFrame([(5, 2)], "id long, k long").write.format("delta").mode(
            "overwrite"
        ).option("replaceWhere", "k = 1").save(table_path)


def test_writing_to_a_directory_of_other_files_is_refused(spark, tmp_path):
    target = tmp_path / "not_delta"
    target.mkdir()
    (target / "data.csv").write_text("a,b\n1,2\n")
    with pytest.raises(NotADeltaTableError, match="data.csv"):
        spark.range(1).write.format("delta").mode("append").save(str(target))
    assert sorted(os.listdir(target)) == ["data.csv"]


def test_unknown_option_is_named(spark, table_path):
    with pytest.raises(OptionError, match="'mergeSchemaa'.*mergeSchema"):
        spark.range(1).write.format("delta").option("mergeSchemaa", "true").save(table_path)
    assert not os.path.exists(os.path.join(table_path, "_delta_log"))
    spark.range(1).write.format("delta").save(table_path)
    with pytest.raises(OptionError, match="versionAsOff"):
        spark.read.format("delta").option("versionAsOff", 0).load(table_path)


def test_missing_table_and_corrupt_log_give_named_errors(spark, tmp_path):
    with pytest.raises(TableNotFoundError, match="No Delta table") as missing:
        spark.read.format("delta").load(str(tmp_path / "nothing"))
    # Spark's (and delta-spark's) words for a missing path, which users' code matches on
    assert str(missing.value).startswith("[PATH_NOT_FOUND] Path does not exist:")
    assert missing.value.getCondition() == "PATH_NOT_FOUND"
    assert missing.value.getSqlState() == "42K03"
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    spark.range(3).write.format("delta").mode("append").save(path)
    os.remove(os.path.join(path, "_delta_log", "00000000000000000000.json"))
    with pytest.raises((CorruptLogError, TableNotFoundError)):
        spark.read.format("delta").load(path).collect()
    bad = str(tmp_path / "bad")
    os.makedirs(os.path.join(bad, "_delta_log"))
    with open(os.path.join(bad, "_delta_log", "00000000000000000000.json"), "w") as f:
        f.write("{not json")
    with pytest.raises(CorruptLogError):
        spark.range(1).write.format("delta").mode("append").save(bad)


def test_missing_data_file_fails_naming_the_file(spark, table_path):
    spark.range(10).coalesce(1).write.format("delta").save(table_path)
    data = [f for f in os.listdir(table_path) if f.endswith(".parquet")][0]
    os.remove(os.path.join(table_path, data))
    with pytest.raises(Exception, match=data.split(".")[0]):
        spark.read.format("delta").load(table_path).collect()


def test_user_schema_on_read_is_refused(spark, table_path):
    spark.range(1).write.format("delta").save(table_path)
    with pytest.raises(OptionError, match="own schema"):
        spark.read.format("delta").schema("id long").load(table_path)


def test_empty_dataframe_creates_an_empty_table(spark, table_path):
    spark.range(0).write.format("delta").save(table_path)
    back = spark.read.format("delta").load(table_path)
    assert back.count() == 0 and back.columns == ["id"]


def test_user_metadata_and_operation_metrics_in_history(spark, table_path):
    spark.range(42).write.format("delta").option("userMetadata", "nightly load").save(table_path)
    entry = DeltaTable(table_path).history()[0]
    assert entry["userMetadata"] == "nightly load"
    assert entry["operationMetrics"]["numOutputRows"] == "42"


def test_txn_app_id_and_version_make_a_write_idempotent(spark, table_path):
    for _ in range(2):
        spark.range(5).write.format("delta").mode("append").option("txnAppId", "job-1").option(
            "txnVersion", 3
        ).save(table_path)
    assert spark.read.format("delta").load(table_path).count() == 5
    spark.range(5).write.format("delta").mode("append").option("txnAppId", "job-1").option(
        "txnVersion", 4
    ).save(table_path)
    assert spark.read.format("delta").load(table_path).count() == 10


def test_a_replayed_write_that_created_the_table_is_skipped_in_the_default_mode(spark, table_path):
    """The first write of a job creates the table (mode errorifexists, the default); run
    again with the same txnAppId/txnVersion (a foreachBatch batch replayed after a crash)
    it is skipped, as in delta-spark, not refused because the table now exists."""
    for _ in range(2):
        spark.range(3).write.format("delta").option("txnAppId", "job-2").option(
            "txnVersion", 0
        ).save(table_path)
    assert spark.read.format("delta").load(table_path).count() == 3
    with pytest.raises(Exception, match="already exists"):
        spark.range(3).write.format("delta").option("txnAppId", "job-2").option(
            "txnVersion", 1
        ).save(table_path)


def test_session_property_defaults_apply_to_new_tables_only(spark, tmp_path):
    """``spark.databricks.delta.properties.defaults.<key>`` gives every table created in
    the session ``delta.<key>`` (here a DataFrame write and CREATE TABLE); the table's own
    properties win and existing tables are left as they are."""
    key = "spark.databricks.delta.properties.defaults.enableChangeDataFeed"
    old = str(tmp_path / "old")
    spark.range(1).write.format("delta").save(old)
    spark.conf.set(key, "true")
    try:
        written, created, own = (str(tmp_path / n) for n in ("written", "created", "own"))
        spark.range(1).write.format("delta").save(written)
        spark.sql(f"CREATE TABLE delta.`{created}` (id INT) USING DELTA")
        spark.sql(
            f"CREATE TABLE delta.`{own}` (id INT) USING DELTA "
            "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'false')"
        )
        spark.range(1).write.format("delta").mode("append").save(old)
    finally:
        spark.conf.unset(key)

    def feed(path):
        detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()
        return detail.properties.get("delta.enableChangeDataFeed")

    assert [feed(p) for p in (written, created, own, old)] == ["true", "true", "false", None]


def test_rows_written_from_python_objects(spark, table_path):
    spark.createDataFrame([Row(a=1, b="x")]).write.format("delta").save(table_path)
    assert spark.read.format("delta").load(table_path).collect() == [Row(a=1, b="x")]


def test_a_first_write_killed_before_its_commit_does_not_block_the_next(spark, table_path):
    # What a SIGKILL between "files written" and "first commit" leaves behind.
    os.makedirs(os.path.join(table_path, "_delta_log"))
    os.makedirs(os.path.join(table_path, "_headwater_staging", "x", "_temporary"))
    with open(
        os.path.join(table_path, "_headwater_staging", "x", "_temporary", "part-0.parquet"), "w"
    ) as f:
        f.write("partial")
    spark.range(3).write.format("delta").mode("append").save(table_path)
    assert sorted(r.id for r in spark.read.format("delta").load(table_path).collect()) == [0, 1, 2]


def test_timestamps_past_year_9999_are_written_and_read_back(spark, table_path):
    """Epoch microseconds read as a timestamp (a Debezium MicroTimestamp misread) reach year
    55485; Spark writes them, so the writer must too: the column keeps its null count and no
    bounds, and a filter on it still finds the row."""
    df = spark.createDataFrame([(1, 1_688_000_000_000_000_000), (2, 0)], "id INT, us LONG")
    df = df.selectExpr("id", "timestamp_micros(us) AS ts", "cast(timestamp_micros(us) AS date) d")
    df.coalesce(1).write.format("delta").save(table_path)
    (add,) = [a["add"] for a in _log_actions(table_path, 0) if "add" in a]
    stats = json.loads(add["stats"])
    assert stats["nullCount"] == {"id": 0, "ts": 0, "d": 0}
    assert "ts" not in stats["minValues"] and "d" not in stats["maxValues"]
    assert stats["minValues"]["id"] == 1 and stats["maxValues"]["id"] == 2
    back = spark.read.format("delta").load(table_path)
    assert back.where("ts > timestamp'9999-12-31 00:00:00'").select("id").collect() == [Row(id=1)]
    assert back.count() == 2
