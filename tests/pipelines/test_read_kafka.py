"""``read_kafka`` in pipeline SQL: its named arguments become Spark's Kafka source options,
and a wrong call is one line naming the argument, the file and the column, before Spark.

The reads themselves run against a real broker in the Kafka tier
(tests/kafka/test_kafka_pipelines.py); here the default install, which has no Kafka
connector, must say how to add it.
"""

from __future__ import annotations

import pytest

from headwater.errors import PipelineDefinitionError
from headwater.pipelines.sql_files.queries import parse_query
from headwater.sql.kafka_arguments import KafkaSource


def kafka_of(text: str) -> KafkaSource:
    query = parse_query(text, "p.sql")
    (source,) = query.file_sources
    assert isinstance(source, KafkaSource)
    return source


def error_of(call: str, stream: bool = True) -> str:
    with pytest.raises(PipelineDefinitionError) as e:
        parse_query(f"SELECT * FROM {'STREAM ' if stream else ''}{call}", "p.sql", 4)
    return str(e.value)


def test_named_arguments_become_spark_options():
    source = kafka_of(
        "SELECT CAST(value AS STRING) FROM STREAM read_kafka(bootstrapServers => 'b:9092', "
        "subscribe => 'orders', startingOffsets => 'earliest', maxOffsetsPerTrigger => 100, "
        "failOnDataLoss => false, `kafka.security.protocol` => 'SASL_SSL', "
        "`kafka.sasl.jaas.config` => concat('a', 'b')) AS k"
    )
    assert source.streaming
    assert dict(source.options) == {
        "kafka.bootstrap.servers": "b:9092",
        "subscribe": "orders",
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "100",
        "failOnDataLoss": "false",
        "kafka.security.protocol": "SASL_SSL",
    }
    # An expression is left for Spark to evaluate once, when the flow runs.
    assert source.expressions == (("kafka.sasl.jaas.config", "CONCAT('a', 'b')"),)


def test_the_query_reads_a_view_in_place_of_the_call():
    query = parse_query(
        "SELECT key FROM STREAM read_kafka(bootstrapServers => 'b:1', subscribePattern => '^o') k",
        "p.sql",
    )
    (source,) = query.file_sources
    assert query.render({source: "v1"}) == "SELECT key FROM v1 AS k"


def test_names_are_matched_without_regard_to_case_and_batch_reads_take_ending_offsets():
    source = kafka_of(
        "SELECT * FROM read_kafka(BOOTSTRAPSERVERS => 'b:1', Assign => '{\"t\": [0]}', "
        "endingOffsets => 'latest')"
    )
    assert not source.streaming
    assert dict(source.options) == {
        "kafka.bootstrap.servers": "b:1",
        "assign": '{"t": [0]}',
        "endingOffsets": "latest",
    }


@pytest.mark.parametrize(
    ("call", "stream", "says"),
    [
        ("read_kafka(subscribe => 't')", True, "bootstrapServers is required"),
        (
            "read_kafka(bootstrapServers => 'b')",
            True,
            "exactly one of subscribe, subscribePattern, assign (found none)",
        ),
        (
            "read_kafka(bootstrapServers => 'b', subscribe => 't', assign => '{}')",
            True,
            "exactly one of subscribe, subscribePattern, assign (found subscribe, assign)",
        ),
        (
            "read_kafka(bootstrapServers => 'b', subscribe => 't', startingOffset => 'x')",
            True,
            "unknown option 'startingOffset': did you mean startingOffsets?",
        ),
        (
            "read_kafka(bootstrapServers => 'b', subscribe => 't', topic => 'x')",
            True,
            "unknown option 'topic': options are bootstrapServers, subscribe,",
        ),
        ("read_kafka('b:9092', 't')", True, "arguments are named, as in subscribe => 'orders'"),
        (
            "read_kafka(bootstrapServers => 'b', subscribe => 't', SUBSCRIBE => 'u')",
            True,
            "SUBSCRIBE is given twice",
        ),
        (
            "read_kafka(bootstrapServers => 'b', subscribe => 't', endingOffsets => 'latest')",
            True,
            "endingOffsets applies to batch reads only",
        ),
        (
            "read_kafka(bootstrapServers => 'b', subscribe => 't', maxOffsetsPerTrigger => 5)",
            False,
            "maxOffsetsPerTrigger applies to streaming reads only",
        ),
    ],
)
def test_a_wrong_call_is_one_line_naming_the_argument_and_the_spot(call, stream, says):
    message = error_of(call, stream)
    first = message.splitlines()[0]
    assert first.startswith("[PIPELINE_SQL_PARSE_ERROR] p.sql:4: read_kafka: ")
    assert says in first
    assert "^ column" in message  # the line as written, with a caret under the call


SQL_BRONZE = """
CREATE OR REFRESH STREAMING TABLE bronze AS
SELECT * FROM STREAM read_kafka(bootstrapServers => '127.0.0.1:9', subscribe => 't');
"""

PY_BRONZE = """
import dlt

@dlt.table
def bronze():
    return (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", "127.0.0.1:9")
        .option("subscribe", "t")
        .load()
    )
"""


@pytest.mark.parametrize(("file", "text"), [("bronze.sql", SQL_BRONZE), ("bronze.py", PY_BRONZE)])
def test_without_the_connector_the_error_says_how_to_add_it(project, file, text):
    """The default install (pip's pyspark, no Kafka jars): one line naming the fix, for
    SQL's read_kafka and for Python's format("kafka") alike."""
    project.source(file, text)
    with pytest.raises(PipelineDefinitionError) as e:
        project.run()
    message = str(e.value)
    assert "[KAFKA_CONNECTOR_MISSING]" in message
    assert "spark-sql-kafka-0-10_2.13" in message and "docs/kafka.md" in message
    assert file in message
    assert "\n" not in message.split("KAFKA_CONNECTOR_MISSING")[1]
    # the fix for the command line and for Python, each as the user gives it
    assert "headwater pipelines run --packages org.apache.spark:spark-sql-kafka" in message
    assert "headwater.session(conf={'spark.jars.packages'" in message
