"""Delta tables on ``s3://``: what works locally works on the object store."""

from __future__ import annotations

import os

import pytest

from headwater import storage
from headwater.delta.tables import DeltaTable


def rows(df, *cols):
    return sorted(tuple(r) for r in df.select(*cols).collect())


def test_batch_write_append_and_time_travel_on_s3(s3_spark, s3_root, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a write that mistook the URI for a local path lands here
    spark, path = s3_spark, f"{s3_root}/events"
    df = spark.range(100).selectExpr("id", "id % 4 AS p", "CAST(id AS STRING) AS s")
    df.write.format("delta").partitionBy("p").save(path)
    spark.range(100, 110).selectExpr("id", "id % 4 AS p", "'late' AS s").write.format("delta").mode(
        "append"
    ).save(path)

    assert spark.read.format("delta").load(path).count() == 110
    assert spark.read.format("delta").option("versionAsOf", 0).load(path).count() == 100
    by_p = spark.read.format("delta").load(path).groupBy("p").count()
    assert rows(by_p, "p", "count") == [(0, 28), (1, 28), (2, 27), (3, 27)]
    files = [f.path for f in storage.list_files(path)]
    assert all(f.startswith(path + "/") for f in files)
    assert any("/p=3/" in f and f.endswith(".parquet") for f in files)
    assert any(f.endswith("_delta_log/00000000000000000001.json") for f in files)
    assert os.listdir(tmp_path) == []  # nothing written locally
    assert [h.operation for h in DeltaTable.forPath(spark, path).history().collect()] == [
        "WRITE",
        "WRITE",
    ]


def test_merge_update_delete_on_s3(s3_spark, s3_root):
    spark, path = s3_spark, f"{s3_root}/dim"
    spark.range(50).selectExpr("id", "'v0' AS v").write.format("delta").save(path)
    table = DeltaTable.forPath(spark, path)
    table.delete("id >= 40")
    table.update("id < 5", {"v": "'updated'"})
    source = spark.range(35, 45).selectExpr("id", "'merged' AS v")
    (
        table.alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    got = dict(rows(spark.read.format("delta").load(path), "id", "v"))
    assert len(got) == 45
    assert got[0] == "updated" and got[10] == "v0" and got[36] == "merged" and got[44] == "merged"
    assert [h.operation for h in table.history().collect()][:3] == ["MERGE", "UPDATE", "DELETE"]
    assert spark.read.format("delta").option("versionAsOf", 1).load(path).count() == 40


def test_sql_on_a_table_at_an_s3_location(s3_spark, s3_root):
    spark, path = s3_spark, f"{s3_root}/sql"
    spark.sql(f"CREATE TABLE s3_sql (id BIGINT, name STRING) USING delta LOCATION '{path}'")
    try:
        spark.sql("INSERT INTO s3_sql VALUES (1, 'a'), (2, 'b')")
        spark.sql("UPDATE s3_sql SET name = 'B' WHERE id = 2")
        assert rows(spark.table("s3_sql"), "id", "name") == [(1, "a"), (2, "B")]
        assert DeltaTable.isDeltaTable(spark, path)
    finally:
        spark.sql("DROP TABLE IF EXISTS s3_sql")


def test_stream_from_s3_table_into_s3_table_exactly_once(s3_spark, s3_root, tmp_path):
    spark = s3_spark
    source, target = f"{s3_root}/source", f"{s3_root}/target"
    checkpoint = str(tmp_path / "checkpoint")  # Spark's own checkpoint needs a Hadoop filesystem
    spark.range(10).write.format("delta").save(source)

    def run() -> None:
        (
            spark.readStream.format("delta")
            .load(source)
            .writeStream.format("delta")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start(target)
            .awaitTermination()
        )

    run()
    spark.range(10, 15).write.format("delta").mode("append").save(source)
    run()
    run()  # nothing new: nothing written twice
    assert rows(spark.read.format("delta").load(target), "id") == [(i,) for i in range(15)]


def test_bad_credentials_are_a_named_error(s3_spark, s3_server, s3_root):
    from headwater.storage import settings

    bucket = "headwater-denied"
    settings.configure(
        settings.S3Settings(endpoint=s3_server.endpoint, access_key="x", secret_key="y"), bucket
    )
    with pytest.raises(Exception, match=r"(?i)denied|forbidden|signature|credentials|access"):
        s3_spark.range(3).write.format("delta").save(f"s3://{bucket}/t")


def test_for_path_hadoop_conf_configures_the_tables_bucket(s3_spark, s3_server, s3_root):
    """Keys given only to ``forPath`` reach the log, the driver and the executors."""
    from headwater.storage import settings

    path = f"{s3_root}/keys"
    s3_spark.range(7).write.format("delta").save(path)
    right = settings.for_bucket(s3_server.bucket)
    wrong = settings.S3Settings(endpoint=s3_server.endpoint, access_key="x", secret_key="y")
    settings.configure(wrong, s3_server.bucket)
    try:
        with pytest.raises(Exception, match=r"(?i)access key|denied|forbidden"):
            s3_spark.read.format("delta").load(path).count()
        conf = {
            "fs.s3a.endpoint": s3_server.endpoint,
            "fs.s3a.access.key": s3_server.access_key,
            "fs.s3a.secret.key": s3_server.secret_key,
        }
        table = DeltaTable.forPath(s3_spark, path, conf)
        assert table.toDF().count() == 7
        table.delete("id < 2")
        assert s3_spark.read.format("delta").load(path).count() == 5
    finally:
        settings.configure(right, s3_server.bucket)
