"""The Kafka source's options not covered in ``test_kafka_to_delta.py``:
``startingOffsetsByTimestamp`` (per partition), ``minPartitions`` (more Spark tasks than
Kafka partitions) and Avro values decoded with ``from_avro``, each into a headwater Delta
table, each record exactly once across two runs on one checkpoint.
"""

from __future__ import annotations

import io
import json
import time
import uuid

import fastavro
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro, to_avro

from tests.kafka.test_kafka_to_delta import EVENT, decoded, events, ids, run_once


def kafka(spark, broker, **options):
    reader = spark.readStream.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def test_starting_offsets_by_timestamp_per_partition(spark, broker, topic, tmp_path):
    """Each partition starts at its first record stamped at or after its timestamp;
    a partition whose timestamp is past its last record starts at its end
    (``startingOffsetsByTimestampStrategy=latest``) and still gets what arrives later."""
    base = int(time.time() * 1000) - 600_000  # ten minutes ago, 1 s between records
    for p in range(3):
        broker.produce(
            topic, events(p * 100, p * 100 + 10), partition=p, timestamp=lambda i: base + i * 1000
        )
    starting = {topic: {"0": base + 3000, "1": base - 1, "2": base + 60_000}}
    path, checkpoint = tmp_path / "t", tmp_path / "chk"

    def stream():
        return kafka(
            spark,
            broker,
            subscribe=topic,
            startingOffsetsByTimestamp=json.dumps(starting),
            startingOffsetsByTimestampStrategy="latest",
        ).select("timestamp", "topic", "partition", "offset", "value")

    run_once(stream(), checkpoint, path=path)
    table = spark.read.format("delta").load(str(path))
    first = decoded(table)
    assert ids(spark, first) == [*range(3, 10), *range(100, 110)]
    for row in table.groupBy("partition").agg(F.min("timestamp").alias("ts")).collect():
        assert int(row.ts.timestamp() * 1000) >= starting[topic][str(row.partition)]

    for p in range(3):
        broker.produce(topic, events(p * 100 + 10, p * 100 + 12), partition=p)
    run_once(stream(), checkpoint, path=path)
    table = decoded(spark.read.format("delta").load(str(path)))
    assert ids(spark, table) == [*range(3, 12), *range(100, 112), 210, 211]
    assert table.select("partition", "offset").distinct().count() == table.count() == 23


def test_min_partitions_splits_each_kafka_partition_into_several_tasks(spark, broker, tmp_path):
    """``minPartitions=6`` on 2 Kafka partitions: Spark splits each partition's offset range
    over 3 tasks (each row keeps the task that read it, ``spark_partition_id()``), and every
    record lands once, on the first run and on the next."""
    topic = broker.create_topic(f"split_{uuid.uuid4().hex[:8]}", partitions=2)
    for p in range(2):
        broker.produce(topic, events(p * 100, p * 100 + 30), partition=p)
    batch = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", topic)
        .option("minPartitions", 6)
        .load()
    )
    assert batch.rdd.getNumPartitions() == 6

    path, checkpoint = tmp_path / "t", tmp_path / "chk"

    def stream():
        raw = kafka(spark, broker, subscribe=topic, startingOffsets="earliest", minPartitions=6)
        return raw.select(
            "partition",
            "offset",
            F.spark_partition_id().alias("task"),
            F.from_json(F.col("value").cast("string"), EVENT).id.alias("id"),
        )

    def tasks_per_kafka_partition(run: int) -> dict[int, int]:
        table = spark.read.format("delta").load(str(path)).where(F.col("run") == run)
        found = table.groupBy("partition").agg(F.countDistinct("task").alias("n")).collect()
        return {r.partition: r.n for r in found}

    run_once(stream().withColumn("run", F.lit(1)), checkpoint, path=path)
    assert tasks_per_kafka_partition(1) == {0: 3, 1: 3}
    for p in range(2):
        broker.produce(topic, events(p * 100 + 30, p * 100 + 36), partition=p)
    run_once(stream().withColumn("run", F.lit(2)), checkpoint, path=path)
    assert tasks_per_kafka_partition(2) == {0: 3, 1: 3}

    table = spark.read.format("delta").load(str(path))
    assert ids(spark, table) == [*range(36), *range(100, 136)]
    assert table.select("partition", "offset").distinct().count() == table.count() == 72


# What a producer outside Spark writes: Avro's binary encoding of one record, no framing.
ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "item", "type": "string"},
        {"name": "cents", "type": ["null", "long"], "default": None},
    ],
}


def avro(record: dict) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(ORDER), record)
    return out.getvalue()


def test_avro_values_decoded_with_from_avro(spark, broker, topic, tmp_path):
    """Avro-encoded values decoded with ``from_avro`` and the writer's schema into a table
    by name; a value cut short is kept as a record of nulls with its coordinates
    (``mode=PERMISSIVE``), never dropped; ``to_avro`` gives back the very bytes produced."""
    orders = [{"id": i, "item": f"item-{i}", "cents": None if i % 4 == 0 else i * 10}
              for i in range(20)]  # fmt: skip
    broker.produce(topic, [avro(o) for o in orders[:10]], key=lambda i: str(i))
    broker.produce(topic, [avro(orders[10])[:3]], partition=1)  # cut short
    schema = json.dumps(ORDER)
    name = f"default.avro_{uuid.uuid4().hex[:8]}"

    def stream():
        raw = kafka(spark, broker, subscribe=topic, startingOffsets="earliest")
        decoded_value = from_avro(F.col("value"), schema, {"mode": "PERMISSIVE"})
        return raw.select("partition", "offset", "value", decoded_value.alias("o"))

    run_once(stream(), tmp_path / "chk", table=name)
    broker.produce(topic, [avro(o) for o in orders[10:]], key=lambda i: str(i))
    run_once(stream(), tmp_path / "chk", table=name)

    table = spark.table(name)
    assert table.schema["o"].dataType.simpleString() == "struct<id:bigint,item:string,cents:bigint>"
    # PERMISSIVE keeps an undecodable value as a record of nulls (``id`` is never null
    # in a decoded one).
    good = table.where("o.id IS NOT NULL")
    got = sorted(
        ((r.id, r.item, r.cents) for r in good.select("o.*").collect()), key=lambda t: t[0]
    )
    assert got == [(o["id"], o["item"], o["cents"]) for o in orders]
    (bad,) = table.where("o.id IS NULL").collect()
    assert (bad.partition, bytes(bad.value)) == (1, avro(orders[10])[:3])
    assert table.select("partition", "offset").distinct().count() == table.count() == 21
    again = good.select((to_avro(F.col("o"), schema) == F.col("value")).alias("same"))
    assert {r.same for r in again.collect()} == {True}
