"""The work of ``bench/bench_cdc.py``: a workload of row changes committed in PostgreSQL,
the commit -> visible latency of a continuous update, and the drains of a topic's backlog
(the pipeline's and the baselines').

Visibility is read from the SCD1 target's own log, the way a reader finds the data: a row
is visible once the ``_delta_log/<version>.json`` that added its file exists
(``_kafka_work.LogWatcher`` lists the log every 10 ms).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
from _kafka_work import LogWatcher, entry_files, percentile
from pyspark.sql import functions as F

TABLE = """CREATE TABLE {} (id INT PRIMARY KEY, owner TEXT, balance NUMERIC(12,2),
    opened TIMESTAMP)"""
CHUNK = 50_000  # rows per transaction of the bulk workload
# The value's payload as plain Spark reads it (the baseline): Debezium's envelope with
# the row image, the balance left as Debezium's base64 text.
ROW = "id INT, owner STRING, balance STRING, opened BIGINT"
ENVELOPE = (
    f"STRUCT<payload: STRUCT<before: STRUCT<{ROW}>, after: STRUCT<{ROW}>, op: STRING, "
    "source: STRUCT<lsn: BIGINT>>>"
)


def end_offset(broker, topic: str) -> int:
    """The topic's (one partition's) end offset; 0 before it exists."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(broker.client_conf(**{"group.id": "bench-cdc-watch"}))
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=5)[1]
    except Exception:
        return 0
    finally:
        consumer.close()


def wait_offset(broker, topic: str, count: int, timeout: float) -> float:
    """Until the topic holds ``count`` messages; the wall-clock time it was seen."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if end_offset(broker, topic) >= count:
            return time.time()
        time.sleep(0.05)
    raise RuntimeError(f"{topic} holds fewer than {count} messages after {timeout:.0f}s")


def bulk_changes(postgres, table: str, keys: int) -> float:
    """``keys`` inserts then ``keys`` updates (``2 * keys`` row changes), ``CHUNK`` rows a
    transaction; the wall-clock time of the first commit's start."""
    began = time.time()
    for first in range(1, keys + 1, CHUNK):
        last = min(keys, first + CHUNK - 1)
        postgres.execute(
            f"INSERT INTO {table} SELECT i, 'o' || i, i * 0.25, "
            f"'2024-01-01'::timestamp + i * interval '1 second' "
            f"FROM generate_series({first}, {last}) i"
        )
    for first in range(1, keys + 1, CHUNK):
        last = min(keys, first + CHUNK - 1)
        postgres.execute(
            f"UPDATE {table} SET balance = balance + 1 WHERE id BETWEEN {first} AND {last}"
        )
    return began


def run_update(spark, root: Path):
    """One triggered update of the pipeline, checked; its result."""
    from headwater import pipelines

    result = pipelines.run(root, spark)
    if not result.ok:
        raise RuntimeError(f"the pipeline failed: {[(f.name, f.error) for f in result.failed()]}")
    return result


def baseline_stream(spark, bootstrap: str, topic: str, decode: str):
    """The topic's changes as a stream: ``plain`` is Spark alone (``from_json`` of the
    envelope, the row image and the log position); ``debezium`` is headwater.debezium's
    decoding (types, ordering, unavailable columns) without AUTO CDC."""
    from headwater import debezium

    kafka = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    if decode == "debezium":
        return debezium.changes(kafka)
    event = F.from_json(F.col("value").cast("string"), ENVELOPE).alias("e")
    return (
        kafka.where("value IS NOT NULL")
        .select(event)
        .select(
            F.coalesce("e.payload.after", "e.payload.before").alias("row"),
            F.col("e.payload.op").alias("_op"),
            F.col("e.payload.source.lsn").alias("_lsn"),
        )
        .select("row.*", "_op", "_lsn")
    )


