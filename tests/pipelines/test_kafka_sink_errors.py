"""A pipeline's Kafka sink without Spark's Kafka connector (the default install: pip's
pyspark, no Kafka jars): the flow into the sink fails with one line naming the jars to add,
not Spark's pointer to its deployment guide. The sink itself, against a real broker, is
tested in ``tests/kafka/test_kafka_sink.py``."""

from __future__ import annotations

import pytest

SINK = """
from pyspark import pipelines as dp

dp.create_sink("out", format="kafka",
               options={"kafka.bootstrap.servers": "127.0.0.1:9", "topic": "t"})

@dp.append_flow(target="out")
def to_kafka():
    return spark.readStream.format("rate").load().selectExpr("CAST(value AS STRING) AS value")
"""


def test_a_kafka_sink_without_the_connector_says_how_to_add_it(project):
    from pyspark.errors import AnalysisException

    try:
        project.spark.readStream.format("kafka").load()
    except AnalysisException:
        pass  # the connector is missing, as in the default install
    except Exception:
        pytest.skip("Spark's Kafka connector is on this session's classpath")
    project.source("sink.py", SINK)
    result = project.run()
    assert not result.ok
    (failed,) = result.failed()
    message = str(failed.error)
    assert "[KAFKA_CONNECTOR_MISSING] " in message
    assert "Writing to Kafka" in message and "spark-sql-kafka-0-10_2.13" in message
    assert "sink.py:7" in message
    assert "\n" not in message


CHECKED = """
from pyspark import pipelines as dp

dp.create_sink("out", format="kafka", options={OPTIONS})

@dp.append_flow(target="out")
def to_kafka():
    return spark.readStream.format("rate").load().selectExpr({COLUMNS})
"""


@pytest.mark.parametrize(
    ("options", "columns", "code", "detail"),
    [
        ('"topic": "t"', '"CAST(value AS STRING) AS v"', "KAFKA_SINK_NO_VALUE", "(it has v)"),
        ("", '"CAST(value AS STRING) AS value"', "KAFKA_SINK_NO_TOPIC", "'topic' option"),
        (
            '"topic": "t"',
            '"value", "CAST(value AS STRING) AS key"',
            "KAFKA_SINK_COLUMN_TYPE",
            "value is bigint",
        ),
    ],
)
def test_rows_a_kafka_sink_cannot_take_fail_before_anything_runs(
    project, options, columns, code, detail
):
    """Checked while the graph is analysed (no connector needed): one line at the flow."""
    from headwater.errors import PipelineDefinitionError

    text = CHECKED.replace("{OPTIONS}", "{" + options + "}").replace("{COLUMNS}", columns)
    project.source("sink.py", text)
    with pytest.raises(PipelineDefinitionError) as e:
        project.run()
    message = str(e.value)
    assert f"[{code}] " in message and detail in message
    assert "sink.py:6" in message and "'to_kafka'" in message
    assert "\n" not in message
