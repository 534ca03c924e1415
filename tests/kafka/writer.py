"""A streaming writer from a Kafka topic into a headwater Delta table, run as its own
process so a test can SIGKILL it mid-stream and start it again on the same checkpoint.

    python -m tests.kafka.writer <bootstrap> <topic> <table path> <checkpoint> <run|drain> <jars>

``run`` keeps streaming (500 ms trigger, at most 200 records a batch) until killed;
``drain`` takes what the topic holds now (``availableNow``) and exits 0.
"""

from __future__ import annotations

import sys

from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

import headwater

EVENT = StructType([StructField("id", LongType())])


def main(bootstrap: str, topic: str, table: str, checkpoint: str, mode: str, jars: str) -> None:
    spark = headwater.session(
        "kafka-writer", master="local[1]", conf={"spark.jars": jars, "spark.ui.enabled": "false"}
    )
    stream = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", 200)
        .load()
        .select(
            "partition",
            "offset",
            F.from_json(F.col("value").cast("string"), EVENT).id.alias("id"),
        )
    )
    writer = stream.writeStream.format("delta").option("checkpointLocation", checkpoint)
    serve(writer, mode, lambda w: w.start(table))


def serve(writer, mode: str, start) -> None:
    """``drain``: what the source holds now (``availableNow``), then exit 0; ``run``: a
    500 ms trigger until killed. ``start(writer)`` starts the query."""
    if mode == "drain":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime="500 milliseconds")
    query = start(writer)
    print("started", flush=True)
    query.awaitTermination()
    if query.exception() is not None:
        raise SystemExit(f"stream failed: {query.exception()}")


if __name__ == "__main__":
    main(*sys.argv[1:7])
