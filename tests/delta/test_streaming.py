"""The streaming ``delta`` sink and source: triggers, output modes, options, exactly-once."""

from __future__ import annotations

import json
import os
import time

import pytest
from deltalake import DeltaTable
from pyspark.sql import functions as F
from pyspark.sql.utils import StreamingQueryException

from headwater.delta.write.sink import app_id_for
from headwater.errors import OptionError


def _append(spark, path, start, end, **kw):
    writer = (
        spark.range(start, end).selectExpr("id", "id % 3 as k").write.format("delta").mode("append")
    )
    for k, v in kw.items():
        writer = writer.option(k, v)
    writer.save(path)


def _ids(spark, path):
    return sorted(r.id for r in spark.read.format("delta").load(path).collect())


def _stream(spark, src, dst, ckpt, trigger=None, **options):
    reader = spark.readStream.format("delta")
    for k, v in options.items():
        reader = reader.option(k, v)
    writer = reader.load(src).writeStream.format("delta").option("checkpointLocation", ckpt)
    if trigger:
        writer = writer.trigger(**trigger)
    return writer.start(dst)


@pytest.fixture
def paths(tmp_path):
    return str(tmp_path / "src"), str(tmp_path / "dst"), str(tmp_path / "ckpt")


def test_available_now_delivers_snapshot_then_later_appends_once(spark, paths):
    src, dst, ckpt = paths
    _append(spark, src, 0, 10)
    _append(spark, src, 10, 20)
    q = _stream(spark, src, dst, ckpt, {"availableNow": True}, maxFilesPerTrigger=2)
    q.awaitTermination()
    assert _ids(spark, dst) == list(range(20))
    assert len([p for p in q.recentProgress if p["numInputRows"] > 0]) > 1  # limit honoured
    _append(spark, src, 20, 25)
    _stream(spark, src, dst, ckpt, {"availableNow": True}).awaitTermination()
    assert _ids(spark, dst) == list(range(25))
    # Every micro-batch is one commit carrying the query's transaction id.
    with open(f"{ckpt}/metadata") as f:
        query_id = json.load(f)["id"]
    assert DeltaTable(dst).transaction_version(app_id_for(ckpt, query_id)) is not None


def test_once_trigger_reads_everything_in_one_batch(spark, paths):
    src, dst, ckpt = paths
    for i in range(3):
        _append(spark, src, i * 5, i * 5 + 5)
    q = _stream(spark, src, dst, ckpt, {"once": True}, maxFilesPerTrigger=1)
    q.awaitTermination()
    assert _ids(spark, dst) == list(range(15))
    assert len([p for p in q.recentProgress if p["numInputRows"] > 0]) == 1


@pytest.mark.parametrize(
    "trigger", [None, {"processingTime": "300 milliseconds"}], ids=["default", "processingTime"]
)
def test_continuous_triggers_pick_up_new_appends(spark, paths, trigger):
    src, dst, ckpt = paths
    _append(spark, src, 0, 5)
    q = _stream(spark, src, dst, ckpt, trigger)
    try:
        _wait_for(lambda: os.path.exists(dst) and len(_ids(spark, dst)) == 5)
        _append(spark, src, 5, 8)
        _wait_for(lambda: len(_ids(spark, dst)) == 8)
    finally:
        q.stop()
    assert _ids(spark, dst) == list(range(8))


