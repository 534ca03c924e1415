"""Writing to Kafka: Spark's Kafka sink from headwater's Delta tables, as a plain
``writeStream.format("kafka")`` (and a batch ``write.format("kafka")``) and as a pipeline's
``create_sink(name, "kafka", {...})`` fed by an append flow.

Every record is read back from the real broker with confluent-kafka's consumer: each row of
the table arrives, with its key, and a second update sends only the rows added since (the
flow's checkpoint keeps where the Delta stream stopped).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import textwrap
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
import yaml

from headwater.errors import PipelineDefinitionError
from tests.jars import tier_jars
from tests.kafka.test_kafka_crash import writer


def consume(
    broker, topic: str, expect: int, settle: float = 2.0, wait: float = 60
) -> list[tuple[str, dict]]:
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
    deadline = time.monotonic() + wait
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


def stream_to_topic(frame, broker, topic: str, checkpoint: Path) -> None:
    """Stream ``frame`` to ``topic`` with Spark's Kafka sink up to what its source holds
    now (``availableNow``)."""
    query = (
        frame.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", topic)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(180)
    assert query.exception() is None, query.exception()


def test_write_stream_from_a_delta_table_to_a_topic(spark, broker, tmp_path):
    """``writeStream.format("kafka")`` from a headwater Delta table (availableNow, twice);
    the second run sends only the rows appended since."""
    topic = broker.create_topic(f"out_{uuid.uuid4().hex[:8]}", partitions=3)
    path = str(tmp_path / "orders")
    orders(spark, 0, 30).write.format("delta").save(path)

    def run() -> None:
        stream_to_topic(
            as_records(spark.readStream.format("delta").load(path)), broker, topic, tmp_path / "chk"
        )

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


CHUNKS, CHUNK = 12, 40  # the source table: 12 commits of 40 rows, one file each
SINK_KILLS = 3


def batch_ids(folder: Path) -> set[int]:
    return {int(p.name) for p in folder.glob("*") if p.name.isdigit()} if folder.exists() else set()


def in_flight(checkpoint: Path) -> int | None:
    """The batch planned (its offsets written) but not committed: the one a kill cut short."""
    planned = batch_ids(checkpoint / "offsets") - batch_ids(checkpoint / "commits")
    return max(planned) if planned else None


def watermarks(broker):
    from confluent_kafka import Consumer

    return Consumer(broker.client_conf(**{"group.id": f"watch_{uuid.uuid4().hex[:8]}"}))


def records_in(consumer, topic: str) -> int:
    """How many records the topic holds (the sum of its partitions' high watermarks)."""
    from confluent_kafka import TopicPartition

    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    return sum(
        consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions
    )


def sink_writer(args: list[str], log: Path) -> subprocess.Popen:
    return writer(args, log, "tests.kafka.sink_writer")


def wait_for_commit(proc: subprocess.Popen, checkpoint: Path, after: int, log: Path) -> int:
    """Until the writer commits a batch beyond ``after`` (the replay of a killed batch
    included); returns the newest committed batch id."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the writer exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        done = batch_ids(checkpoint / "commits")
        if done and max(done) > after:
            return max(done)
        time.sleep(0.1)
    pytest.fail(f"the writer committed nothing in 180s:\n{log.read_text()[-3000:]}")


@pytest.mark.slow
def test_sigkill_of_a_stream_to_kafka_is_at_least_once(spark, broker, tmp_path):
    """Spark's Kafka sink is at least once: a batch killed after producing some of its
    records and before its commit is produced again, whole, on restart. Every row arrives;
    the only duplicates are rows of the batches the kills cut short, each sent twice at most."""
    topic = broker.create_topic(f"kill_{uuid.uuid4().hex[:8]}", partitions=3)
    path, checkpoint, log = tmp_path / "source", tmp_path / "chk", tmp_path / "writer.log"
    for chunk in range(CHUNKS):
        rows = spark.createDataFrame(
            [(chunk * CHUNK + i, chunk) for i in range(CHUNK)], "id BIGINT, chunk INT"
        )
        rows.coalesce(1).write.format("delta").mode("append").save(str(path))
    args = [broker.bootstrap, topic, str(path), str(checkpoint)]
    jars = ",".join(tier_jars("kafka"))
    rng = random.Random(30)
    watch = watermarks(broker)
    cut: list[int] = []  # the batches the kills cut short
    done = -1
    for _ in range(SINK_KILLS):
        proc = sink_writer([*args, "run", jars], log)
        done = wait_for_commit(proc, checkpoint, done, log)
        # Killed once the next batch's first tasks have produced, before it commits.
        produced = records_in(watch, topic)
        while records_in(watch, topic) == produced and proc.poll() is None:
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 0.2))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        batch = in_flight(checkpoint)
        if batch is not None:
            cut.append(batch)
            done = batch - 1  # the next commit to wait for is this batch's replay
    watch.close()
    drain = sink_writer([*args, "drain", jars], log)
    assert drain.wait(300) == 0, log.read_text()[-3000:]

    total = CHUNKS * CHUNK
    got = consume(broker, topic, total)
    counts = Counter(value["id"] for _, value in got)
    assert set(counts) == set(range(total))  # every row at least once
    assert all(key == str(value["id"]) for key, value in got)
    twice = {i for i, n in counts.items() if n > 1}
    assert max(counts.values()) <= 2
    assert twice, "no kill landed between a batch's produce and its commit"
    # One file a batch: each batch sends one chunk, so the duplicates, all from the
    # batches killed mid-way, lie in as many chunks at most.
    assert len({i // CHUNK for i in twice}) <= len(cut), (sorted(twice), cut)
    print(f"\n[kafka] sink: {SINK_KILLS} kills cut batches {cut} short; {len(got)} records "
          f"for {total} rows, {len(twice)} sent twice")  # fmt: skip


def test_write_stream_with_partition_and_headers_columns(spark, broker, tmp_path):
    """A ``partition`` column sends each row to the partition it names (not the key's
    hash) and a ``headers`` column becomes the record's headers; read back with Spark's
    batch Kafka reader."""
    from pyspark.sql import functions as F

    topic = broker.create_topic(f"routed_{uuid.uuid4().hex[:8]}", partitions=3)
    path = str(tmp_path / "orders")
    orders(spark, 0, 24).write.format("delta").save(path)
    headers = F.array(
        F.struct(F.lit("item").alias("key"), F.col("item").cast("binary").alias("value")),
        F.struct(
            F.lit("cents").alias("key"), F.col("cents").cast("string").cast("binary").alias("value")
        ),
    )
    rows = (
        spark.readStream.format("delta")
        .load(path)
        .select(
            F.col("id").cast("string").alias("key"),
            F.to_json(F.struct("id", "item", "cents")).alias("value"),
            (F.col("id") * 2 % 3).cast("int").alias("partition"),
            headers.alias("headers"),
        )
    )
    stream_to_topic(rows, broker, topic, tmp_path / "chk")

    back = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", topic)
        .option("includeHeaders", "true")
        .load()
        .collect()
    )
    assert sorted(int(r.key) for r in back) == list(range(24))
    for r in back:
        i = int(r.key)
        assert r.partition == i * 2 % 3, (i, r.partition)
        assert [(h.key, bytes(h.value)) for h in r.headers] == [
            ("item", f"item-{i}".encode()),
            ("cents", str(i * 10).encode()),
        ]