def drain_to_parquet(spark, bootstrap: str, topic: str, decode: str, out: Path) -> dict:
    """The topic's whole backlog into Spark's Parquet file sink (``availableNow``): the
    seconds from ``start()`` to the end and the rows written."""
    stream = baseline_stream(spark, bootstrap, topic, decode)
    began = time.perf_counter()
    query = (
        stream.writeStream.format("parquet")
        .option("checkpointLocation", str(out.with_suffix(".chk")))
        .trigger(availableNow=True)
        .start(str(out))
    )
    query.awaitTermination()
    seconds = time.perf_counter() - began
    if query.exception() is not None:
        raise RuntimeError(f"the {decode} baseline failed: {query.exception()}")
    rows = spark.read.parquet(str(out)).count()
    return {"seconds": seconds, "rows": rows}


def table_location(spark, name: str) -> Path:
    location = spark.sql(f"DESCRIBE DETAIL {name}").first()["location"]
    return Path(location.removeprefix("file:"))


def wait_table(spark, name: str, timeout: float = 120) -> Path:
    """Until a continuous update has created ``name``; its folder."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if spark.catalog.tableExists(name):
            return table_location(spark, name)
        time.sleep(0.2)
    raise RuntimeError(f"{name} was not created in {timeout:.0f}s")


class Visibility:
    """When each row id of the SCD1 target at ``out`` became visible: the wall-clock time
    the first log entry adding a file that holds it was listed (each entry read once)."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.watcher = LogWatcher("delta", out)
        self.watcher.start()
        self.read: set[int] = set()
        self.at: dict[int, float] = {}

    def wait(self, key: int, failed: list, timeout: float = 60) -> float:
        """Until ``key`` is visible; the time it became so."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if failed:
                raise RuntimeError(f"the continuous update failed: {failed[0]}")
            seen = dict(self.watcher.seen)
            for entry in sorted(set(seen) - self.read):
                self.read.add(entry)
                for path in entry_files("delta", self.out, entry):
                    for i in pq.read_table(path, columns=["id"]).column("id").to_pylist():
                        self.at.setdefault(i, seen[entry])
            if key in self.at:
                return self.at[key]
            time.sleep(0.01)
        raise RuntimeError(f"row {key} not visible in the SCD1 target after {timeout}s")


def latency_run(
    spark, postgres, table: str, root: Path, name: str, samples: int, trigger: str
) -> dict:
    """A continuous update (``trigger`` interval) of the pipeline; ``samples`` single-row
    inserts committed one at a time, each once the previous one is visible (plus a random
    pause, so commits fall anywhere in the trigger's period); commit -> visible in the
    SCD1 target, p50 / p99 / max."""
    import random

    from headwater import pipelines

    stop = threading.Event()
    failed: list[BaseException] = []

    def flow_failed(event) -> None:
        if event.error is not None:
            failed.append(event.error)

    def run() -> None:
        try:
            pipelines.run(root, spark, continuous=True, trigger_interval=trigger, stop=stop,
                          listeners=[flow_failed])  # fmt: skip
        except BaseException as error:
            failed.append(error)

    runner = threading.Thread(target=run, name="continuous-update", daemon=True)
    runner.start()
    rng = random.Random(7)
    values: list[float] = []
    try:
        visibility = Visibility(wait_table(spark, f"{name}.accounts"))
        try:
            visibility.wait(0, failed)  # the snapshot's row: the streams are running
            for i in range(1, samples + 1):
                key = 1_000_000 + i
                postgres.execute(f"INSERT INTO {table} VALUES ({key}, 'l', 1, now())")
                committed = time.time()
                values.append((visibility.wait(key, failed) - committed) * 1000)
                time.sleep(rng.uniform(0, 0.3))
        finally:
            visibility.watcher.stop()
    finally:
        stop.set()
        runner.join(120)
    if failed:
        raise RuntimeError(f"the continuous update failed: {failed[0]}")
    values.sort()
    return {
        "samples": len(values),
        "trigger": trigger,
        "p50_ms": percentile(values, 50),
        "p99_ms": percentile(values, 99),
        "max_ms": values[-1],
        "min_ms": values[0],
        "all_ms": values,
    }
