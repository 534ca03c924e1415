"""``headwater.delta.tables.DeltaTable``: delta-spark's API and semantics."""

from __future__ import annotations

import os
import time

import pytest
from deltalake import DeltaTable as RsTable
from pyspark.sql import functions as F

from headwater.delta.tables import DeltaTable
from headwater.errors import DeltaError, TableNotFoundError


def _table(spark, path, n=10, parts=None):
    df = spark.range(n).selectExpr("id", "cast(id % 3 as int) as k", "concat('v', id) as v")
    w = df.write.format("delta")
    if parts:
        w = w.option("partitionBy", parts)
    w.save(path)
    return DeltaTable.forPath(spark, path)


def _rows(dt):
    return sorted(tuple(r) for r in dt.toDF().collect())


def test_for_path_for_name_is_delta_table_and_to_df(spark, tmp_path):
    path = str(tmp_path / "t")
    dt = _table(spark, path)
    assert DeltaTable.isDeltaTable(spark, path) and not DeltaTable.isDeltaTable(
        spark, str(tmp_path)
    )
    assert dt.toDF().count() == 10
    with pytest.raises(TableNotFoundError):
        DeltaTable.forPath(spark, str(tmp_path / "nope"))
    spark.range(3).write.saveAsTable("tables1.named")
    assert DeltaTable.forName(spark, "tables1.named").toDF().count() == 3


def test_delete_rewrites_only_touched_files_and_records_metrics(spark, tmp_path):
    path = str(tmp_path / "t")
    dt = _table(spark, path, 30, parts="k")
    before = {f for f in RsTable(path).file_uris()}
    dt.delete("id = 4")  # one row, in partition k=1
    after = set(RsTable(path).file_uris())
    removed = before - after
    assert removed and all("/k=1/" in p for p in removed)
    assert {r[0] for r in _rows(dt)} == set(range(30)) - {4}
    h = dt.history(1).first()
    assert h.operation == "DELETE" and h.operationMetrics["numDeletedRows"] == "1"
    dt.delete(F.col("k") == 2)  # partition-only: files dropped, none rewritten
    assert RsTable(path).history(1)[0]["operationMetrics"]["numAddedFiles"] == "0"
    assert all(r[1] != 2 for r in _rows(dt))
    dt.delete()
    assert dt.toDF().count() == 0


def test_update_with_condition_and_null_safe_semantics(spark, tmp_path):
    path = str(tmp_path / "t")
    dt = _table(spark, path, 6)
    spark.createDataFrame([(100, None, None)], "id long, k int, v string").write.format(
        "delta"
    ).mode("append").save(path)
    dt.update("k = 1", {"v": "upper(v)", "id": F.col("id") * 10})
    rows = _rows(dt)
    assert (10, 1, "V1") in rows and (40, 1, "V4") in rows and (100, None, None) in rows
    dt.update(condition=F.col("k").isNull(), set={"v": F.lit("was null")})
    assert (100, None, "was null") in _rows(dt)
    assert dt.history(1).first().operationMetrics["numUpdatedRows"] == "1"


def test_merge_with_every_clause_kind(spark, tmp_path):
    path = str(tmp_path / "t")
    dt = _table(spark, path, 6)  # ids 0..5
    source = spark.createDataFrame(
        [(1, 1, "one"), (2, 2, "drop"), (10, 1, "ten"), (11, 2, "skip-insert")],
        "id long, k int, v string",
    )
    result = (
        dt.alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedDelete("s.v = 'drop'")
        .whenMatchedUpdate(set={"v": "s.v"})
        .whenNotMatchedInsert(
            "s.v != 'skip-insert'", values={"id": "s.id", "k": "s.k", "v": "concat(s.v, '!')"}
        )
        .whenNotMatchedBySourceUpdate("t.id = 5", set={"v": "'orphan'"})
        .whenNotMatchedBySourceDelete("t.id = 0")
        .execute()
        .first()
    )
    assert _rows(dt) == [
        (1, 1, "one"),
        (3, 0, "v3"),
        (4, 1, "v4"),
        (5, 2, "orphan"),
        (10, 1, "ten!"),
    ]
    assert (result.num_inserted_rows, result.num_updated_rows, result.num_deleted_rows) == (1, 2, 2)
    m = dt.history(1).first().operationMetrics
    assert m["numTargetRowsInserted"] == "1" and m["numTargetRowsMatchedDeleted"] == "1"
    assert m["numTargetRowsNotMatchedBySourceDeleted"] == "1" and m["numSourceRows"] == "4"


