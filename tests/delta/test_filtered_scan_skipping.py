"""Filters applied after ``load()`` skip files by the log's partition values and stats.

``spark.read.format("delta").load(p).filter(...)`` on headwater's engine: the files Spark's
scan reads (its ``numFiles`` metric, and the files rows came from) for equality, range,
IN, IS NULL, AND/OR, partition and time filters, each with the same rows as the scan
without skipping; and the files no stat can rule out (no stats, cut-short strings,
millisecond timestamps, NaN) are read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from pyspark.sql.classic.dataframe import DataFrame as SparkFrame

REPO = Path(__file__).resolve().parents[2]
FILES = 10
ROWS = 1000  # ids 0..999, file i holds ids 100*i .. 100*i+99


def files_read(df) -> int:
    """The ``numFiles`` metric summed over the file scans of the plan that ran (the
    benchmark's own count; 0 when Spark planned no scan)."""
    sys.path.insert(0, str(REPO / "bench"))
    try:
        from _engines_work import files_read as counted
    finally:
        sys.path.remove(str(REPO / "bench"))
    return counted(df) or 0


def rows(df) -> list:
    return sorted(tuple(r) for r in df.collect())


def check(loaded, condition, expected_files: int) -> None:
    """``loaded.filter(condition)`` reads ``expected_files`` files and the same rows as
    Spark's filter on the scan of every file."""
    skipped = loaded.filter(condition)
    got = rows(skipped)
    assert files_read(skipped) == expected_files, condition
    unskipped = SparkFrame.filter(loaded, condition)
    assert got == rows(unskipped)
    assert files_read(unskipped) == FILES


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("skipping") / "t")
    df = (
        spark.range(0, ROWS, 1, FILES)
        .withColumn("s", F.format_string("k%04d", "id"))
        .withColumn("ts", F.timestamp_seconds(F.col("id") * 60))
        .withColumn("d", F.date_add(F.lit("2024-01-01").cast("date"), F.col("id").cast("int")))
        .withColumn("n", F.when(F.col("id") < 100, None).otherwise(F.col("id")))
        .withColumn("x", F.col("id") / 2)
    )
    df.write.format("delta").save(path)
    return path


def test_equality_range_and_in_read_only_the_matching_files(spark, table):
    loaded = spark.read.format("delta").load(table)
    check(loaded, "id = 5", 1)
    check(loaded, F.col("id") == 555, 1)
    check(loaded, (F.col("id") >= 250) & (F.col("id") < 420), 3)
    check(loaded, "id > 899", 1)
    check(loaded, "id <= 99", 1)
    check(loaded, "id IN (5, 705, 706)", 2)
    check(loaded, "id BETWEEN 150 AND 160", 1)
    check(loaded, "id = 5000", 0)
    check(loaded, "s = 'k0310'", 1)
    check(loaded, "x < 50.0", FILES)  # headwater writes no min/max for floats (NaN)


def test_null_and_or_and_time_filters(spark, table):
    loaded = spark.read.format("delta").load(table)
    check(loaded, "n IS NULL", 1)
    check(loaded, "n IS NOT NULL", FILES - 1)
    check(loaded, "id = 5 OR id = 905", 2)
    check(loaded, "(id < 100 OR id >= 900) AND s >= 'k0050'", 2)
    check(loaded, "id = 5 OR x > 1.0", FILES)  # one side bounds nothing: every file
    check(loaded, "ts = timestamp'1970-01-01 00:05:00Z'", 1)
    check(loaded, "ts >= timestamp'1970-01-01 16:00:00Z'", 1)
    check(loaded, "d = date'2024-01-31'", 1)
    # filters applied one after another, and df["col"] bound to the loaded scan
    chained = loaded.where("id >= 300").filter(loaded["id"] < 350).select("id", "s")
    assert rows(chained) == [(i, f"k{i:04d}") for i in range(300, 350)]
    assert files_read(chained) == 1


def test_filters_after_a_projection_or_new_column(spark, table):
    loaded = spark.read.format("delta").load(table)
    projected = loaded.select("id", "s").withColumn("y", F.col("id") + 1).filter("id = 1")
    assert rows(projected) == [(1, "k0001", 2)]
    assert files_read(projected) == 1
    renamed = loaded.select(F.col("id").alias("key")).filter("key > 950")
    assert rows(renamed) == [(i,) for i in range(951, ROWS)]
    assert files_read(renamed) == 1


def test_partition_values_skip_files(spark, tmp_path):
    path = str(tmp_path / "p")
    (
        spark.range(0, 400, 1, 4)
        .withColumn("part", (F.col("id") % 4).cast("int"))
        .withColumn("region", F.when(F.col("id") % 4 == 3, None).otherwise(F.lit("eu")))
        .repartition(1)
        .write.format("delta")
        .partitionBy("part")
        .save(path)
    )
    loaded = spark.read.format("delta").load(path)
    parts = loaded.filter("part = 2")
    assert len(rows(parts)) == 100 and files_read(parts) == 1
    both = loaded.filter("part IN (1, 2) AND id < 10")
    assert rows(both) == rows(SparkFrame.filter(loaded, "part IN (1, 2) AND id < 10"))
    assert files_read(both) == 2
    negated = loaded.filter("NOT part = 0")
    assert len(rows(negated)) == 300 and files_read(negated) == 3
    nulls = loaded.filter("region IS NULL")
    assert len(rows(nulls)) == 100 and files_read(nulls) == 1


