"""What every writer leaves in ``_delta_log``: one version per operation, named as
delta-spark names it, read back by another engine (delta-rs)."""

from __future__ import annotations

import json
import os

from deltalake import DeltaTable as RsTable

from headwater.delta.tables import DeltaTable


def _history(path: str) -> list[dict]:
    return list(reversed(RsTable(path).history()))


def test_a_merge_schema_append_is_one_version_with_its_new_schema(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    wider = spark.range(3, 5).selectExpr("id", "'new' AS note")
    wider.write.format("delta").mode("append").option("mergeSchema", "true").save(path)
    rs = RsTable(path)
    assert rs.version() == 1
    assert [f.name for f in rs.schema().fields] == ["id", "note"]
    with open(os.path.join(path, "_delta_log", f"{1:020d}.json")) as f:
        kinds = [next(iter(json.loads(line))) for line in f]
    assert kinds[0] == "commitInfo" and "metaData" in kinds and "add" in kinds
    assert _history(path)[1]["operation"] == "WRITE"


def test_each_operation_is_logged_under_delta_sparks_name(spark, tmp_path):
    path, src = str(tmp_path / "t"), str(tmp_path / "src")
    df = spark.range(20).selectExpr("id", "cast(id % 2 as int) AS k").repartition(4)
    df.write.format("delta").partitionBy("k").save(path)
    table = DeltaTable.forPath(spark, path)
    updates = spark.range(15, 25).selectExpr("id", "cast(id % 2 as int) AS k")
    (
        table.alias("t")
        .merge(updates.alias("s"), "t.id = s.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    table.update("id = 1", {"k": "1"})
    table.delete("id = 2")
    table.optimize().executeCompaction()
    spark.range(3).selectExpr("id + 100 AS id", "0 AS k").write.format("delta").save(src)
    (
        spark.readStream.format("delta")
        .load(src)
        .writeStream.format("delta")
        .option("checkpointLocation", str(tmp_path / "chk"))
        .trigger(availableNow=True)
        .start(path)
        .awaitTermination()
    )
    table.restoreToVersion(1)
    history = _history(path)
    assert [h["operation"] for h in history] == [
        "WRITE", "MERGE", "UPDATE", "DELETE", "OPTIMIZE", "STREAMING UPDATE", "RESTORE",
    ]  # fmt: skip
    merge = history[1]
    assert json.loads(merge["operationParameters"]["predicate"]) == ["t.id = s.id"]
    assert merge["operationMetrics"]["numTargetRowsInserted"] == "5"
    assert history[4]["isBlindAppend"] is False and history[4]["readVersion"] == 3
    stream = history[5]["operationParameters"]
    assert stream["outputMode"] == "Append" and stream["epochId"] == "0"
    assert stream["queryId"]  # the query's id, from its checkpoint
    assert json.loads(history[6]["operationParameters"]["version"]) == 1
    assert sorted(r.id for r in table.toDF().collect()) == list(range(25))
