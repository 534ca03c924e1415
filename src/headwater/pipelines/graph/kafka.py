"""``read_kafka`` in pipeline SQL, answered with Spark's own Kafka source.

The call's arguments were checked without Spark (:mod:`headwater.pipelines.sql_files.kafka`);
here they become ``spark.readStream.format("kafka")`` (under ``STREAM``) or
``spark.read.format("kafka")`` with the same options, so the rows, the offsets kept in the
flow's checkpoint and the errors are the source's own. The source comes from a separate
connector that a pip install of pyspark lacks; without it the read fails with one line
saying how to add it rather than Spark's pointer to its deployment guide.
"""

from __future__ import annotations

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

from headwater.adapter.resolution import resolving
from headwater.errors import PipelineDefinitionError
from headwater.pipelines.define.elements import Origin
from headwater.pipelines.sql_files.kafka import KafkaSource

CONNECTOR_MISSING = "KAFKA_DATA_SOURCE_NOT_ENABLED"


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
    return error.getCondition() == CONNECTOR_MISSING


def connector_missing(origin: Origin) -> PipelineDefinitionError:
    """The one line a flow reading Kafka fails with when the connector is missing (SQL's
    ``read_kafka`` or a Python ``format("kafka")``), naming the fix."""
    return PipelineDefinitionError(
        "[KAFKA_CONNECTOR_MISSING] Reading Kafka needs Spark's Kafka connector, which pip's "
        "pyspark does not ship: put spark-sql-kafka-0-10_2.13 of Spark's exact version and "
        "its dependencies in spark.jars (docs/kafka.md, 'The connector').",
        origin.file,
        origin.line,
    )


def option_text(value: object) -> str:
    """An option's value as Spark's options take it (booleans as ``true``/``false``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
