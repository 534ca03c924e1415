"""A stream from a headwater Delta table to a Kafka topic (Spark's Kafka sink), run as its
own process so a test can SIGKILL it mid-batch and start it again on the same checkpoint.

    python -m tests.kafka.sink_writer <bootstrap> <topic> <table path> <checkpoint> <run|drain> <jars>

One Delta file a batch (``maxFilesPerTrigger`` 1) in four tasks, one after the other (one
core); each row is delayed a little on its way to the sink, so a batch takes about a
second and a kill mostly lands after some of its tasks produced their records (a task's
records are flushed to the broker when it ends) and before the batch commits. ``run`` streams (500 ms trigger) until killed; ``drain`` sends what is left and exits 0.
"""

from __future__ import annotations

import sys
import time

from pyspark.sql import functions as F

import headwater
from tests.kafka.writer import serve

ROW_DELAY = 0.02  # seconds per row


def slowly(value: str) -> str:
    time.sleep(ROW_DELAY)
    return value


def main(bootstrap: str, topic: str, table: str, checkpoint: str, mode: str, jars: str) -> None:
    spark = headwater.session(
        "kafka-sink-writer",
        master="local[1]",
        conf={"spark.jars": jars, "spark.ui.enabled": "false"},
    )
    delay = F.udf(slowly, "string")
    rows = (
        spark.readStream.format("delta")
        .option("maxFilesPerTrigger", 1)
        .load(table)
        .repartition(4)  # four tasks a batch, each producing its rows when it ends
        .select(
            F.col("id").cast("string").alias("key"),
            delay(F.to_json(F.struct("id", "chunk"))).alias("value"),
        )
    )
    writer = (
        rows.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("checkpointLocation", checkpoint)
    )
    serve(writer, mode, lambda w: w.start())


if __name__ == "__main__":
    main(*sys.argv[1:7])