def test_merge_update_all_insert_all_and_first_matching_clause_wins(spark, tmp_path):
    path = str(tmp_path / "t")
    dt = _table(spark, path, 3)
    source = spark.createDataFrame(
        [(0, 7, "a"), (1, 8, "b"), (9, 9, "c")], "id long, k int, v string"
    )
    (
        dt.alias("t").merge(source.alias("s"), "t.id = s.id")
        .whenMatchedUpdate("s.k = 7", set={"v": "'first'"})
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )  # fmt: skip
    assert _rows(dt) == [(0, 0, "first"), (1, 8, "b"), (2, 2, "v2"), (9, 9, "c")]


def test_merge_refuses_several_source_rows_for_one_target_row(spark, tmp_path):
    path = str(tmp_path / "t")
    dt = _table(spark, path, 3)
    source = spark.createDataFrame([(1, 0, "x"), (1, 0, "y")], "id long, k int, v string")
    with pytest.raises(DeltaError, match="MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW"):
        dt.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute()
    assert RsTable(path).version() == 0


def test_merge_with_schema_evolution_adds_source_columns(spark, tmp_path):
    path = str(tmp_path / "t")
    dt = _table(spark, path, 2)
    source = spark.createDataFrame(
        [(1, 1, "u", "new"), (5, 2, "i", "ins")], "id long, k int, v string, extra string"
    )
    dt.alias("t").merge(
        source.alias("s"), "t.id = s.id"
    ).withSchemaEvolution().whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    rows = sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())
    assert rows == [(0, 0, "v0", None), (1, 1, "u", "new"), (5, 2, "i", "ins")]


