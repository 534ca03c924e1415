"""``failOnDataLoss`` when the broker removed records the stream had not read yet (what
retention does; here ``deleteRecords`` does it on demand): ``false`` goes on from the
earliest record left and the gap shows in the stream's progress, ``true`` (the default)
stops with an error naming the lost offsets."""

from __future__ import annotations

import json
import shutil
import uuid

import pytest
from pyspark.errors import StreamingQueryException


def run(spark, broker, topic, path, checkpoint, fail_on_data_loss: str):
    query = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", fail_on_data_loss)
        .load()
        .selectExpr("offset", "CAST(value AS STRING) AS value")
        .writeStream.format("delta")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start(str(path))
    )
    query.awaitTermination(180)
    return query


def test_fail_on_data_loss(spark, broker, tmp_path):
    topic = broker.create_topic(f"loss_{uuid.uuid4().hex[:8]}", partitions=1)
    path, checkpoint = tmp_path / "t", tmp_path / "chk"
    broker.produce(topic, [json.dumps({"n": i}) for i in range(10)])
    assert run(spark, broker, topic, path, checkpoint, "false").exception() is None

    # Offsets 10..19 arrive while the stream is down; 10..14 are removed before it is back.
    broker.produce(topic, [json.dumps({"n": i}) for i in range(10, 20)])
    broker.delete_records(topic, {0: 15})
    strict = tmp_path / "chk_strict"
    shutil.copytree(checkpoint, strict)

    with pytest.raises(StreamingQueryException) as failed:
        query = run(spark, broker, topic, path, strict, "true")
        raise query.exception()  # type: ignore[misc]
    message = str(failed.value)
    assert "lost" in message.lower() or "data_loss" in message.lower(), message

    query = run(spark, broker, topic, path, checkpoint, "false")
    assert query.exception() is None
    read = [p for p in query.recentProgress if p["numInputRows"] > 0]
    assert len(read) == 1
    (source,) = read[0]["sources"]
    start, end = json.loads(source["startOffset"]), json.loads(source["endOffset"])
    assert (start[topic]["0"], end[topic]["0"], read[0]["numInputRows"]) == (10, 20, 5)
    offsets = sorted(r.offset for r in spark.read.format("delta").load(str(path)).collect())
    assert offsets == [*range(10), *range(15, 20)]
