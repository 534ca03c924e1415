"""The Kafka work of ``bench/bench_kafka.py``: producing, draining a topic into a sink, and
timing when each message becomes visible to a reader of a running stream's output.

Visibility is read from the output's own log, the way a reader finds the data: a Delta
table's rows are visible once its ``_delta_log/<version>.json`` exists; a Parquet file
sink's once its ``_spark_metadata/<batch>`` file exists (a reader of the directory lists
files through that log). A thread lists the log every ``POLL_SECONDS`` and keeps when each
entry first appeared; afterwards each entry's files are read for the message ids and their
produce times.
"""

from __future__ import annotations

import json
import re
import statistics
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow.parquet as pq
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

POLL_SECONDS = 0.01
KINDS = ("click", "view", "buy", "share")
EVENT = StructType(
    [
        StructField("id", LongType()),
        StructField("user", StringType()),
        StructField("kind", StringType()),
        StructField("amount", DoubleType()),
        StructField("produced_ms", LongType()),
    ]
)
SINKS = ("delta", "parquet")
# The parts of a micro-batch Spark times (``durationMs`` of its progress); ``addBatch`` is
# the sink's own work (for the Delta sink, the foreachBatch call: the Spark job writing the
# files, their statistics and the log commit).
PHASES = ("latestOffset", "queryPlanning", "getBatch", "addBatch", "walCommit", "commitOffsets")


def event(i: int, now_ms: int) -> str:
    """One message's JSON value (about 100 bytes)."""
    return (
        f'{{"id": {i}, "user": "u{i % 1000:04d}", "kind": "{KINDS[i % 4]}", '
        f'"amount": {i % 10_000 / 100}, "produced_ms": {now_ms}}}'
    )


class Sent:
    """Delivery reports of one producer: errors and, per partition, the offset after the
    last message acknowledged (what a stream must have read to hold them all)."""

    def __init__(self) -> None:
        self.errors: list = []
        self.ends: dict[int, int] = {}

    def delivered(self, err, msg) -> None:
        if err is not None:
            self.errors.append(err)
        else:
            partition = msg.partition()
            self.ends[partition] = max(self.ends.get(partition, 0), msg.offset() + 1)


def send(producer, topic: str, partitions: int, i: int, sent: Sent) -> None:
    """Produce message ``i`` (stamped now) to partition ``i % partitions``; when the
    client's queue is full, serve delivery reports until it has room."""
    value = event(i, int(time.time() * 1000))
    while True:
        try:
            producer.produce(
                topic, value=value, partition=i % partitions, on_delivery=sent.delivered
            )
            return
        except BufferError:
            producer.poll(0.05)


def produce(broker, topic: str, partitions: int, ids: range) -> Sent:
    """Every id of ``ids`` as fast as the client takes them, acknowledged before return."""
    producer = broker.producer()
    sent = Sent()
    for i in ids:
        send(producer, topic, partitions, i, sent)
        if i % 1000 == 0:
            producer.poll(0)
    if producer.flush(120) != 0 or sent.errors:
        raise RuntimeError(f"produce to {topic} failed: {sent.errors or 'not all delivered'}")
    return sent


def kafka_stream(spark, bootstrap: str, topic: str, per_trigger: int | None = None):
    """The topic from its earliest offset, values decoded: the columns both sinks write."""
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
    )
    if per_trigger is not None:
        reader = reader.option("maxOffsetsPerTrigger", per_trigger)
    return (
        reader.load()
        .select(
            "partition",
            "offset",
            "timestamp",
            F.from_json(F.col("value").cast("string"), EVENT).alias("e"),
        )
        .select("partition", "offset", "timestamp", "e.*")
    )


def writer(stream, sink: str, out: Path, checkpoint: Path):
    """``sink``: headwater's Delta table or Spark's Parquet file sink at ``out``."""
    return stream.writeStream.format(sink).option("checkpointLocation", str(checkpoint))


def drain(spark, bootstrap: str, topic: str, sink: str, out: Path, per_trigger: int) -> dict:
    """Everything the topic holds, once (``availableNow``); seconds from ``start()`` to
    the query's end, and how many batches it took."""
    w = writer(
        kafka_stream(spark, bootstrap, topic, per_trigger), sink, out, out.with_suffix(".chk")
    )
    began = time.perf_counter()
    query = w.trigger(availableNow=True).start(str(out))
    query.awaitTermination()
    seconds = time.perf_counter() - began
    if query.exception() is not None:
        raise RuntimeError(f"the {sink} stream failed: {query.exception()}")
    batches = sum(1 for p in query.recentProgress if p["numInputRows"] > 0)
    return {"seconds": seconds, "batches": batches}