def _wait_for(cond, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if cond():
                return
        except Exception:
            pass
        time.sleep(0.3)
    raise AssertionError("condition not met in time")


def test_complete_mode_replaces_table_each_batch(spark, paths):
    src, dst, ckpt = paths
    _append(spark, src, 0, 9)
    agg = spark.readStream.format("delta").load(src).groupBy("k").count()
    run = lambda: (  # noqa: E731
        agg.writeStream.format("delta")
        .outputMode("complete")
        .option("checkpointLocation", ckpt)
        .trigger(availableNow=True)
        .start(dst)
        .awaitTermination()
    )
    run()
    assert sorted(tuple(r) for r in spark.read.format("delta").load(dst).collect()) == [
        (0, 3),
        (1, 3),
        (2, 3),
    ]
    _append(spark, src, 9, 12)
    run()
    assert sorted(tuple(r) for r in spark.read.format("delta").load(dst).collect()) == [
        (0, 4),
        (1, 4),
        (2, 4),
    ]
    ops = [h["operationParameters"].get("mode") for h in DeltaTable(dst).history()]
    assert "Overwrite" in ops


def test_starting_version_skips_earlier_commits(spark, paths):
    src, dst, ckpt = paths
    _append(spark, src, 0, 5)
    _append(spark, src, 5, 10)
    _append(spark, src, 10, 15)
    _stream(spark, src, dst, ckpt, {"availableNow": True}, startingVersion=1).awaitTermination()
    assert _ids(spark, dst) == list(range(5, 15))


def test_starting_version_latest_starts_at_the_latest_until_a_run_reads(spark, paths):
    # As delta-spark: a run that read nothing leaves no position, so the next run starts at
    # the latest version again; once a run has read, the checkpoint holds the stream.
    src, dst, ckpt = paths
    _append(spark, src, 0, 5)

    def run() -> list[int]:
        query = _stream(spark, src, dst, ckpt, {"availableNow": True}, startingVersion="latest")
        query.awaitTermination()
        return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]

    assert run() == []
    _append(spark, src, 5, 8)
    assert run() == []  # started at the version holding 5..7: nothing after it
    query = _stream(
        spark, src, dst, ckpt, {"processingTime": "0 seconds"}, startingVersion="latest"
    )
    try:
        _wait_for(lambda: query.lastProgress is not None)  # it has taken its start
        _append(spark, src, 8, 10)  # lands while the run goes: read from its start
        _wait_for(lambda: os.path.exists(dst) and _ids(spark, dst) == [8, 9])
    finally:
        query.stop()
    _append(spark, src, 10, 12)
    assert run() == [2]  # the checkpoint now holds the stream's position
    assert _ids(spark, dst) == [8, 9, 10, 11]


def test_a_rewrite_with_data_change_false_is_skipped_by_streams(spark, paths):
    """``option("dataChange", "false")`` on an overwrite that only rearranges the rows
    (delta-spark's compaction by hand): its adds and removes are logged as no data
    change, so a stream reading the table neither fails on the removes nor delivers the
    rows again."""
    src, dst, ckpt = paths
    _append(spark, src, 0, 10)
    spark.read.format("delta").load(src).repartition(3).write.format("delta").mode(
        "overwrite"
    ).option("dataChange", "false").save(src)
    log = os.path.join(src, "_delta_log", "00000000000000000001.json")
    with open(log) as f:
        actions = [json.loads(line) for line in f]
    files = [a.get("add") or a.get("remove") for a in actions if "add" in a or "remove" in a]
    assert files and all(f["dataChange"] is False for f in files)
    _stream(spark, src, dst, ckpt, {"availableNow": True}, startingVersion=0).awaitTermination()
    assert _ids(spark, dst) == list(range(10))
    assert _ids(spark, src) == list(range(10))


def test_max_bytes_per_trigger_limits_batches(spark, paths):
    src, dst, ckpt = paths
    for i in range(4):
        _append(spark, src, i * 3, i * 3 + 3)
    q = _stream(spark, src, dst, ckpt, {"availableNow": True}, maxBytesPerTrigger="1b")
    q.awaitTermination()
    assert _ids(spark, dst) == list(range(12))
    batches = [p for p in q.recentProgress if p["numInputRows"] > 0]
    n_files = sum(1 for _ in DeltaTable(src).file_uris())
    assert len(batches) == n_files  # soft limit: one file per batch


def test_update_commit_fails_stream_naming_version_and_options(spark, paths):
    src, dst, ckpt = paths
    _append(spark, src, 0, 5)
    _stream(spark, src, dst, ckpt, {"availableNow": True}).awaitTermination()
    spark.range(0, 2).selectExpr("id", "id % 3 as k").write.format("delta").mode("overwrite").save(
        src
    )
    q = _stream(spark, src, dst, ckpt, {"availableNow": True})
    with pytest.raises(StreamingQueryException, match=r"version 1.*skipChangeCommits"):
        q.awaitTermination()
    assert _ids(spark, dst) == list(range(5))


def test_skip_change_commits_and_ignore_deletes(spark, paths, tmp_path):
    src, dst, ckpt = paths
    _append(spark, src, 0, 5)
    spark.range(100, 102).selectExpr("id", "id % 3 as k").write.format("delta").mode(
        "overwrite"
    ).save(src)
    _append(spark, src, 200, 201)
    _stream(
        spark, src, dst, ckpt, {"availableNow": True}, startingVersion=0, skipChangeCommits="true"
    ).awaitTermination()
    assert _ids(spark, dst) == [0, 1, 2, 3, 4, 200]
    # ignoreDeletes: a commit that only removes files is passed over.
    src2 = str(tmp_path / "src2")
    spark.range(0, 6).selectExpr("id", "id % 3 as k").write.format("delta").option(
        "partitionBy", "k"
    ).save(src2)
    spark.range(0).selectExpr("id", "id % 3 as k").write.format("delta").mode("overwrite").option(
        "replaceWhere", "k = 1"
    ).save(src2)
    _append(spark, src2, 6, 7)
    dst2 = str(tmp_path / "dst2")
    _stream(
        spark,
        src2,
        dst2,
        str(tmp_path / "ck2"),
        {"availableNow": True},
        startingVersion=0,
        ignoreDeletes="true",
    ).awaitTermination()
    assert _ids(spark, dst2) == list(range(7))  # the k=1 rows were read before their delete


