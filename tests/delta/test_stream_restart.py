"""A stream killed while Spark wrote its first batch's offsets starts again, and writes
every row once: the leftovers (a hidden temporary offsets file, renamed into place only
once whole) are what made Spark 4 refuse the checkpoint (``headwater.storage.checkpoints``).
The checkpoint is left on disk as Spark leaves it; the SIGKILL tests that found it
(tests/pipelines/test_auto_cdc_crash.py) hit that moment only now and then."""

from __future__ import annotations

import json
import uuid

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql.streaming import DataStreamWriter

from headwater import api
from headwater.originals import original
from headwater.storage.checkpoints import clear_unwritten_first_batch


def _killed_while_writing_first_offsets(checkpoint) -> None:
    """The checkpoint of a query killed between writing ``offsets/.0.<uuid>.tmp`` and
    renaming it to ``offsets/0``: its metadata, and the temporary file half written."""
    checkpoint.mkdir(parents=True)
    (checkpoint / "metadata").write_text(json.dumps({"id": str(uuid.uuid4())}) + "\n")
    offsets = checkpoint / "offsets"
    offsets.mkdir()
    temp = f".0.{uuid.uuid4()}.tmp"
    (offsets / temp).write_text('v1\n{"batchWatermarkMs":0,"batchTime')
    (offsets / f".{temp}.crc").write_bytes(b"crc\x00")


def _landing(spark, folder, rows: int = 30):
    spark.range(rows).selectExpr("id", "id % 3 AS k").write.parquet(str(folder))
    return spark.readStream.schema("id long, k long").parquet(str(folder))


def test_spark_alone_refuses_the_checkpoint_a_killed_first_batch_leaves(spark, tmp_path):
    checkpoint = tmp_path / "ckpt"
    _killed_while_writing_first_offsets(checkpoint)
    writer = _landing(spark, tmp_path / "land").writeStream.format("noop")
    writer = original(DataStreamWriter, "option")(writer, "checkpointLocation", str(checkpoint))
    query = original(DataStreamWriter, "start")(writer)
    with pytest.raises(StreamingQueryException, match="CHECKPOINT_LOCATION_NOT_EMPTY"):
        query.awaitTermination(120)


def test_a_delta_stream_on_that_checkpoint_writes_every_row_once(spark, tmp_path):
    checkpoint, table = tmp_path / "ckpt", str(tmp_path / "t")
    _killed_while_writing_first_offsets(checkpoint)
    stream = _landing(spark, tmp_path / "land")
    for _ in range(2):  # the rerun after it finds nothing new
        query = (
            stream.writeStream.format("delta")
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start(table)
        )
        query.awaitTermination(120)
        assert query.exception() is None
    assert spark.read.format("delta").load(table).count() == 30
    assert sorted(p.name for p in (checkpoint / "offsets").iterdir() if p.name.isdigit()) == ["0"]


def test_a_foreach_batch_stream_on_that_checkpoint_sees_every_row_once(spark, tmp_path):
    checkpoint = tmp_path / "ckpt"
    _killed_while_writing_first_offsets(checkpoint)
    seen: list[int] = []

    def batch(df, batch_id: int) -> None:
        seen.extend(r["id"] for r in df.select("id").collect())

    query = api.start_foreach_batch(
        _landing(spark, tmp_path / "land"), batch, str(checkpoint), trigger={"availableNow": True}
    )
    query.awaitTermination(120)
    assert query.exception() is None
    assert sorted(seen) == list(range(30))


def test_a_checkpoint_holding_a_batch_is_left_to_spark(tmp_path):
    offsets = tmp_path / "ckpt" / "offsets"
    offsets.mkdir(parents=True)
    (offsets / "0").write_text("v1\n{}\n")
    (offsets / ".1.abc.tmp").write_text("v1\n")
    assert clear_unwritten_first_batch(str(tmp_path / "ckpt")) == []
    assert sorted(p.name for p in offsets.iterdir()) == [".1.abc.tmp", "0"]
    assert clear_unwritten_first_batch(str(tmp_path / "none")) == []  # no checkpoint yet


def test_only_the_leftovers_of_an_unwritten_first_batch_are_removed(tmp_path):
    checkpoint = tmp_path / "ckpt"
    _killed_while_writing_first_offsets(checkpoint)
    removed = clear_unwritten_first_batch(f"file:{checkpoint}")
    assert len(removed) == 2 and all(".0." in r for r in removed)
    assert list((checkpoint / "offsets").iterdir()) == []
    assert (checkpoint / "metadata").exists()
