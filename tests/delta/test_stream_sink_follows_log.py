"""The streaming ``delta`` sink reads the table's log once and then follows it: a batch
applies the commits made since the previous one instead of replaying the log from its
checkpoint (which costs more with every commit until the next checkpoint), and still sees
every commit other writers made, so its exactly-once check and schema stay right."""

from __future__ import annotations

import shutil

from deltalake import DeltaTable
from pyspark.sql import functions as F

from headwater.delta.log.delta_log import DeltaLog
from headwater.delta.write.sink import DeltaStreamSink


def _batch(spark, start, end):
    return spark.range(start, end).withColumn("v", F.lit("x"))


def test_batches_follow_the_log_and_see_other_writers(spark, tmp_path, monkeypatch):
    dst = str(tmp_path / "dst")
    sink = DeltaStreamSink(dst, str(tmp_path / "ck"), "append")
    sink(_batch(spark, 0, 4), 0)  # creates the table: the log's one full load

    loads = []
    full_load = DeltaLog.snapshot

    def counted(self, *args, **kwargs):
        loads.append(self.root)
        return full_load(self, *args, **kwargs)

    def batch(start, end, batch_id):
        with monkeypatch.context() as patched:  # the sink's loads only
            patched.setattr(DeltaLog, "snapshot", counted)
            sink(_batch(spark, start, end), batch_id)

    batch(4, 8, 1)
    # Another writer between batches: a wider schema and rows of its own.
    spark.range(100, 102).withColumn("v", F.lit("y")).withColumn("w", F.lit(1)).write.format(
        "delta"
    ).mode("append").option("mergeSchema", "true").save(dst)
    batch(8, 12, 2)
    batch(8, 12, 2)  # batch 2 run again after a crash: skipped
    assert len(loads) == 1  # the table batch 0 created, loaded by batch 1, then followed

    table = spark.read.format("delta").load(dst)
    assert table.columns == ["id", "v", "w"]
    assert sorted(r.id for r in table.collect()) == [*range(12), 100, 101]
    assert DeltaTable(dst).version() == 3


def test_a_table_written_anew_under_the_sink_is_loaded_afresh(spark, tmp_path):
    dst = str(tmp_path / "dst")
    sink = DeltaStreamSink(dst, str(tmp_path / "ck"), "append")
    for batch_id in range(3):
        sink(_batch(spark, batch_id * 4, batch_id * 4 + 4), batch_id)
    shutil.rmtree(dst)  # the table dropped and created again, shorter than followed
    _batch(spark, 50, 52).write.format("delta").save(dst)

    sink(_batch(spark, 12, 16), 3)
    ids = sorted(r.id for r in spark.read.format("delta").load(dst).collect())
    assert ids == [*range(12, 16), 50, 51]
    assert DeltaTable(dst).version() == 1
