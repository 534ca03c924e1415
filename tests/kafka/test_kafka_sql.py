"""``read_kafka`` in any ``spark.sql``, as the known platform's SQL writes it: a batch read of
what the topic holds, and under ``STREAM`` (or ``STREAM(...)``) a stream that a restart on
its checkpoint continues, each record once; arguments given as expressions are evaluated."""

from __future__ import annotations

import json


def test_read_kafka_batch_and_stream_in_spark_sql(spark, broker, topic, tmp_path):
    broker.produce(topic, [json.dumps({"id": i}) for i in range(6)], key=lambda i: str(i))
    batch = spark.sql(f"""
        SELECT CAST(key AS STRING) AS k, CAST(value AS STRING) AS v, partition, offset
        FROM read_kafka(bootstrapServers => '{broker.bootstrap}', subscribe => '{topic}',
                        startingOffsets => 'earliest', endingOffsets => 'latest')""")
    assert not batch.isStreaming
    assert sorted(r.k for r in batch.collect()) == [str(i) for i in range(6)]

    target, checkpoint = str(tmp_path / "events"), str(tmp_path / "checkpoint")

    def run(text: str) -> None:
        stream = spark.sql(text)
        assert stream.isStreaming
        (
            stream.writeStream.format("delta")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start(target)
            .awaitTermination()
        )

    run(f"""
        SELECT from_json(CAST(value AS STRING), 'id BIGINT').id AS id, topic
        FROM STREAM read_kafka(bootstrapServers => '{broker.bootstrap}', subscribe => '{topic}',
                               startingOffsets => 'earliest', maxOffsetsPerTrigger => 4,
                               `kafka.client.id` => concat('headwater-', 'sql'))""")
    broker.produce(topic, [json.dumps({"id": i}) for i in range(6, 9)])
    run(f"""
        SELECT from_json(CAST(value AS STRING), 'id BIGINT').id AS id, topic
        FROM STREAM(read_kafka(bootstrapServers => '{broker.bootstrap}',
                               subscribe => '{topic}', startingOffsets => 'earliest'))""")
    rows = spark.read.format("delta").load(target).collect()
    assert sorted(r.id for r in rows) == list(range(9))  # each record once across the restart
    assert {r.topic for r in rows} == {topic}
