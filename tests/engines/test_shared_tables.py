"""Tables shared both ways: a table one engine writes, the other reads (and changes) with
identical results, across Delta's features — plain, partitioned, deletion vectors, change
data feed, column mapping by name — after DML by either side, at every version, and from a
checkpoint the other side wrote.

Each test runs twice (``pair``): headwater's engine writes and delta-spark reads, then the
reverse. "Identical" is checked three ways: the reader's rows and schema equal the
writer's, both equal what the statements imply (computed here, in Python), and the log
shows the feature was really used (a deletion vector, physical column names, change
files, a checkpoint), so a test cannot pass by the writer quietly falling back.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest

from tests.engines.peer import Peer

COLUMNS = (
    "id BIGINT, part INT, name STRING, amount DOUBLE, price DECIMAL(10,2), day DATE, "
    "ts TIMESTAMP, flag BOOLEAN, arr ARRAY<BIGINT>, st STRUCT<a: BIGINT, b: STRING>, "
    "m MAP<STRING, BIGINT>"
)
# Rows [start, stop) of the sample: every column type above, nulls in several of them.
ROWS = """SELECT id, CAST(id % 4 AS INT) AS part,
  IF(id % 6 = 5, NULL, concat('n', id)) AS name, id * 1.5 AS amount,
  CAST(id * 0.25 AS DECIMAL(10,2)) AS price, date_add(DATE'2024-01-01', CAST(id % 3 AS INT)) AS day,
  timestamp_seconds(1704067200 + id * 3600) AS ts, id % 2 = 0 AS flag,
  IF(id % 9 = 4, NULL, array(id, id + 1)) AS arr, named_struct('a', id, 'b', concat('x', id)) AS st,
  map('k', id) AS m
FROM range({start}, {stop})"""

# Each feature: the CREATE TABLE clauses that turn it on.
FEATURES = {
    "plain": "",
    "partitioned": "PARTITIONED BY (part)",
    "deletion_vectors": "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
    "change_data_feed": "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')",
    "column_mapping_name": "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
}


def table(path: str) -> str:
    return f"delta.`{path}`"


def create(path: str, feature: str, extra_properties: str = "") -> list[str]:
    clauses = FEATURES[feature]
    if extra_properties:
        clauses = (
            clauses.replace(")", f", {extra_properties})", 1)
            if "TBLPROPERTIES" in clauses
            else f"{clauses} TBLPROPERTIES ({extra_properties})"
        )
    return [f"CREATE TABLE {table(path)} ({COLUMNS}) USING DELTA {clauses}"]


def insert(path: str, start: int, stop: int) -> str:
    return f"INSERT INTO {table(path)} " + ROWS.format(start=start, stop=stop)


def log_actions(path: str) -> list[dict]:
    """Every action of the table's JSON commits, in order."""
    actions = []
    for commit in sorted(Path(path, "_delta_log").glob("*.json")):
        actions += [json.loads(line) for line in commit.read_text().splitlines() if line]
    return actions


def assert_same_table(
    writer: Peer, reader: Peer, path: str, *, skip: str = "", **options
) -> list[tuple]:
    """Both engines read the table (with ``options``) as the same schema and rows (but
    for the column ``skip``)."""
    by_writer, by_reader = writer.read(path, **options), reader.read(path, **options)
    assert by_reader[0] == by_writer[0], f"{reader} reads another schema than {writer}"
    keep = [i for i, column in enumerate(by_writer[0]) if column[0] != skip]
    rows = [
        sorted((tuple(r[i] for i in keep) for r in found), key=repr)
        for found in (by_writer[1], by_reader[1])
    ]
    assert rows[1] == rows[0]
    return rows[0]


def assert_same_change_feed(writer: Peer, reader: Peer, path: str, start: int) -> None:
    """The change feeds agree, row for row and version for version (commit timestamps:
    see test_change_feed_commit_timestamps_are_the_same)."""
    assert_same_table(
        writer, reader, path, skip="_commit_timestamp", readChangeFeed="true", startingVersion=start
    )