def count(spark, sink: str, out: Path) -> tuple[int, int]:
    """Rows and distinct ids the sink's output holds (read as its readers read it)."""
    df = spark.read.format(sink).load(str(out))
    row = df.agg(F.count("*").alias("n"), F.countDistinct("id").alias("ids")).first()
    return row["n"], row["ids"]


# -- latency --------------------------------------------------------------------------------


DELTA_COMMIT = re.compile(r"^(\d{20})\.json$")
SINK_BATCH = re.compile(r"^(\d+)(\.compact)?$")


def log_dir(sink: str, out: Path) -> Path:
    return out / ("_delta_log" if sink == "delta" else "_spark_metadata")


def log_entry(sink: str, name: str) -> int | None:
    """The version or batch a log file's name stands for (None: not a log entry)."""
    found = (DELTA_COMMIT if sink == "delta" else SINK_BATCH).match(name)
    return int(found.group(1)) if found else None


class LogWatcher(threading.Thread):
    """Lists the sink's log every ``POLL_SECONDS``; ``seen``: entry -> wall-clock time it
    was first listed."""

    def __init__(self, sink: str, out: Path):
        super().__init__(daemon=True)
        self.sink, self.dir = sink, log_dir(sink, out)
        self.seen: dict[int, float] = {}
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            now = time.time()
            if self.dir.is_dir():
                for path in self.dir.iterdir():
                    entry = log_entry(self.sink, path.name)
                    if entry is not None and entry not in self.seen:
                        self.seen[entry] = now
            time.sleep(POLL_SECONDS)

    def stop(self) -> None:
        self.halt.set()
        self.join(10)


def entry_files(sink: str, out: Path, entry: int) -> list[Path]:
    """The data files a log entry made visible (a compacted sink entry lists every file
    so far; the caller keeps each file's first entry)."""
    folder = log_dir(sink, out)
    if sink == "delta":
        lines = (folder / f"{entry:020d}.json").read_text().splitlines()
        adds = [json.loads(line)["add"] for line in lines if line.startswith('{"add"')]
        return [data_file(out, add["path"]) for add in adds]
    name = folder / str(entry)
    if not name.exists():
        name = folder / f"{entry}.compact"
    rows = [json.loads(line) for line in name.read_text().splitlines()[1:] if line]
    return [data_file(out, row["path"]) for row in rows if row["action"] == "add"]


def data_file(out: Path, path: str) -> Path:
    """A log's file reference (relative to the output, or a ``file:`` URI) as a path."""
    if "://" in path or path.startswith("file:"):
        return Path(unquote(urlparse(path).path))
    return out / unquote(path)


def visible_latencies(sink: str, out: Path, seen: dict[int, float]) -> dict[int, tuple[float, int]]:
    """Message id -> (milliseconds from its produce stamp to the first listing of the log
    entry that made it visible, that entry)."""
    latency: dict[int, tuple[float, int]] = {}
    taken: set[Path] = set()
    for entry in sorted(seen):
        for path in entry_files(sink, out, entry):
            if path in taken:
                continue
            taken.add(path)
            table = pq.read_table(path, columns=["id", "produced_ms"]).to_pydict()
            for i, stamp in zip(table["id"], table["produced_ms"], strict=True):
                latency[i] = (seen[entry] * 1000 - stamp, entry)
    return latency