def test_a_file_without_stats_is_never_skipped(spark, tmp_path):
    path = tmp_path / "nostats"
    spark.range(0, 100, 1, 2).write.format("delta").save(str(path))
    spark.range(1000, 1100, 1, 1).write.format("delta").mode("append").save(str(path))
    commit = path / "_delta_log" / f"{1:020d}.json"
    lines = []
    for line in commit.read_text().splitlines():
        action = json.loads(line)
        if "add" in action:
            action["add"].pop("stats", None)  # a writer may leave stats out
        lines.append(json.dumps(action))
    commit.write_text("\n".join(lines) + "\n")
    loaded = spark.read.format("delta").load(str(path))
    for condition, expected in (("id = 5", 2), ("id = 1050", 1), ("id IS NULL", 1)):
        df = loaded.filter(condition)
        assert rows(df) == rows(SparkFrame.filter(loaded, condition))
        assert files_read(df) == expected, condition


def test_loose_bounds_keep_files(spark, tmp_path):
    """Bounds another writer may have left loose: a maximum string of the prefix length
    (a cut-short prefix), a maximum timestamp in whole milliseconds, a NaN."""
    path = tmp_path / "loose"
    long = "a" * 40
    df = spark.createDataFrame(
        [(long, "2024-01-01 00:00:00.000500", 1.0), ("b", "2024-01-01 00:00:00", float("nan"))],
        "s string, t string, x double",
    ).withColumn("t", F.to_timestamp("t"))
    df.repartition(1).write.format("delta").save(str(path))
    commit = path / "_delta_log" / f"{0:020d}.json"
    lines = []
    for line in commit.read_text().splitlines():
        action = json.loads(line)
        if "add" in action:  # as a writer that truncates without a tie-breaker writes them
            stats = json.loads(action["add"]["stats"])
            stats["minValues"].update(s="a" * 32, t="2024-01-01T00:00:00.000Z")
            stats["maxValues"].update(s="b", t="2024-01-01T00:00:00.000Z", x=1.0)
            action["add"]["stats"] = json.dumps(stats)
        lines.append(json.dumps(action))
    commit.write_text("\n".join(lines) + "\n")
    loaded = spark.read.format("delta").load(str(path))
    for condition in (
        f"s = '{long}'",
        "t = timestamp'2024-01-01 00:00:00.0005'",
        "x > 2.0",
    ):
        got = loaded.filter(condition)
        assert len(rows(got)) == 1 and files_read(got) == 1, condition


def test_deletion_vectors_and_results_match(spark, tmp_path):
    path = str(tmp_path / "dv")
    spark.range(0, ROWS, 1, FILES).write.format("delta").save(path)
    spark.sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors'='true')"
    )
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 2 = 0 AND id < 500")
    loaded = spark.read.format("delta").load(path)
    got = loaded.filter("id BETWEEN 100 AND 120")
    assert rows(got) == [(i,) for i in range(101, 121, 2)]
    assert files_read(got) == 1  # the deleted rows' positions are no file scan
    assert rows(got) == rows(SparkFrame.filter(loaded, "id BETWEEN 100 AND 120"))


def test_stats_of_a_timestamp_written_by_headwater_bound_it(spark, tmp_path):
    path = Path(tmp_path / "ts")
    spark.createDataFrame([("2024-01-01 00:00:00.123456",)], "t string").select(
        F.to_timestamp("t").alias("t")
    ).write.format("delta").save(str(path))
    loaded = spark.read.format("delta").load(str(path))
    assert loaded.filter("t = timestamp'2024-01-01 00:00:00.123456'").count() == 1


def test_sql_where_on_a_path_skips_files(spark, table):
    query = f"SELECT id, s FROM delta.`{table}` WHERE id = 5 OR id IN (905, 906)"
    got = spark.sql(query)
    assert rows(got) == [(5, "k0005"), (905, "k0905"), (906, "k0906")]
    assert files_read(got) == 2
    joined = spark.sql(
        f"SELECT a.id FROM delta.`{table}` a JOIN delta.`{table}` b ON a.id = b.id "
        "WHERE a.id < 50 AND b.id < 50"
    )
    assert rows(joined) == [(i,) for i in range(50)]
    assert files_read(joined) == 2  # each side reads the one file of ids below 100
    everything = spark.sql(f"SELECT count(*) FROM delta.`{table}` WHERE x > 1.0")
    assert rows(everything) == [(ROWS - 3,)] and files_read(everything) == FILES


def test_a_table_read_by_name_skips_files(spark):
    spark.sql("CREATE DATABASE IF NOT EXISTS skipping")
    spark.range(0, ROWS, 1, FILES).write.format("delta").mode("overwrite").saveAsTable(
        "skipping.by_name"
    )
    for df in (spark.table("skipping.by_name"), spark.read.table("skipping.by_name")):
        got = df.filter("id >= 990")
        assert rows(got) == [(i,) for i in range(990, ROWS)]
        assert files_read(got) == 1
