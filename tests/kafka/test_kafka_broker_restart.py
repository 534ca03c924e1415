"""The broker restarted under a running stream: a Kafka → headwater Delta stream (500 ms
trigger) keeps running while the broker is stopped and started again on the same ports and
log dir, records being produced before, during and after; the same query carries on by
itself and every record produced is in the table once.

The test restarts a broker of its own, so the session's shared broker, which other tests
use, is never interrupted.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest

from tests.jars import tier_jars
from tests.kafka.broker import kafka_broker
from tests.kafka.test_kafka_crash import Producing

WAIT = 90.0


@pytest.fixture
def own_broker():
    with kafka_broker(":".join(tier_jars("kafka-broker"))) as started:
        yield started


def high_watermarks(broker, topic: str) -> dict[str, int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(broker.client_conf(**{"group.id": f"watch_{uuid.uuid4().hex[:8]}"}))
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        return {
            str(p): consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in partitions
        }
    finally:
        consumer.close()


def wait_until(query, done, what: str) -> None:
    """Poll ``done(progress)`` on the query's newest progress until true; fail if the
    query stops or ``WAIT`` seconds pass."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if not query.isActive:
            pytest.fail(f"the stream stopped while waiting for {what}: {query.exception()}")
        progress = query.lastProgress
        if progress is not None and done(progress):
            return
        time.sleep(0.1)
    pytest.fail(f"no {what} in {WAIT:.0f}s; last progress: {query.lastProgress}")


def read_to(topic: str, offsets: dict[str, int]):
    """True once a batch's end offsets reached ``offsets`` on every partition."""

    def done(progress) -> bool:
        end = json.loads(progress["sources"][0]["endOffset"] or "{}").get(topic, {})
        return all(end.get(p, -1) >= n for p, n in offsets.items())

    return done


@pytest.mark.slow
def test_stream_carries_on_across_a_broker_restart(spark, own_broker, tmp_path):
    broker = own_broker
    topic = broker.create_topic(f"restart_{uuid.uuid4().hex[:8]}", partitions=3)
    path = tmp_path / "events"
    query = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr(
            "partition",
            "offset",
            "CAST(get_json_object(CAST(value AS STRING), '$.id') AS BIGINT) AS id",
        )
        .writeStream.format("delta")
        .option("checkpointLocation", str(tmp_path / "chk"))
        .trigger(processingTime="500 milliseconds")
        .start(str(path))
    )
    producing = Producing(broker, topic)
    producing.start()
    try:
        wait_until(query, lambda p: p["numInputRows"] > 0, "batch before the restart")
        before = query.lastProgress["batchId"]
        away = broker.restart()
        restarted_at = producing.sent
        # Records produced after the broker came back, read by a later batch of the
        # same query.
        time.sleep(1.0)
        after = high_watermarks(broker, topic)
        wait_until(query, read_to(topic, after), "batch after the restart")
    finally:
        total = producing.stop()
    assert total > restarted_at
    ends = high_watermarks(broker, topic)
    assert sum(ends.values()) == total  # the producer wrote each record once
    wait_until(query, read_to(topic, ends), "batch reading the last record")
    batches = query.lastProgress["batchId"] - before
    query.stop()
    assert query.exception() is None

    table = spark.read.format("delta").load(str(path))
    assert table.count() == total
    assert table.select("partition", "offset").distinct().count() == total
    assert sorted(r.id for r in table.select("id").collect()) == list(range(total))
    print(f"\n[kafka] broker away {away:.1f}s; {total} records, {batches} batches since")