def test_insert_only_merge_rewrites_no_file_and_null_safe_condition(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.createDataFrame([(1, None), (2, "b")], "id long, key string").write.format("delta").save(
        path
    )
    dt = DeltaTable.forPath(spark, path)
    source = spark.createDataFrame([(3, None), (4, "z")], "id long, key string")
    dt.alias("t").merge(source.alias("s"), "t.key <=> s.key").whenNotMatchedInsertAll().execute()
    assert sorted(tuple(r) for r in dt.toDF().collect()) == [(1, None), (2, "b"), (4, "z")]
    assert dt.history(1).first().operationMetrics["numTargetFilesRemoved"] == "0"


def test_merge_touching_one_percent_rewrites_only_affected_files(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(2000).selectExpr("id", "cast(id % 20 as int) as k", "'x' as v").write.format(
        "delta"
    ).option("partitionBy", "k").save(path)
    dt = DeltaTable.forPath(spark, path)
    files_before = len(RsTable(path).file_uris())
    source = spark.range(0, 2000, 100).selectExpr(
        "id", "cast(id % 20 as int) as k", "'changed' as v"
    )  # all k=0
    dt.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute()
    m = dt.history(1).first().operationMetrics
    assert m["numTargetRowsUpdated"] == "20"
    assert 0 < int(m["numTargetFilesRemoved"]) < files_before / 10
    assert dt.toDF().where("v = 'changed'").count() == 20


def test_optimize_compacts_small_files_without_changing_data(spark, tmp_path):
    path = str(tmp_path / "t")
    for i in range(4):
        spark.range(i * 10, i * 10 + 10).selectExpr("id", "cast(id % 2 as int) as k").write.format(
            "delta"
        ).mode("append").option("partitionBy", "k").save(path)
    dt = DeltaTable.forPath(spark, path)
    before = sorted(tuple(r) for r in dt.toDF().collect())
    n_before = len(RsTable(path).file_uris())
    out = dt.optimize().where("k = 0").executeCompaction().first()
    assert out.metrics["numFilesAdded"] >= 1
    files = RsTable(path).file_uris()
    assert len(files) < n_before and sum("/k=0/" in f for f in files) == 1
    assert sorted(tuple(r) for r in dt.toDF().collect()) == before
    assert dt.history(1).first().operation == "OPTIMIZE"


def test_vacuum_keeps_files_within_retention_and_refuses_short_retention(spark, tmp_path):
    path = str(tmp_path / "t")
    dt = _table(spark, path, 5)
    spark.range(1).selectExpr("id", "1 as k", "'a' as v").write.format("delta").mode(
        "overwrite"
    ).save(path)
    with pytest.raises(DeltaError, match="RETENTION_PERIOD_TOO_SHORT"):
        dt.vacuum(0)
    files = sorted(os.listdir(path))
    assert dt.vacuum().collect() == []  # delta-spark's result: an empty DataFrame
    assert sorted(os.listdir(path)) == files  # within 7 days: nothing goes
    assert spark.read.format("delta").option("versionAsOf", 0).load(path).count() == 5
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        orphan = os.path.join(path, "part-orphan.parquet")
        with open(orphan, "wb") as f:
            f.write(b"x")
        old = time.time() - 3600
        os.utime(orphan, (old, old))
        dt.vacuum(0)
        assert not os.path.exists(orphan)
        end = dt.history(1).collect()[0]
        assert end.operation == "VACUUM END" and int(end.operationMetrics["numDeletedFiles"]) >= 1
        assert dt.toDF().count() == 1
    finally:
        spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "true")


def test_restore_to_version_and_timestamp(spark, tmp_path):
    path = str(tmp_path / "t")
    dt = _table(spark, path, 5)
    dt.delete("id < 3")
    dt.restoreToVersion(0)
    assert dt.toDF().count() == 5
    ts = dt.history().where("version = 1").first().timestamp
    dt.restoreToTimestamp(ts.isoformat())
    assert dt.toDF().count() == 2


def test_create_builder_and_detail(spark, tmp_path):
    dt = (
        DeltaTable.create(spark)
        .tableName("tables2.events")
        .addColumn("id", "bigint")
        .addColumn("day", "date")
        .partitionedBy("day")
        .property("delta.appendOnly", "false")
        .execute()
    )
    d = dt.detail().first()
    assert (
        d.partitionColumns == ["day"]
        and d.numFiles == 0
        and d.properties["delta.appendOnly"] == "false"
    )
    again = (
        DeltaTable.createIfNotExists(spark)
        .tableName("tables2.events")
        .addColumn("id", "bigint")
        .execute()
    )
    assert again.toDF().columns == ["id", "day"]
    at = DeltaTable.create(spark).location(str(tmp_path / "p")).addColumn("x", "int").execute()
    assert at.toDF().columns == ["x"]


def test_generate_symlink_manifest_lists_each_partitions_live_files(spark, tmp_path):
    path = tmp_path / "m"
    spark.createDataFrame([(i, f"p{i % 3}") for i in range(9)], "id long, p string").write.format(
        "delta"
    ).partitionBy("p").save(str(path))
    table = DeltaTable.forPath(spark, str(path))
    table.generate("symlink_format_manifest")
    live = {uri for uri in RsTable(str(path)).file_uris()}
    listed = set()
    for part in ("p0", "p1", "p2"):
        manifest = path / "_symlink_format_manifest" / f"p={part}" / "manifest"
        lines = manifest.read_text().split()
        assert lines and all(f"/p={part}/" in line for line in lines)
        listed |= {line.removeprefix("file:") for line in lines}
    assert listed == {uri.removeprefix("file://") for uri in live}
    table.delete("p = 'p1'")
    table.generate("symlink_format_manifest")
    assert not (path / "_symlink_format_manifest" / "p=p1" / "manifest").exists()
    with pytest.raises(Exception, match="symlink_format_manifest"):
        table.generate("presto")


def test_dml_on_a_table_the_native_scan_cannot_describe_rewrites_only_touched_files(
    spark, tmp_path
):
    """Timestamp partitions are read by the Python path; DML finds files through it too."""
    from headwater.delta.log.delta_log import DeltaLog
    from headwater.delta.read.batch import native_eligible

    path = str(tmp_path / "ts")
    df = spark.range(12).selectExpr(
        "id", "timestamp_seconds(1700000000 + (id % 3) * 3600) AS hour", "'v' AS v"
    )
    df.write.format("delta").partitionBy("hour").save(path)
    assert not native_eligible(DeltaLog(path).snapshot())
    table = DeltaTable.forPath(spark, path)
    files_before = set(RsTable(path).file_uris())

    table.update("id = 4", {"v": "'four'"})
    after_update = set(RsTable(path).file_uris())
    assert len(files_before - after_update) == 1  # only the file holding id 4

    table.delete("id = 5")
    source = spark.createDataFrame([(0, "zero"), (100, "new")], "id long, v string")
    (
        table.alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedUpdate(set={"v": "s.v"})
        .whenNotMatchedInsert(
            values={"id": "s.id", "v": "s.v", "hour": "timestamp_seconds(1700000000)"}
        )
        .execute()
    )
    rows = {r.id: r.v for r in table.toDF().collect()}
    assert rows[4] == "four" and rows[0] == "zero" and rows[100] == "new"
    assert 5 not in rows and len(rows) == 12