class SteadyProducer(threading.Thread):
    """Ids ``first``, ``first + 1``, ... at ``rate`` a second for ``seconds`` (the measured
    messages), each stamped with its produce time; ``ids`` the range measured, ``ends`` the
    offsets after them (partition -> offset), ``sent`` the delivery reports.

    It then goes on at the same rate, unmeasured, until :meth:`stop`: the stream stays as
    it was while it makes the last measured messages visible. Without that tail the last
    batch reads partitions that have run dry, and its Kafka consumers wait out their
    fetches for more data (``fetch.max.wait.ms``, 500 ms): that batch took about 1.2 s on
    both sinks, a sink-independent end effect whose weight in the p99 depended only on
    how many messages the last trigger happened to catch."""

    def __init__(self, broker, topic: str, partitions: int, first: int, rate: int, seconds: float):
        super().__init__(daemon=True)
        self.producer = broker.producer()
        self.topic, self.partitions = topic, partitions
        self.first, self.rate, self.seconds = first, rate, seconds
        self.sent = Sent()
        self.ids = range(first, first)
        self.ends: dict[int, int] = {}
        self.measured = threading.Event()
        self.halt = threading.Event()

    def run(self) -> None:
        began = time.monotonic()
        i = self.first
        while not self.halt.is_set() and (elapsed := time.monotonic() - began) < self.seconds + 120:
            if not self.measured.is_set() and elapsed >= self.seconds:
                self.ids = range(self.first, i)
                self.producer.flush(60)
                self.ends = dict(self.sent.ends)
                self.measured.set()
            due = self.first + int(elapsed * self.rate)
            while i < due:
                send(self.producer, self.topic, self.partitions, i, self.sent)
                i += 1
            self.producer.poll(0)
            time.sleep(0.005)
        self.producer.flush(60)

    def stop(self) -> None:
        self.halt.set()
        self.join(60)


def wait_read(query, topic: str, ends: dict[int, int], timeout: float) -> None:
    """Until a batch that read up to ``ends`` (partition -> offset) has completed."""
    wanted = {str(p): offset for p, offset in ends.items()}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if query.exception() is not None:
            raise RuntimeError(f"the stream failed: {query.exception()}")
        progress = query.lastProgress
        if progress and progress["sources"]:
            end = progress["sources"][0]["endOffset"]
            end = json.loads(end) if isinstance(end, str) else end
            got = (end or {}).get(topic, {})
            if all(got.get(p, -1) >= offset for p, offset in wanted.items()):
                return
        time.sleep(0.05)
    raise RuntimeError(f"the stream did not read up to {ends} in {timeout:.0f}s")


def latency_run(
    spark,
    broker,
    topic: str,
    partitions: int,
    sink: str,
    out: Path,
    rate: int,
    seconds: float,
    trigger: str,
) -> dict:
    """A stream with a ``trigger`` processing-time trigger from the (empty) topic into the
    sink; a few messages first, until the stream has committed them (warm), then ``rate``
    messages a second for ``seconds``; p50/p99/max of produce -> visible over those."""  # fmt: skip
    watcher = LogWatcher(sink, out)
    watcher.start()
    query = (
        writer(kafka_stream(spark, broker.bootstrap, topic), sink, out, out.with_suffix(".chk"))
        .trigger(processingTime=trigger)
        .start(str(out))
    )
    try:
        warm = produce(broker, topic, partitions, range(-partitions * 5, 0))
        wait_read(query, topic, warm.ends, timeout=120)
        steady = SteadyProducer(broker, topic, partitions, 0, rate, seconds)
        steady.start()
        try:
            if not steady.measured.wait(seconds + 60) or steady.sent.errors or not steady.ids:
                raise RuntimeError(f"the steady producer failed: {steady.sent.errors}")
            wait_read(query, topic, steady.ends, timeout=120)
            time.sleep(POLL_SECONDS * 5)  # the last entry listed
        finally:
            steady.stop()
    finally:
        query.stop()
        watcher.stop()
    progress = [p for p in query.recentProgress if p["numInputRows"] > 0]
    durations = [p["durationMs"]["triggerExecution"] for p in progress]
    latency = visible_latencies(sink, out, watcher.seen)
    missing = [i for i in steady.ids if i not in latency]
    if missing:
        raise RuntimeError(f"{len(missing)} messages never became visible in the {sink} sink")
    values = sorted(latency[i][0] for i in steady.ids)
    return {
        "messages": len(values),
        "rate": rate,
        "seconds": seconds,
        "p50_ms": percentile(values, 50),
        "p99_ms": percentile(values, 99),
        "max_ms": values[-1],
        "mean_ms": statistics.fmean(values),
        "entries": len({latency[i][1] for i in steady.ids}),
        "batch_ms": statistics.median(durations) if durations else 0.0,
        "batch_p99_ms": percentile(sorted(durations), 99) if durations else 0.0,
        "phases_ms": {
            phase: statistics.median(p["durationMs"].get(phase, 0) for p in progress)
            for phase in PHASES
        }
        if progress
        else {},
    }


def percentile(ordered: list[float], p: float) -> float:
    """The nearest-rank percentile of sorted values."""
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]
