"""``read_debezium`` in pipeline SQL: ``read_kafka``'s arguments plus the decoding ones of
``headwater.debezium.changes`` (docs/cdc.md), checked before Spark. The read and the
decoding run against the real chain in the cdc tier (tests/cdc/test_cdc_sql.py)."""

from __future__ import annotations

import pytest

from headwater.errors import PipelineDefinitionError
from headwater.pipelines.sql_files.queries import parse_query
from headwater.sql.kafka_arguments import KafkaSource


def test_kafka_arguments_become_options_and_decoding_arguments_stay_apart():
    query = parse_query(
        "SELECT * FROM STREAM read_debezium(bootstrapServers => 'b:9092', subscribe => "
        "'pg.public.accounts', startingOffsets => 'earliest', decimalHandlingMode => 'string', "
        "SCHEMA => 'id INT, at TIMESTAMP_NTZ', millisColumns => 'at') AS c",
        "p.sql",
    )
    (source,) = query.file_sources
    assert isinstance(source, KafkaSource)
    assert source.streaming and source.function == "read_debezium"
    assert dict(source.options) == {
        "kafka.bootstrap.servers": "b:9092",
        "subscribe": "pg.public.accounts",
        "startingOffsets": "earliest",
    }
    assert dict(source.decode) == {
        "decimal_handling_mode": "string",
        "schema": "id INT, at TIMESTAMP_NTZ",
        "millis_columns": "at",
    }
    assert query.render({source: "v1"}) == "SELECT * FROM v1 AS c"


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (
            "read_debezium(bootstrapServers => 'b', subscribe => 't', decimalHandling => 'x')",
            "unknown option 'decimalHandling': did you mean decimalHandlingMode?",
        ),
        (
            "read_debezium(bootstrapServers => 'b', subscribe => 't', schema => concat('a'))",
            "schema takes a literal string, not CONCAT('a')",
        ),
        ("read_debezium(subscribe => 't')", "bootstrapServers is required"),
        (
            "read_debezium(bootstrapServers => 'b', subscribe => 't', "
            "decimalHandlingMode => 'string', millisColumns => 'at')",
            "decimalHandlingMode, millisColumns decode messages without schemas, with "
            "schema => '<columns>'; messages with schemas give their own types",
        ),
        (
            "read_debezium(bootstrapServers => 'b', subscribe => 't', schema => 'a INT', "
            "SCHEMA => 'b INT')",
            "SCHEMA is given twice",
        ),
    ],
)
def test_a_wrong_call_names_the_argument(call, says):
    with pytest.raises(PipelineDefinitionError) as e:
        parse_query(f"SELECT * FROM STREAM {call}", "p.sql", 4)
    first = str(e.value).splitlines()[0]
    assert first.startswith("[PIPELINE_SQL_PARSE_ERROR] p.sql:4: read_debezium: ")
    assert says in first


def test_read_kafka_does_not_take_the_decoding_arguments():
    with pytest.raises(PipelineDefinitionError, match="unknown option 'schema'"):
        parse_query(
            "SELECT * FROM read_kafka(bootstrapServers => 'b', subscribe => 't', schema => 'x')",
            "p.sql",
        )