def test_merge_schema_in_stream_adds_columns(spark, paths, tmp_path):
    src, dst, ckpt = paths
    _append(spark, dst, 0, 2)
    input_dir = str(tmp_path / "in")
    spark.range(5, 7).selectExpr("id", "id % 3 as k", "'new' as extra").write.parquet(input_dir)
    stream = spark.readStream.schema("id long, k long, extra string").parquet(input_dir)
    q = (
        stream.writeStream.format("delta")
        .option("checkpointLocation", ckpt)
        .option("mergeSchema", "true")
        .trigger(availableNow=True)
        .start(dst)
    )
    q.awaitTermination()
    back = spark.read.format("delta").load(dst)
    assert back.columns == ["id", "k", "extra"]
    assert sorted((r.id, r.extra) for r in back.collect()) == [
        (0, None),
        (1, None),
        (5, "new"),
        (6, "new"),
    ]


def test_sink_requires_checkpoint_and_refuses_update_mode(spark, paths):
    src, dst, _ = paths
    _append(spark, src, 0, 1)
    with pytest.raises(OptionError, match="checkpointLocation"):
        spark.readStream.format("delta").load(src).writeStream.format("delta").start(dst)
    with pytest.raises(OptionError, match=r"^\[DELTA_UNSUPPORTED_OUTPUT_MODE\].*'update'"):
        spark.readStream.format("delta").load(src).writeStream.format("delta").outputMode(
            "update"
        ).option("checkpointLocation", "/tmp/x").start(dst)


def test_unknown_stream_option_is_named(spark, paths):
    src, dst, ckpt = paths
    _append(spark, src, 0, 1)
    with pytest.raises(
        Exception, match="(?i)unknown option .maxFilesPerTriger.*Did you mean .maxFilesPerTrigger"
    ):
        q = _stream(spark, src, dst, ckpt, {"availableNow": True}, maxFilesPerTriger=1)
        q.awaitTermination()


def test_replayed_batch_is_not_committed_twice(spark, tmp_path):
    from headwater.delta.write.sink import DeltaStreamSink

    dst = str(tmp_path / "dst")
    sink = DeltaStreamSink(dst, str(tmp_path / "ck"), "append")
    batch = spark.range(4).withColumn("v", F.lit("x"))
    sink(batch, 0)
    sink(batch, 0)  # the same micro-batch run again after a crash
    sink(batch, 1)
    assert spark.read.format("delta").load(dst).count() == 8
    assert DeltaTable(dst).version() == 1


def test_ignore_changes_redelivers_a_file_a_deletion_vector_marked_without_its_rows(spark, paths):
    """A DELETE on a table with deletion vectors re-adds the file with a vector: a stream
    with ignoreChanges delivers that file again without the deleted rows; without an option
    the stream fails naming the change; skipChangeCommits passes it over."""
    from headwater.delta.tables import DeltaTable as HwTable

    src, dst, ckpt = paths
    (
        HwTable.create(spark).location(src).addColumn("id", "bigint").addColumn("k", "bigint")
        .property("delta.enableDeletionVectors", "true").execute()
    )  # fmt: skip
    _append(spark, src, 0, 6)
    _stream(spark, src, dst, ckpt, {"availableNow": True}).awaitTermination()
    HwTable.forPath(spark, src).delete("id IN (1, 4)")
    assert int(DeltaTable(src).history(1)[0]["operationMetrics"]["numDeletionVectorsAdded"]) >= 1
    _append(spark, src, 10, 11)

    failing = _stream(spark, src, dst, ckpt, {"availableNow": True})
    with pytest.raises(StreamingQueryException, match=r"version 2.*skipChangeCommits"):
        failing.awaitTermination()
    _stream(
        spark, src, dst + "-skip", ckpt + "-skip", {"availableNow": True}, skipChangeCommits="true"
    ).awaitTermination()
    assert _ids(spark, dst + "-skip") == [0, 2, 3, 5, 10]  # the snapshot at start, then 10

    _stream(spark, src, dst, ckpt, {"availableNow": True}, ignoreChanges="true").awaitTermination()
    assert _ids(spark, dst) == [0, 0, 1, 2, 2, 3, 3, 4, 5, 5, 10]  # 1 and 4 not again
