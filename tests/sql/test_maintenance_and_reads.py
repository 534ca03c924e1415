"""DESCRIBE HISTORY/DETAIL, OPTIMIZE, VACUUM, RESTORE, time travel and table functions."""

from __future__ import annotations

import datetime as dt
import json
import os

import pytest
from deltalake import DeltaTable as RsTable

import headwater
from headwater.delta.log.delta_log import DeltaLog
from headwater.sql import SqlError


def q(spark, text):
    return headwater.sql(spark, text)


def rows(spark, text):
    return [tuple(r) for r in q(spark, text).collect()]


def ops(path, n=None):
    return [h.get("headwaterOperation") or h["operation"] for h in RsTable(path).history(n)]


def _commit_time(path: str, version: int) -> str:
    ms = next(h["timestamp"] for h in DeltaLog(path).history() if h["version"] == version)
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[
        :-3
    ]


@pytest.fixture(scope="module")
def versions(spark, tmp_path_factory):
    """A partitioned table by path with versions 0..3 (ids 0-1, +2-3, +4-5, +6-7), small files."""
    path = str(tmp_path_factory.mktemp("sqlm") / "t")
    for v in range(4):
        spark.range(2 * v, 2 * v + 2).coalesce(1).selectExpr("id", "id % 2 AS k").write.format(
            "delta"
        ).mode("append").option("partitionBy", "k").save(path)
    return path


def test_describe_history_and_detail(spark, versions):
    hist = q(spark, f"DESCRIBE HISTORY delta.`{versions}`").collect()
    assert [r.version for r in hist] == [3, 2, 1, 0]
    assert [r.operation for r in hist][:3] == ["WRITE", "WRITE", "WRITE"]
    assert rows(spark, f"DESC HISTORY delta.`{versions}` LIMIT 2")[1][0] == 2
    detail = q(spark, f"DESCRIBE DETAIL delta.`{versions}`").first()
    assert (detail.format, detail.partitionColumns, detail.numFiles) == ("delta", ["k"], 8)
    assert detail.location == f"file:{versions}"  # qualified, as delta-spark gives it


def test_time_travel_select(spark, versions):
    def ids(text):
        return sorted(r[0] for r in q(spark, text).collect())

    assert ids(f"SELECT id FROM delta.`{versions}` VERSION AS OF 1") == [0, 1, 2, 3]
    assert ids(f"SELECT id FROM delta.`{versions}`@v0") == [0, 1]
    when = _commit_time(versions, 2)
    assert ids(f"SELECT x.id FROM delta.`{versions}` TIMESTAMP AS OF '{when}' AS x") == list(
        range(6)
    )
    assert ids(f"SELECT id FROM delta.`{versions}` FOR VERSION AS OF 0 WHERE k = 1") == [1]
    stamp = when.replace("-", "").replace(" ", "").replace(":", "").replace(".", "")
    assert ids(f"SELECT id FROM delta.`{versions}`@{stamp}") == list(range(6))
    # both sides of a join at different versions, and the current version
    joined = rows(
        spark,
        f"""SELECT count(*) FROM delta.`{versions}` VERSION AS OF 0 a
            JOIN delta.`{versions}` b ON a.id = b.id""",
    )
    assert joined == [(2,)]
    # a named table, qualified by its own name after the rewrite
    spark.read.format("delta").load(versions).write.saveAsTable("sqlm.named")
    spark.range(10, 11).selectExpr("id", "id % 2 AS k").write.mode("append").saveAsTable(
        "sqlm.named"
    )
    assert ids("SELECT named.id FROM sqlm.named VERSION AS OF 0 WHERE named.id < 3") == [0, 1, 2]
    # after the latest commit: refused, as delta-spark refuses it
    with pytest.raises(SqlError) as after:
        q(spark, "SELECT id FROM sqlm.named TIMESTAMP AS OF current_timestamp()")
    assert after.value.getErrorClass() == "DELTA_TIMESTAMP_GREATER_THAN_COMMIT"
    with pytest.raises(SqlError, match="version number"):
        q(spark, "SELECT * FROM sqlm.named VERSION AS OF 'x'")


