"""``STREAM read_files(...)`` and ``read_kafka(...)`` in any ``spark.sql``, not only in
pipeline SQL: a streaming DataFrame from Auto Loader with ``read_files``' defaults, each file
read once across restarts; ``read_kafka`` checks its named arguments as pipeline SQL does and,
without Spark's Kafka connector (this install), says how to add it in one line. Reads of a
real broker are in the Kafka tier (tests/kafka/test_kafka_sql.py)."""

from __future__ import annotations

import json

import pytest

from headwater import storage
from headwater.sql import SqlError
from headwater.sql.stream_functions import STATE_FOLDER


def land(folder, name, rows):
    folder.mkdir(exist_ok=True)
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


def drain(df, tmp_path, name) -> list[tuple]:
    """Everything the stream has now, into a Delta table (the checkpoint kept): the new rows."""
    target, checkpoint = tmp_path / f"{name}_out", tmp_path / f"{name}_chk"
    before = set()
    if (target / "_delta_log").exists():
        before = {
            tuple(r) for r in df.sparkSession.read.format("delta").load(str(target)).collect()
        }
    (
        df.writeStream.format("delta")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start(str(target))
        .awaitTermination()
    )
    rows = df.sparkSession.read.format("delta").load(str(target)).collect()
    return sorted(tuple(r) for r in rows if tuple(r) not in before)


def test_stream_read_files_is_auto_loader_and_reads_each_file_once(spark, tmp_path):
    landing = tmp_path / "landing"
    land(landing, "a.json", [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}])
    query = f"SELECT id, name FROM STREAM read_files('{landing}', format => 'json')"
    stream = spark.sql(query)
    assert stream.isStreaming
    assert {f.name: f.dataType.simpleString() for f in stream.schema} == {
        "id": "bigint",
        "name": "string",
    }
    assert drain(stream, tmp_path, "plain") == [(1, "a"), (2, "b")]
    land(landing, "b.json", [{"id": 3, "name": "c"}])
    assert drain(spark.sql(query), tmp_path, "plain") == [(3, "c")]  # the same query again
    # its schema and file state: in the warehouse, under a folder named by what it reads
    warehouse = spark.conf.get("spark.headwater.warehouse")
    assert storage.is_nonempty_dir(storage.join(warehouse, STATE_FOLDER))

    # the parenthesised form, an alias, and a schema location of its own
    located = tmp_path / "state"
    parenthesised = spark.sql(
        f"SELECT f.id FROM STREAM(read_files('{landing}', format => 'json', "
        f"schemaLocation => '{located}')) AS f WHERE f.id > 1"
    )
    assert parenthesised.isStreaming
    assert drain(parenthesised, tmp_path, "parenthesised") == [(2,), (3,)]
    assert storage.is_nonempty_dir(str(located))


def test_stream_of_what_is_not_a_stream_and_clean_source_without_a_location(spark, tmp_path):
    landing = tmp_path / "landing"
    land(landing, "a.json", [{"id": 1}])
    with pytest.raises(SqlError, match="cloud_files_state.* is not a stream"):
        spark.sql(f"SELECT * FROM STREAM cloud_files_state('{tmp_path}')")
    with pytest.raises(SqlError, match="cleanSource => 'delete' needs schemaLocation"):
        spark.sql(
            f"SELECT * FROM STREAM read_files('{landing}', format => 'json', "
            "cleanSource => 'delete')"
        )


def test_read_kafka_checks_its_arguments_and_names_the_missing_connector(spark):
    with pytest.raises(SqlError, match="read_kafka: name the topics with exactly one of"):
        spark.sql("SELECT * FROM read_kafka(bootstrapServers => 'localhost:9')")
    with pytest.raises(SqlError, match="maxOffsetsPerTrigger applies to streaming reads only"):
        spark.sql(
            "SELECT * FROM read_kafka(bootstrapServers => 'localhost:9', subscribe => 't', "
            "maxOffsetsPerTrigger => 10)"
        )
    with pytest.raises(SqlError, match="read_debezium: unknown option 'decimalMode'"):
        spark.sql(
            "SELECT * FROM read_debezium(bootstrapServers => 'localhost:9', subscribe => 't', "
            "decimalMode => 'precise')"
        )
    for stream, function in [("", "read_kafka"), ("STREAM ", "read_kafka"),
                             ("STREAM ", "read_debezium")]:  # fmt: skip
        with pytest.raises(SqlError) as e:
            spark.sql(
                f"SELECT * FROM {stream}{function}("
                "bootstrapServers => 'localhost:9', subscribe => 'orders')"
            )
        message = str(e.value)
        assert message.startswith("[KAFKA_CONNECTOR_MISSING] Reading Kafka needs")
        assert "spark-sql-kafka-0-10_2.13" in message and "\n" not in message
        assert e.value.getCondition() == "KAFKA_CONNECTOR_MISSING"