def ids(rows: list[tuple]) -> list[int]:
    return sorted(r[0] for r in rows)


def write_versions(writer: Peer, path: str, feature: str, properties: str = "") -> list[int]:
    """Versions 0-5 of a table with ``feature``, all by ``writer``: create, insert, DELETE
    (a deletion vector where they are on), insert, UPDATE, insert. Returns the ids then
    in the table."""
    writer.sql(
        *create(path, feature, properties),
        insert(path, 0, 30),
        f"DELETE FROM {table(path)} WHERE id % 7 = 0",
        insert(path, 30, 60),
        f"UPDATE {table(path)} SET name = 'updated', amount = -amount WHERE id % 5 = 1",
        insert(path, 60, 70),
    )
    return [i for i in range(70) if i >= 30 or i % 7]


@pytest.mark.parametrize("feature", FEATURES)
def test_table_written_by_one_engine_reads_the_same_on_the_other(pair, feature, tmp_path):
    writer, reader = pair
    path = str(tmp_path / "t")
    expected = write_versions(writer, path, feature)
    rows = assert_same_table(writer, reader, path)
    assert ids(rows) == expected
    assert {r[2] for r in rows if r[0] % 5 == 1 and r[0] < 60} == {"updated"}
    # A filtered, projected read (partition pruning on a partitioned table) agrees too.
    query = f"SELECT id, name, st.b, m['k'] FROM {table(path)} WHERE part = 2 AND id > 20"
    assert sorted(reader.sql(query)) == sorted(writer.sql(query))
    assert_feature_in_log(path, feature)
    assert_same_history(writer, reader, path)
    if feature == "change_data_feed":
        assert_same_change_feed(writer, reader, path, start=0)


def assert_feature_in_log(path: str, feature: str) -> None:
    """The log shows the feature in use, so the writer took the feature's path."""
    actions = log_actions(path)
    metadata = [a["metaData"] for a in actions if "metaData" in a][-1]
    adds = [a["add"] for a in actions if "add" in a]
    if feature == "partitioned":
        assert metadata["partitionColumns"] == ["part"]
        assert all(set(a["partitionValues"]) == {"part"} for a in adds)
    if feature == "deletion_vectors":
        assert any(a.get("deletionVector") for a in adds), "no deletion vector was written"
    if feature == "change_data_feed":
        assert any("cdc" in a for a in actions), "no change data file was written"
    if feature == "column_mapping_name":
        fields = json.loads(metadata["schemaString"])["fields"]
        physical = [f["metadata"]["delta.columnMapping.physicalName"] for f in fields]
        assert all(p != f["name"] for p, f in zip(physical, fields, strict=True))


def merge(path: str) -> str:
    """Source ids 40..89 over a table holding 0..79: even matches updated, odd matches
    deleted, 80..89 inserted."""
    source = ROWS.format(start=40, stop=90)
    return (
        f"MERGE INTO {table(path)} t USING ({source}) s ON t.id = s.id"
        " WHEN MATCHED AND s.id % 2 = 0 THEN UPDATE SET name = 'merged', amount = s.amount + 1"
        " WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *"
    )


@pytest.mark.parametrize("feature", FEATURES)
def test_changes_by_the_other_engine_read_the_same_at_every_version(pair, feature, tmp_path):
    writer, other = pair
    path = str(tmp_path / "t")
    writer.sql(*create(path, feature), insert(path, 0, 50))  # versions 0, 1
    other.sql(insert(path, 50, 80))  # 2: an append
    other.sql(merge(path))  # 3
    other.sql(f"DELETE FROM {table(path)} WHERE id % 10 = 3")  # 4
    writer.sql(insert(path, 200, 210))  # 5: the first engine writes on top of the other's

    rows = assert_same_table(writer, other, path)
    kept = [i for i in range(80) if i < 40 or i % 2 == 0] + list(range(80, 90))
    assert ids(rows) == sorted([i for i in kept if i % 10 != 3] + list(range(200, 210)))
    assert {r[2] for r in rows if 40 <= r[0] < 80} == {"merged"}
    for version in range(6):  # time travel, to versions either engine wrote
        assert_same_table(writer, other, path, versionAsOf=version)
    assert_same_history(writer, other, path)
    assert_feature_in_log(path, feature)
    if feature == "change_data_feed":
        assert_same_change_feed(writer, other, path, start=1)