def test_optimize_with_and_without_where(spark, tmp_path):
    path = str(tmp_path / "t")
    for i in range(3):
        spark.range(i * 4, i * 4 + 4).coalesce(1).selectExpr("id", "id % 2 AS k").write.format(
            "delta"
        ).mode("append").option("partitionBy", "k").save(path)
    first = q(spark, f"OPTIMIZE delta.`{path}` WHERE k = 0").first()
    assert (first.metrics.numFilesRemoved, first.metrics.numFilesAdded) == (3, 1)
    second = q(spark, f"OPTIMIZE delta.`{path}`").first()
    assert (second.metrics.numFilesRemoved, second.metrics.numFilesAdded) == (3, 1)
    assert ops(path, 2) == ["OPTIMIZE", "OPTIMIZE"]
    assert sorted(r[0] for r in spark.read.format("delta").load(path).collect()) == list(range(12))
    with pytest.raises(SqlError, match="non-partition column 'id'"):
        q(spark, f"OPTIMIZE delta.`{path}` WHERE id > 3")
    with pytest.raises(SqlError, match="DELTA_ZORDERING_ON_PARTITION_COLUMN"):
        q(spark, f"OPTIMIZE delta.`{path}` ZORDER BY (k)")


def test_vacuum_retain_and_dry_run(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(4).write.format("delta").save(path)
    unused = {os.path.basename(u) for u in RsTable(path).file_uris()}
    spark.range(2).write.format("delta").mode("overwrite").save(path)  # the first files are unused
    live = set(RsTable(path).file_uris())
    with pytest.raises(SqlError, match="RETENTION_PERIOD_TOO_SHORT"):
        q(spark, f"VACUUM delta.`{path}` RETAIN 0 HOURS")
    q(spark, "SET spark.databricks.delta.retentionDurationCheck.enabled = false")
    try:
        kept = rows(spark, f"VACUUM delta.`{path}` RETAIN 1000 HOURS DRY RUN")
        assert kept == []  # nothing is that old
        dry = [r[0] for r in q(spark, f"VACUUM delta.`{path}` RETAIN 0 HOURS DRY RUN").collect()]
        assert {os.path.basename(p) for p in dry} == unused
        assert all(os.path.exists(os.path.join(path, os.path.basename(p))) for p in dry)
        result = [r[0] for r in q(spark, f"VACUUM delta.`{path}` RETAIN 0 HOURS").collect()]
        assert result == [f"file:{path}"]  # the table's qualified path, as delta-spark's
        assert not any(os.path.exists(os.path.join(path, os.path.basename(p))) for p in dry)
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    assert set(RsTable(path).file_uris()) == live
    assert spark.read.format("delta").load(path).count() == 2


def test_restore_to_version_and_timestamp(spark, tmp_path):
    path = str(tmp_path / "t")
    for i in range(3):
        spark.range(i + 1).coalesce(1).write.format("delta").mode("overwrite").save(path)
    result = q(spark, f"RESTORE TABLE delta.`{path}` TO VERSION AS OF 0")
    assert result.columns == [  # delta-spark's, in its order
        "table_size_after_restore",
        "num_of_files_after_restore",
        "num_removed_files",
        "num_restored_files",
        "removed_files_size",
        "restored_files_size",
    ]
    metrics = result.first().asDict()
    assert metrics["num_restored_files"] == metrics["num_of_files_after_restore"] == 1
    assert metrics["num_removed_files"] >= 1 and metrics["removed_files_size"] > 0
    assert metrics["restored_files_size"] == metrics["table_size_after_restore"] > 0
    assert spark.read.format("delta").load(path).count() == 1
    q(spark, f"RESTORE delta.`{path}` TO TIMESTAMP AS OF '{_commit_time(path, 1)}'")
    assert spark.read.format("delta").load(path).count() == 2
    assert ops(path, 2) == ["RESTORE", "RESTORE"]
    with pytest.raises(SqlError, match="VERSION AS OF or TIMESTAMP AS OF"):
        q(spark, f"RESTORE delta.`{path}` TO 3")


def test_read_files(spark, tmp_path):
    land = tmp_path / "land"
    land.mkdir()
    (land / "a.json").write_text('{"id": 1, "name": "x"}\n{"id": 2, "name": "y"}\n')
    (land / "b.json").write_text(json.dumps({"id": 3, "name": "z", "extra": True}) + "\n")
    csv = tmp_path / "csv"
    csv.mkdir()
    (csv / "p.csv").write_text("id;amount\n1;2.5\n2;4.0\n")
    got = rows(
        spark, f"SELECT id, name, extra FROM read_files('{land}', format => 'json') ORDER BY id"
    )
    assert got == [(1, "x", None), (2, "y", None), (3, "z", True)]
    # format from the extension; CSV columns typed; reader options passed through
    typed = q(
        spark, f"SELECT * FROM read_files('{csv}', header => true, sep => ';') AS r WHERE r.id > 1"
    )
    assert [(f.name, f.dataType.simpleString()) for f in typed.schema] == [
        ("id", "int"),
        ("amount", "double"),
        ("_rescued_data", "string"),
    ]
    assert [tuple(r) for r in typed.collect()] == [(2, 4.0, None)]
    with pytest.raises(SqlError, match="format =>"):
        q(spark, f"SELECT * FROM read_files('{tmp_path}/nothing-here')")
    with pytest.raises(SqlError, match="literals"):
        q(spark, f"SELECT * FROM read_files('{land}', format => lower('JSON'))")


def test_cloud_files_state(spark, tmp_path):
    land, ckpt = tmp_path / "land", str(tmp_path / "ckpt")
    land.mkdir()
    (land / "one.json").write_text('{"a": 1}\n')
    (land / "two.json").write_text('{"a": 2}\n')
    stream = (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaLocation", ckpt)
        .load(str(land))
    )
    stream.writeStream.format("delta").option("checkpointLocation", ckpt).trigger(
        availableNow=True
    ).start(str(tmp_path / "out")).awaitTermination()
    state = q(
        spark, f"SELECT path, size, commit_time FROM cloud_files_state('{ckpt}') ORDER BY path"
    ).collect()
    assert [os.path.basename(r.path) for r in state] == ["one.json", "two.json"]
    assert all(r.size > 0 and r.commit_time is not None for r in state)
    with pytest.raises(SqlError, match="No Auto Loader file state"):
        q(spark, f"SELECT * FROM cloud_files_state('{tmp_path}')")


def test_table_changes(spark):
    q(
        spark,
        "CREATE TABLE sqlm.cdf (id INT, v STRING) TBLPROPERTIES (delta.enableChangeDataFeed = true)",
    )
    q(spark, "INSERT INTO sqlm.cdf VALUES (1, 'a'), (2, 'b')")
    q(spark, "UPDATE sqlm.cdf SET v = 'B' WHERE id = 2")
    try:
        changes = q(
            spark,
            "SELECT id, v, _change_type, _commit_version FROM table_changes('sqlm.cdf', 1, 2) "
            "ORDER BY _commit_version, id, _change_type",
        ).collect()
    except SqlError as e:
        if "not supported" in str(e).lower() or "unknown option" in str(e).lower():
            pytest.xfail(f"CDF in progress: {e.reason}")
        raise
    assert [tuple(r) for r in changes] == [
        (1, "a", "insert", 1),
        (2, "b", "insert", 1),
        (2, "B", "update_postimage", 2),
        (2, "b", "update_preimage", 2),
    ]
