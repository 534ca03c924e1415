"""Change data feed: recorded by MERGE/UPDATE/DELETE on tables with
delta.enableChangeDataFeed = true, read back with readChangeFeed (batch and stream), and
readable by delta-rs (the commits follow the protocol)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable as RsDeltaTable

from headwater.delta.tables import DeltaTable
from headwater.errors import DeltaError, OptionError
from tests.delta.helpers import drain_to_memory

CDF = {"delta.enableChangeDataFeed": "true"}


def _create(spark, path, partitioned=False, props=CDF):
    builder = (
        DeltaTable.create(spark)
        .location(str(path))
        .addColumn("id", "BIGINT")
        .addColumn("v", "STRING")
        .addColumn("region", "STRING")
    )
    if partitioned:
        builder = builder.partitionedBy("region")
    for k, val in props.items():
        builder = builder.property(k, val)
    builder.execute()


def _changes(rows):
    rows = rows.collect() if hasattr(rows, "collect") else rows
    return sorted(
        (r["_commit_version"], r["_change_type"], r["id"], r["v"], r["region"]) for r in rows
    )


@pytest.fixture(scope="module")
def changed_table(spark, tmp_path_factory):
    """v1 insert 1..5, v2 UPDATE id=2, v3 DELETE id=3, v4 MERGE (update 1, delete 4, insert 6)."""
    path = tmp_path_factory.mktemp("cdf") / "t"
    _create(spark, path)
    rows = [(i, f"v{i}", "eu" if i % 2 else "us") for i in range(1, 6)]
    spark.createDataFrame(rows, "id long, v string, region string").write.format("delta").mode(
        "append"
    ).save(str(path))
    table = DeltaTable.forPath(spark, str(path))
    table.update("id = 2", {"v": "'two'"})
    table.delete("id = 3")
    source = spark.createDataFrame(
        [(1, "one", "eu", False), (4, None, "us", True), (6, "v6", "us", False)],
        "id long, v string, region string, gone boolean",
    )
    (
        table.alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedDelete("s.gone")
        .whenMatchedUpdate(set={"v": "s.v"})
        .whenNotMatchedInsert(values={"id": "s.id", "v": "s.v", "region": "s.region"})
        .execute()
    )
    return path


EXPECTED = [
    (1, "insert", 1, "v1", "eu"),
    (1, "insert", 2, "v2", "us"),
    (1, "insert", 3, "v3", "eu"),
    (1, "insert", 4, "v4", "us"),
    (1, "insert", 5, "v5", "eu"),
    (2, "update_postimage", 2, "two", "us"),
    (2, "update_preimage", 2, "v2", "us"),
    (3, "delete", 3, "v3", "eu"),
    (4, "delete", 4, "v4", "us"),
    (4, "insert", 6, "v6", "us"),
    (4, "update_postimage", 1, "one", "eu"),
    (4, "update_preimage", 1, "v1", "eu"),
]


def test_dml_records_exactly_the_changed_rows(spark, changed_table):
    df = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", 1)
        .load(str(changed_table))
    )
    assert df.columns[-3:] == ["_change_type", "_commit_version", "_commit_timestamp"]
    assert _changes(df) == EXPECTED


def test_change_rows_carry_the_commit_timestamps_history_shows(spark, changed_table):
    df = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", 2)
        .load(str(changed_table))
    )
    seen = {r["_commit_version"]: r["_commit_timestamp"] for r in df.collect()}
    history = {
        r["version"]: r["timestamp"]
        for r in DeltaTable.forPath(spark, str(changed_table)).history().collect()
    }
    assert seen == {v: history[v] for v in (2, 3, 4)}


def test_delta_rs_reads_the_same_change_feed(changed_table):
    """Our cdc commits follow the protocol: another engine derives the same changes."""
    reference = pa.table(RsDeltaTable(str(changed_table)).load_cdf(starting_version=1).read_all())
    rows = sorted(
        (r["_commit_version"], r["_change_type"], r["id"], r["v"], r["region"])
        for r in reference.to_pylist()
    )
    assert rows == EXPECTED


def test_version_range_and_timestamps_select_commits(spark, changed_table):
    def read(**opts):
        reader = spark.read.format("delta").option("readChangeFeed", "true")
        for k, v in opts.items():
            reader = reader.option(k, v)
        return _changes(reader.load(str(changed_table)))

    assert read(startingVersion=2, endingVersion=3) == [e for e in EXPECTED if e[0] in (2, 3)]
    ts = {
        r["version"]: r["timestamp"]
        for r in DeltaTable.forPath(spark, str(changed_table)).history().collect()
    }
    start = ts[3].strftime("%Y-%m-%d %H:%M:%S.%f")
    assert read(startingTimestamp=start) == [e for e in EXPECTED if e[0] >= 3]
    by_name = spark.read.format("delta").option("readChangeFeed", "true")
    assert _changes(by_name.option("startingVersion", 4).load(str(changed_table))) == [
        e for e in EXPECTED if e[0] == 4
    ]


def test_change_feed_streams_from_a_version(spark, changed_table, tmp_path):
    stream = (
        spark.readStream.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", 1)
        .load(str(changed_table))
    )
    assert _changes(drain_to_memory(spark, stream, "cdf_stream", tmp_path / "cp")) == EXPECTED


def test_change_feed_stream_from_a_timestamp_starts_at_the_first_commit_at_or_after_it(
    spark, changed_table, tmp_path
):
    """A timestamp between two commits starts at the later one, as a batch read does (and
    delta-spark's streams): the stream began one commit early."""
    ts = {
        r["version"]: r["timestamp"]
        for r in DeltaTable.forPath(spark, str(changed_table)).history().collect()
    }
    between = ts[2] + (ts[3] - ts[2]) / 2
    stream = (
        spark.readStream.format("delta")
        .option("readChangeFeed", "true")
        .option("startingTimestamp", between.strftime("%Y-%m-%d %H:%M:%S.%f"))
        .load(str(changed_table))
    )
    rows = _changes(drain_to_memory(spark, stream, "cdf_from_ts", tmp_path / "cp"))
    assert rows == [e for e in EXPECTED if e[0] >= 3]


def test_change_feed_stream_without_start_begins_with_the_snapshot_as_inserts(
    spark, changed_table, tmp_path
):
    stream = (
        spark.readStream.format("delta").option("readChangeFeed", "true").load(str(changed_table))
    )
    rows = _changes(drain_to_memory(spark, stream, "cdf_snapshot", tmp_path / "cp"))
    assert rows == [
        (4, "insert", 1, "one", "eu"),
        (4, "insert", 2, "two", "us"),
        (4, "insert", 5, "v5", "eu"),
        (4, "insert", 6, "v6", "us"),
    ]


def test_partitioned_table_records_changes_with_partition_values(spark, tmp_path):
    path = tmp_path / "p"
    _create(spark, path, partitioned=True)
    rows = [(i, f"v{i}", "eu" if i % 2 else "us") for i in range(1, 7)]
    spark.createDataFrame(rows, "id long, v string, region string").write.format("delta").mode(
        "append"
    ).save(str(path))
    DeltaTable.forPath(spark, str(path)).update("id = 4", {"v": "'four'"})
    df = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", 2)
        .load(str(path))
    )
    assert _changes(df) == [
        (2, "update_postimage", 4, "four", "us"),
        (2, "update_preimage", 4, "v4", "us"),
    ]
    assert (path / "_change_data" / "region=us").is_dir()


def test_change_feed_needs_a_start_and_a_table_that_records_it(spark, tmp_path, changed_table):
    reader = spark.read.format("delta").option("readChangeFeed", "true")
    with pytest.raises(OptionError, match="startingVersion"):
        reader.load(str(changed_table)).collect()
    with pytest.raises(DeltaError, match="DELTA_INVALID_CDC_RANGE"):
        reader.option("startingVersion", 99).load(str(changed_table)).collect()
    plain = tmp_path / "plain"
    _create(spark, plain, props={})
    spark.createDataFrame([(1, "a", "eu")], "id long, v string, region string").write.format(
        "delta"
    ).mode("append").save(str(plain))
    with pytest.raises(DeltaError, match="DELTA_MISSING_CHANGE_DATA"):
        reader.option("startingVersion", 0).load(str(plain)).collect()