def history(spark, path: str) -> tuple[list[tuple], list[tuple], list[tuple]]:
    """The table's history, every column, as ``DESCRIBE HISTORY`` and
    ``DeltaTable.history()`` show it: the columns' names and types, and the rows by version."""
    if "DeltaSparkSessionExtension" in spark.conf.get("spark.sql.extensions", ""):
        from delta.tables import DeltaTable
    else:
        from headwater.delta.tables import DeltaTable
    found = spark.sql(f"DESCRIBE HISTORY {table(path)}")
    schema = [(f.name, f.dataType.simpleString()) for f in found.schema.fields]
    by_api = DeltaTable.forPath(spark, path).history().orderBy("version").collect()
    return schema, found.orderBy("version").collect(), by_api


def assert_same_history(writer: Peer, reader: Peer, path: str) -> None:
    """Both engines show the same history of the table: column for column, value for value
    (a commit's time included: the protocol's, see test_commit_times_are_the_same)."""
    theirs, ours = writer.call(history, path), reader.call(history, path)
    assert ours[0] == theirs[0], "the history's columns differ"
    names = [name for name, _ in theirs[0]]
    for shown in (1, 2):  # DESCRIBE HISTORY, DeltaTable.history()
        assert [r[0] for r in ours[shown]] == [r[0] for r in theirs[shown]]
        differ = [
            (row[0], name, mine, other)
            for row, their_row in zip(ours[shown], theirs[shown], strict=True)
            for name, mine, other in zip(names, row, their_row, strict=True)
            if mine != other
        ]
        assert not differ, f"(version, column, {reader}, {writer}): {differ}"


def checkpoints(path: str) -> list[int]:
    found = Path(path, "_delta_log").glob("*.checkpoint*.parquet")
    return sorted({int(p.name.split(".")[0]) for p in found})


def forget_commits_before(path: str, version: int) -> None:
    """Remove the JSON commits a checkpoint replaces (as the log's cleanup does), so a
    reader can only build the table from the checkpoint."""
    for commit in Path(path, "_delta_log").glob("*.json"):
        if int(commit.name.split(".")[0]) < version:
            commit.unlink()


@pytest.mark.parametrize("feature", FEATURES)
def test_checkpoint_written_by_one_engine_is_read_by_the_other(pair, feature, tmp_path):
    writer, other = pair
    path = str(tmp_path / "t")
    # Versions 0-5, a deletion vector among them where they are on.
    expected = write_versions(writer, path, feature, "'delta.checkpointInterval' = '4'")
    assert_feature_in_log(path, feature)
    (first,) = checkpoints(path)  # headwater's at version 3, delta-spark's at 4
    forget_commits_before(path, first)
    assert_same_table(writer, other, path)

    for start in range(100, 140, 10):  # versions 6-9: the other engine's checkpoint
        other.sql(insert(path, start, start + 10))
    second = max(checkpoints(path))
    assert second > first, f"{other} wrote no checkpoint"
    forget_commits_before(path, second)
    rows = assert_same_table(writer, other, path)
    assert ids(rows) == expected + list(range(100, 140))


