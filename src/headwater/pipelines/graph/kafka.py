"""Kafka in pipelines: ``read_kafka`` in pipeline SQL, answered with Spark's own Kafka
source, and the rows a flow sends to a ``create_sink(name, "kafka", ...)`` sink.

The call's arguments were checked without Spark (:mod:`headwater.sql.kafka_arguments`);
the read is ``spark.sql``'s own (:func:`headwater.sql.stream_functions.read_kafka`):
``spark.readStream.format("kafka")`` (under ``STREAM``) or ``spark.read.format("kafka")``
with the same options, so the rows, the offsets kept in the flow's checkpoint and the errors
are the source's own. The source comes from a separate connector that a pip install of
pyspark lacks; without it the read fails with one line, at the flow, saying how to add it
rather than Spark's pointer to its deployment guide.

A Kafka sink is Spark's Kafka writer (``writeStream.format("kafka")``) with the sink's
options. Spark checks the rows' columns only once the stream runs, and then fails with a
stack trace; :func:`check_sink_rows` checks them while the graph is analysed, so the error
is one line at the flow, before anything is written.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import BinaryType, DataType, IntegerType, StringType, StructType

from headwater.adapter.resolution import resolving
from headwater.errors import PipelineDefinitionError, UnsupportedOperationError
from headwater.pipelines.define.elements import Dataset, Flow, Origin
from headwater.sql import stream_functions
from headwater.sql.kafka_arguments import (
    CONNECTOR_MISSING,
    KafkaSource,
    connector_missing_message,
    is_connector_missing,
)

__all__ = ["check_sink_rows", "connector_missing", "is_connector_missing", "read_kafka"]


def read_kafka(spark: SparkSession, source: KafkaSource, origin: Origin) -> DataFrame:
    """The Kafka read of ``source``: streaming or batch, with every option passed on; an
    argument given as an expression is plain Spark SQL, not a query of the pipeline."""

    def evaluate(sql: str) -> object:
        with resolving(None):
            return spark.sql(f"SELECT {sql} AS v").collect()[0][0]

    try:
        return stream_functions.read_kafka(spark, source, evaluate)
    except UnsupportedOperationError as e:
        if e.error_class != CONNECTOR_MISSING:
            raise
        raise connector_missing(origin) from None


def connector_missing(origin: Origin, doing: str = "Reading") -> PipelineDefinitionError:
    """The one line a flow reading Kafka (SQL's ``read_kafka`` or a Python
    ``format("kafka")``) or writing to a Kafka sink fails with when the connector is
    missing, naming the fix."""
    return PipelineDefinitionError(connector_missing_message(doing), origin.file, origin.line)


# The columns Spark's Kafka writer takes, and the types it accepts for each.
SINK_COLUMNS: dict[str, tuple[type[DataType], ...]] = {
    "value": (StringType, BinaryType),
    "key": (StringType, BinaryType),
    "topic": (StringType,),
    "partition": (IntegerType,),
}


def check_sink_rows(dataset: Dataset, flow: Flow, schema: StructType) -> None:
    """The rows of ``flow`` into the Kafka sink ``dataset`` are what Spark's Kafka writer
    takes: a ``value`` (string or binary), optionally ``key``, ``partition`` (int),
    ``headers``, and a ``topic`` column where the sink has no ``topic`` option."""
    columns = {f.name.lower(): f.dataType for f in schema.fields}
    has_topic = any(k.lower() == "topic" for k in dataset.options)
    if "value" not in columns:
        problem = (
            "[KAFKA_SINK_NO_VALUE] Flow '{flow}' into the Kafka sink '{sink}' has no 'value' "
            "column (it has {cols}): select the record as value, e.g. "
            "to_json(struct(*)).alias('value'), and optionally a key."
        )
    elif not has_topic and "topic" not in columns:
        problem = (
            "[KAFKA_SINK_NO_TOPIC] Flow '{flow}' into the Kafka sink '{sink}' names no topic: "
            "give the sink a 'topic' option or the rows a 'topic' column."
        )
    else:
        wrong = [
            f"{name} is {columns[name].simpleString()}"
            for name, types in SINK_COLUMNS.items()
            if name in columns and not isinstance(columns[name], types)
        ]
        if not wrong:
            return
        problem = (
            "[KAFKA_SINK_COLUMN_TYPE] Flow '{flow}' into the Kafka sink '{sink}': "
            + ", ".join(wrong)
            + "; value and key must be string or binary, topic string, partition int."
        )
    cols = ", ".join(f.name for f in schema.fields) or "no columns"
    raise PipelineDefinitionError(
        problem.format(flow=flow.name, sink=dataset.name, cols=cols),
        flow.origin.file,
        flow.origin.line,
    )
