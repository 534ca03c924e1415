"""``writeStream...toTable(name)`` creates the table when the query starts, as Spark does:
``spark.table(name)`` right after ``start`` is an empty frame of the stream's schema (and
its partitioning), a restart finds the table there, and every row lands once."""

from __future__ import annotations

import json
from pathlib import Path

from deltalake import DeltaTable as RsTable


def _land(folder: Path, name: str, rows: list[dict]) -> None:
    (folder / name).write_text("\n".join(json.dumps(r) for r in rows))


def test_to_table_creates_the_table_at_start(spark, tmp_path):
    landing = tmp_path / "landing"
    landing.mkdir()
    query = (
        spark.readStream.schema("id long, s string")
        .json(str(landing))
        .writeStream.option("checkpointLocation", str(tmp_path / "chk"))
        .toTable("stream_plain_at_start")
    )
    try:
        created = spark.table("stream_plain_at_start")  # before any micro-batch
        assert created.count() == 0 and created.columns == ["id", "s"]
    finally:
        query.stop()


def test_partitioned_to_table_creates_the_table_at_start_and_restarts(spark, tmp_path):
    landing = tmp_path / "landing"
    landing.mkdir()
    checkpoint = str(tmp_path / "chk")

    def start(method: str):
        writer = (
            spark.readStream.schema("id long, s string")
            .json(str(landing))
            .writeStream.option("checkpointLocation", checkpoint)
            .partitionBy("s")
        )
        return getattr(writer, method)("stream_created_at_start")

    query = start("toTable")
    try:
        created = spark.table("stream_created_at_start")  # before any micro-batch
        assert created.count() == 0
        assert [(f.name, f.dataType.simpleString()) for f in created.schema] == [
            ("id", "bigint"),
            ("s", "string"),
        ]
        location = spark.sql("DESCRIBE DETAIL stream_created_at_start").first()["location"]
        assert RsTable(location).metadata().partition_columns == ["s"]
        (created_at,) = RsTable(location).history()  # as delta-spark's toTable commits it
        assert (created_at["operation"], created_at["isBlindAppend"]) == ("CREATE TABLE", True)
        assert created_at["operationParameters"]["partitionBy"] == '["s"]'
        _land(landing, "a.json", [{"id": 1, "s": "x"}, {"id": 2, "s": "y"}])
        query.processAllAvailable()
    finally:
        query.stop()
    query = start("table")  # the seed notes' spelling; the table is already there
    try:
        _land(landing, "b.json", [{"id": 3, "s": "x"}])
        query.processAllAvailable()
    finally:
        query.stop()
    ids = sorted(r.id for r in spark.table("stream_created_at_start").collect())
    assert ids == [1, 2, 3]


def test_foreach_batch_replaces_the_delta_format_as_in_spark(spark, tmp_path):
    """``writeStream.format("delta").foreachBatch(f).start()``: Spark runs ``f`` and writes
    no Delta table (no path needed), as the platform's merge examples write it."""
    landing = tmp_path / "landing"
    landing.mkdir()
    _land(landing, "a.json", [{"id": 1}, {"id": 2}])
    seen: list[int] = []
    query = (
        spark.readStream.schema("id long")
        .json(str(landing))
        .writeStream.format("delta")
        .foreachBatch(lambda df, _: seen.extend(r.id for r in df.collect()))
        .option("checkpointLocation", str(tmp_path / "chk"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert sorted(seen) == [1, 2]