def test_columns_delta_spark_renamed_and_dropped_read_the_same_on_headwater(engines, tmp_path):
    spark_side, ours = engines["delta-spark"], engines["headwater"]
    path = str(tmp_path / "t")
    spark_side.sql(
        *create(path, "column_mapping_name"),
        insert(path, 0, 40),  # 1
        f"ALTER TABLE {table(path)} RENAME COLUMN name TO label",  # 2
        f"ALTER TABLE {table(path)} DROP COLUMN amount",  # 3
        f"ALTER TABLE {table(path)} RENAME COLUMN st.b TO bee",  # 4
    )
    after = "SELECT id, part, name, price, day, ts, flag, arr, st, m FROM ({})"
    ours.sql(f"INSERT INTO {table(path)} " + after.format(ROWS.format(start=40, stop=60)))
    spark_side.sql(f"INSERT INTO {table(path)} " + after.format(ROWS.format(start=60, stop=70)))

    rows = assert_same_table(spark_side, ours, path)
    assert ids(rows) == list(range(70))
    schema = ours.read(path)[0]
    assert [c[0] for c in schema] == [
        "id",
        "part",
        "label",
        "price",
        "day",
        "ts",
        "flag",
        "arr",
        "st",
        "m",
    ]
    assert "bee" in schema[8][1]
    for version in range(7):
        assert_same_table(spark_side, ours, path, versionAsOf=version)


def jar_locations(spark) -> dict:
    jvm = spark.sparkContext._jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    source = loader.loadClass("io.delta.tables.DeltaTable").getProtectionDomain()
    return {
        "spark.jars": spark.conf.get("spark.jars", ""),
        "spark.jars.packages": spark.conf.get("spark.jars.packages", ""),
        "DeltaTable": source.getCodeSource().getLocation().getPath(),
    }


def test_delta_spark_takes_its_jars_from_the_cache(engines):
    from tests.jars import tier_jars

    found = engines["delta-spark"].call(jar_locations)
    assert found["spark.jars"].split(",") == tier_jars("delta-spark")
    assert found["spark.jars.packages"] == ""  # nothing resolved through Ivy
    assert found["DeltaTable"] in tier_jars("delta-spark")


def change_timestamps(spark, path: str) -> list[tuple]:
    feed = spark.read.format("delta").option("readChangeFeed", "true")
    rows = feed.option("startingVersion", 0).load(path)
    return rows.select("_commit_version", "_commit_timestamp").distinct().collect()


def commit_times_seen(spark, path: str, stamps: list[str]) -> tuple[list, list, list]:
    """The commits' times as the engine reads them: the change feed's, the history's, and
    the rows a read as of each of ``stamps`` finds."""
    feed = sorted(change_timestamps(spark, path))
    found = spark.sql(f"DESCRIBE HISTORY {table(path)}").select("version", "timestamp")
    travel = [
        spark.read.format("delta").option("timestampAsOf", stamp).load(path).count()
        for stamp in stamps
    ]
    return feed, found.orderBy("version").collect(), travel


def test_commit_times_are_the_same(pair, tmp_path):
    """The protocol's commit time is the commit file's modification time, made to increase
    with the version (a time going backwards becomes the previous one + 1 ms); the
    commitInfo's timestamp is the writer's clock before the file existed. Both engines
    stamp change rows, show history and travel in time by it."""
    writer, reader = pair
    path = str(tmp_path / "t")
    writer.sql(
        *create(path, "change_data_feed"),
        insert(path, 0, 10),
        f"DELETE FROM {table(path)} WHERE id < 3",
    )
    # As after a copy of the table: commit files younger than their commitInfo, and
    # version 2's older than version 1's (a clock set back).
    base = 1_900_000_000  # 2030-03-17 17:46:40 UTC
    for version, seconds in ((0, 0), (1, 10), (2, 5)):
        commit = Path(path, "_delta_log", f"{version:020d}.json")
        os.utime(commit, (base + seconds, base + seconds))
    moments = ["17:46:40", "17:46:49.999", "17:46:50", "17:46:50.001"]
    stamps = [f"2030-03-17 {moment}" for moment in moments]
    by_writer = writer.call(commit_times_seen, path, stamps)
    assert reader.call(commit_times_seen, path, stamps) == by_writer
    at = [dt.datetime(2030, 3, 17, 17, 46, 40), dt.datetime(2030, 3, 17, 17, 46, 50)]
    times = [at[0], at[1], at[1] + dt.timedelta(milliseconds=1)]
    assert by_writer[1] == list(enumerate(times))
    assert [ms for _, ms in by_writer[0]] == times[1:]  # version 0 changed no rows
    assert by_writer[2] == [0, 0, 10, 7]
