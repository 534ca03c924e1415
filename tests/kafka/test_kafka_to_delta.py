"""Spark's Kafka source into headwater's Delta tables, with the options users write.

Every stream here runs ``availableNow`` to the end of what was produced, is run again after
more records arrive, and the table must hold each record exactly once: the checkpoint's
Kafka offsets and the table's commits agree across runs.
"""

from __future__ import annotations

import json
import uuid

from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

EVENT = StructType([StructField("id", LongType()), StructField("kind", StringType())])


def events(start: int, stop: int) -> list[str]:
    return [
        json.dumps({"id": i, "kind": "even" if i % 2 == 0 else "odd"}) for i in range(start, stop)
    ]


def decoded(stream):
    """The Kafka record's coordinates and its JSON value decoded with ``from_json``."""
    return stream.select(
        "topic", "partition", "offset", F.from_json(F.col("value").cast("string"), EVENT).alias("e")
    ).select("topic", "partition", "offset", "e.*")


def run_once(frame, checkpoint, *, path=None, table=None):
    """One availableNow run into a Delta table by path or by name; returns the query."""
    writer = (
        frame.writeStream.format("delta")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
    )
    query = writer.toTable(table) if table else writer.start(str(path))
    query.awaitTermination(180)
    assert query.exception() is None, query.exception()
    return query


def ids(spark, source) -> list[int]:
    return sorted(r.id for r in source.select("id").collect())


def test_subscribe_by_path_exactly_once_in_bounded_batches(spark, broker, topic, tmp_path):
    """``subscribe`` on 3 partitions, ``startingOffsets=earliest``, ``maxOffsetsPerTrigger``:
    several batches, each record once, and a second run takes only the new records."""
    path, checkpoint = tmp_path / "events", tmp_path / "chk"
    broker.produce(topic, events(0, 60), key=lambda i: str(i))

    def stream():
        return decoded(
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", 25)
            .load()
        )

    query = run_once(stream(), checkpoint, path=path)
    batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
    # The limit is shared out over the partitions by their backlog: 24 + 24 + 12 here.
    sizes = [p["numInputRows"] for p in batches]
    assert len(sizes) == 3 and max(sizes) <= 25 and sum(sizes) == 60, sizes
    table = spark.read.format("delta").load(str(path))
    assert ids(spark, table) == list(range(60))
    assert {r.partition for r in table.select("partition").distinct().collect()} == {0, 1, 2}

    broker.produce(topic, events(60, 90), key=lambda i: str(i))
    run_once(stream(), checkpoint, path=path)
    run_once(stream(), checkpoint, path=path)  # nothing new: no row written twice
    table = spark.read.format("delta").load(str(path))
    assert ids(spark, table) == list(range(90))
    assert table.select("partition", "offset").distinct().count() == 90


def test_starting_offsets_per_partition_into_a_table_by_name(spark, broker, topic, tmp_path):
    """``startingOffsets`` as JSON (an offset, -2 earliest, -1 latest per partition) into a
    table by name; later records of every partition arrive once."""
    for partition in range(3):
        broker.produce(topic, events(partition * 100, partition * 100 + 10), partition=partition)
    name = f"default.kafka_{uuid.uuid4().hex[:8]}"
    starting = json.dumps({topic: {"0": 4, "1": -2, "2": -1}})

    def stream():
        return decoded(
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", starting)
            .load()
        )

    run_once(stream(), tmp_path / "chk", table=name)
    assert ids(spark, spark.table(name)) == [*range(4, 10), *range(100, 110)]

    for partition in range(3):
        broker.produce(
            topic, events(partition * 100 + 10, partition * 100 + 12), partition=partition
        )
    run_once(stream(), tmp_path / "chk", table=name)
    assert ids(spark, spark.table(name)) == [
        *range(4, 12), *range(100, 112), *range(210, 212)
    ]  # fmt: skip
    assert spark.sql(f"SELECT count(*) AS n FROM {name}").first().n == 22


def test_subscribe_pattern_reads_every_matching_topic(spark, broker, tmp_path):
    """The pattern is found anywhere in a topic's name (Spark 4.2 took ``x<prefix>_c`` for
    ``<prefix>_.*``); anchored with ``^`` it matches from the start."""
    prefix = f"p_{uuid.uuid4().hex[:6]}"
    a = broker.create_topic(f"{prefix}_a", partitions=2)
    b = broker.create_topic(f"{prefix}_b", partitions=1)
    other = broker.create_topic(f"x{prefix}_c", partitions=1)
    broker.produce(a, events(0, 5))
    broker.produce(b, events(5, 8))
    broker.produce(other, events(100, 103))
    stream = decoded(
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribePattern", f"^{prefix}_.*")
        .option("startingOffsets", "earliest")
        .load()
    )
    path = tmp_path / "t"
    run_once(stream, tmp_path / "chk", path=path)
    table = spark.read.format("delta").load(str(path))
    assert ids(spark, table) == list(range(8))
    assert {r.topic for r in table.select("topic").distinct().collect()} == {a, b}


def test_assign_reads_only_the_named_partitions(spark, broker, topic, tmp_path):
    for partition in range(3):
        broker.produce(topic, events(partition * 10, partition * 10 + 4), partition=partition)
    stream = decoded(
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("assign", json.dumps({topic: [0, 2]}))
        .option("startingOffsets", "earliest")
        .load()
    )
    path = tmp_path / "t"
    run_once(stream, tmp_path / "chk", path=path)
    table = spark.read.format("delta").load(str(path))
    assert ids(spark, table) == [0, 1, 2, 3, 20, 21, 22, 23]


def test_include_headers_lands_as_an_array_of_key_value_structs(spark, broker, topic, tmp_path):
    """The raw record (binary key and value, timestamp, headers) kept as it came."""
    headers = [("source", b"orders-db"), ("trace", b"\x00\x01")]
    broker.produce(topic, events(0, 3), key=b"k", partition=1, headers=headers)
    stream = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("includeHeaders", "true")
        .load()
    )
    path = tmp_path / "raw"
    run_once(stream, tmp_path / "chk", path=path)
    table = spark.read.format("delta").load(str(path))
    assert dict((f.name, f.dataType.simpleString()) for f in table.schema.fields) == {
        "key": "binary",
        "value": "binary",
        "topic": "string",
        "partition": "int",
        "offset": "bigint",
        "timestamp": "timestamp",
        "timestampType": "int",
        "headers": "array<struct<key:string,value:binary>>",
    }
    rows = table.orderBy("offset").collect()
    assert [r.offset for r in rows] == [0, 1, 2]
    assert all(bytes(r.key) == b"k" for r in rows)
    assert [(h.key, bytes(h.value)) for h in rows[0].headers] == headers
    assert json.loads(bytes(rows[2].value)) == {"id": 2, "kind": "even"}
