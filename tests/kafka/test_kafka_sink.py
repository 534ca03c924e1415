"""Writing to Kafka: Spark's Kafka sink from headwater's Delta tables, as a plain
``writeStream.format("kafka")`` (and a batch ``write.format("kafka")``) and as a pipeline's
``create_sink(name, "kafka", {...})`` fed by an append flow.

Every record is read back from the real broker with confluent-kafka's consumer: each row of
the table arrives, with its key, and a second update sends only the rows added since (the
flow's checkpoint keeps where the Delta stream stopped).
"""

from __future__ import annotations

import json
import textwrap
import time
import uuid
from pathlib import Path

import pytest
import yaml

from headwater.errors import PipelineDefinitionError


def consume(broker, topic: str, expect: int, settle: float = 2.0) -> list[tuple[str, dict]]:
    """Every record of ``topic`` from the start, as (key, decoded JSON value): polls until
    ``expect`` records came, then ``settle`` seconds more so a duplicate would show."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        broker.client_conf(
            **{
                "group.id": f"check_{uuid.uuid4().hex[:8]}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
    )
    consumer.subscribe([topic])
    found: list[tuple[str, dict]] = []
    deadline = time.monotonic() + 60
    quiet_until = None
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None:
                assert msg.error() is None, msg.error()
                key = msg.key().decode() if msg.key() is not None else None
                found.append((key, json.loads(msg.value())))
            if len(found) >= expect:
                quiet_until = quiet_until or time.monotonic() + settle
                if time.monotonic() >= quiet_until:
                    break
    finally:
        consumer.close()
    return found


def orders(spark, start: int, stop: int):
    return spark.createDataFrame(
        [(i, f"item-{i}", i * 10) for i in range(start, stop)],
        "id BIGINT, item STRING, cents BIGINT",
    )


def as_records(frame):
    """Rows as Kafka records: the whole row as JSON in ``value``, the id as ``key``."""
    from pyspark.sql import functions as F

    return frame.select(
        F.col("id").cast("string").alias("key"),
        F.to_json(F.struct("id", "item", "cents")).alias("value"),
    )


def want(start: int, stop: int) -> list[tuple[str, dict]]:
    return [(str(i), {"id": i, "item": f"item-{i}", "cents": i * 10}) for i in range(start, stop)]


def test_write_stream_from_a_delta_table_to_a_topic(spark, broker, tmp_path):
    """``writeStream.format("kafka")`` from a headwater Delta table (availableNow, twice);
    the second run sends only the rows appended since."""
    topic = broker.create_topic(f"out_{uuid.uuid4().hex[:8]}", partitions=3)
    path = str(tmp_path / "orders")
    orders(spark, 0, 30).write.format("delta").save(path)

    def run() -> None:
        query = (
            as_records(spark.readStream.format("delta").load(path))
            .writeStream.format("kafka")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("topic", topic)
            .option("checkpointLocation", str(tmp_path / "chk"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(180)
        assert query.exception() is None, query.exception()

    run()
    assert sorted(consume(broker, topic, 30), key=lambda r: r[1]["id"]) == want(0, 30)
    orders(spark, 30, 45).write.format("delta").mode("append").save(path)
    run()
    assert sorted(consume(broker, topic, 45), key=lambda r: r[1]["id"]) == want(0, 45)


def test_batch_write_to_a_topic(spark, broker):
    topic = broker.create_topic(f"batch_{uuid.uuid4().hex[:8]}", partitions=2)
    (
        as_records(orders(spark, 0, 12))
        .write.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", topic)
        .save()
    )
    assert sorted(consume(broker, topic, 12), key=lambda r: r[1]["id"]) == want(0, 12)


SINK_PIPELINE = """
from pyspark import pipelines as dp
from pyspark.sql import functions as F

@dp.table
def orders():
    return spark.readStream.format("delta").load(spark.conf.get("source"))

dp.create_sink(
    "out",
    format="kafka",
    options={"kafka.bootstrap.servers": spark.conf.get("bootstrap"),
             "topic": spark.conf.get("topic")},
)

@dp.append_flow(target="out")
def to_kafka():
    return spark.readStream.table("orders").select(
        F.col("id").cast("string").alias("key"),
        F.to_json(F.struct("id", "item", "cents")).alias("value"),
    )
"""


def project(tmp_path: Path, broker, topic: str, text: str, **conf: str) -> Path:
    root = tmp_path / "pipeline"
    database = f"kafka_sink_{uuid.uuid4().hex[:8]}"
    (root / "transformations").mkdir(parents=True)
    (root / "transformations" / "pipeline.py").write_text(textwrap.dedent(text))
    spec = {
        "name": database,
        "storage": str(root / "storage"),
        "database": database,
        "configuration": {"bootstrap": broker.bootstrap, "topic": topic, **conf},
        "libraries": [{"glob": {"include": "transformations/**"}}],
    }
    (root / "spark-pipeline.yml").write_text(yaml.safe_dump(spec))
    return root


def run(spark, root: Path):
    from headwater import pipelines

    result = pipelines.run(root, spark)
    assert result.ok, [(f.name, f.error) for f in result.failed()]
    return result


def test_pipeline_sink_streams_a_delta_table_to_a_topic(spark, broker, tmp_path):
    """``create_sink(..., "kafka")`` and an append flow: every row of the table arrives once
    with its key; a second update after an append sends only the new rows."""
    topic = broker.create_topic(f"sink_{uuid.uuid4().hex[:8]}", partitions=3)
    source = str(tmp_path / "source")
    orders(spark, 0, 40).write.format("delta").save(source)
    root = project(tmp_path, broker, topic, SINK_PIPELINE, source=source)

    first = run(spark, root)
    assert first.flows["to_kafka"].num_input_rows == 40
    assert sorted(consume(broker, topic, 40), key=lambda r: r[1]["id"]) == want(0, 40)

    orders(spark, 40, 55).write.format("delta").mode("append").save(source)
    second = run(spark, root)
    assert second.flows["to_kafka"].num_input_rows == 15
    got = consume(broker, topic, 55)
    assert sorted(got, key=lambda r: r[1]["id"]) == want(0, 55)  # no resend of the first 40

    third = run(spark, root)  # nothing new: nothing sent
    assert third.flows["to_kafka"].num_input_rows in (0, None)
    assert len(consume(broker, topic, 55)) == 55


def test_dlt_sink_without_a_value_column_is_one_line_at_the_flow(spark, broker, tmp_path):
    topic = broker.create_topic(f"bad_{uuid.uuid4().hex[:8]}", partitions=1)
    source = str(tmp_path / "source")
    orders(spark, 0, 3).write.format("delta").save(source)
    text = """
    import dlt

    dlt.create_sink("out", "kafka", {"kafka.bootstrap.servers": spark.conf.get("bootstrap"),
                                     "topic": spark.conf.get("topic")})

    @dlt.append_flow(target="out")
    def raw_rows():
        return spark.readStream.format("delta").load(spark.conf.get("source"))
    """
    root = project(tmp_path, broker, topic, text, source=source)
    from headwater import pipelines

    with pytest.raises(PipelineDefinitionError) as e:
        pipelines.run(root, spark)
    message = str(e.value)
    assert "pipeline.py:7" in message
    assert "[KAFKA_SINK_NO_VALUE]" in message and "'raw_rows'" in message
    assert "\n" not in message
