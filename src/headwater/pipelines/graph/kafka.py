"""Kafka in pipelines: ``read_kafka`` in pipeline SQL, answered with Spark's own Kafka
source, and the rows a flow sends to a ``create_sink(name, "kafka", ...)`` sink.

The call's arguments were checked without Spark (:mod:`headwater.pipelines.sql_files.kafka`);
here they become ``spark.readStream.format("kafka")`` (under ``STREAM``) or
``spark.read.format("kafka")`` with the same options, so the rows, the offsets kept in the
flow's checkpoint and the errors are the source's own. The source comes from a separate
connector that a pip install of pyspark lacks; without it the read fails with one line
saying how to add it rather than Spark's pointer to its deployment guide.

A Kafka sink is Spark's Kafka writer (``writeStream.format("kafka")``) with the sink's
options. Spark checks the rows' columns only once the stream runs, and then fails with a
stack trace; :func:`check_sink_rows` checks them while the graph is analysed, so the error
is one line at the flow, before anything is written.
"""

from __future__ import annotations

import pyspark
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import BinaryType, DataType, IntegerType, StringType, StructType

from headwater.adapter.resolution import resolving
from headwater.errors import PipelineDefinitionError
from headwater.pipelines.define.elements import Dataset, Flow, Origin
from headwater.pipelines.sql_files.kafka import KafkaSource

# Spark's condition for format("kafka") without the connector: its name since Spark 4.3,
# and the legacy one Spark 4.2 (the newest the connector is published for) gives it.
CONNECTOR_MISSING = frozenset({"KAFKA_DATA_SOURCE_NOT_ENABLED", "_LEGACY_ERROR_TEMP_1140"})


def read_kafka(spark: SparkSession, source: KafkaSource, origin: Origin) -> DataFrame:
    """The Kafka read of ``source``: streaming or batch, with every option passed on."""
    options = dict(source.options)
    with resolving(None):  # plain Spark SQL, not a query of the pipeline
        for name, sql in source.expressions:
            options[name] = option_text(spark.sql(f"SELECT {sql} AS v").collect()[0][0])
    reader = spark.readStream if source.streaming else spark.read
    try:
        return reader.format("kafka").options(**options).load()
    except AnalysisException as e:
        if not is_connector_missing(e):
            raise
        raise connector_missing(origin) from None


def is_connector_missing(error: AnalysisException) -> bool:
    """Spark's error for ``format("kafka")`` without the connector on the classpath."""
    return error.getCondition() in CONNECTOR_MISSING


def connector_missing(origin: Origin, doing: str = "Reading") -> PipelineDefinitionError:
    """The one line a flow reading Kafka (SQL's ``read_kafka`` or a Python
    ``format("kafka")``) or writing to a Kafka sink fails with when the connector is
    missing, naming the fix."""
    connector = f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}"
    return PipelineDefinitionError(
        f"[KAFKA_CONNECTOR_MISSING] {doing} Kafka needs Spark's Kafka connector, which pip's "
        "pyspark does not ship; it must be on the classpath when Spark starts: "
        f"`headwater pipelines run --packages {connector}` (or --jars with the connector's "
        "jar and its dependencies), or in Python "
        f"headwater.session(conf={{'spark.jars.packages': '{connector}'}}) (or spark.jars) "
        "before any session starts (docs/kafka.md, 'The connector').",
        origin.file,
        origin.line,
    )


def option_text(value: object) -> str:
    """An option's value as Spark's options take it (booleans as ``true``/``false``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


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
