"""Declarative pipelines reading a Kafka topic, as the known platform's users write them:
``@dlt.table`` returning ``spark.readStream.format("kafka")``, and SQL's
``STREAM read_kafka(bootstrapServers => ..., subscribe => ...)``.

Each pipeline lands the raw records in ``bronze`` and decodes their JSON into ``silver``
with expectations: a value that does not parse goes to ``silver_quarantine`` with its
topic, partition and offset, heartbeats are dropped and counted. Every record produced is
accounted for exactly once (silver + quarantine + dropped), and a second update after more
records arrive reads only the new ones.
"""

from __future__ import annotations

import json
import textwrap
import uuid
from pathlib import Path

import pytest
import yaml

from headwater.errors import PipelineDefinitionError

PY_PIPELINE = """
import dlt
from pyspark.sql import functions as F

@dlt.table(comment="raw Kafka records")
def bronze():
    return (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", spark.conf.get("bootstrap"))
        .option("subscribe", spark.conf.get("topic"))
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", 7)
        .load()
    )

@dlt.table
@dlt.expect_or_quarantine("parsed", "id IS NOT NULL")
@dlt.expect_or_drop("not_heartbeat", "kind <> 'heartbeat'")
def silver():
    raw = F.col("value").cast("string")
    return (
        dlt.read_stream("bronze")
        .select("topic", "partition", "offset", raw.alias("raw"),
                F.from_json(raw, "id BIGINT, kind STRING").alias("e"))
        .select("topic", "partition", "offset", "raw", "e.id", "e.kind")
    )
"""

SQL_PIPELINE = """
CREATE OR REFRESH STREAMING TABLE bronze AS
SELECT * FROM STREAM read_kafka(
  bootstrapServers => '${bootstrap}',
  subscribe => '${topic}',
  startingOffsets => 'earliest',
  maxOffsetsPerTrigger => 7,
  `kafka.client.id` => concat('headwater-', 'tests')
);

CREATE OR REFRESH STREAMING TABLE silver (
  CONSTRAINT parsed EXPECT (id IS NOT NULL) ON VIOLATION QUARANTINE,
  CONSTRAINT not_heartbeat EXPECT (kind <> 'heartbeat') ON VIOLATION DROP ROW
) AS
SELECT topic, `partition`, `offset`, raw, e.id, e.kind
FROM (
  SELECT topic, `partition`, `offset`, CAST(value AS STRING) AS raw,
         from_json(CAST(value AS STRING), 'id BIGINT, kind STRING') AS e
  FROM STREAM(bronze)
);
"""


def records(start: int, stop: int) -> tuple[list[str], dict[str, list]]:
    """Values ``start..stop-1``: every 5th does not parse, every 7th (that parses) is a
    heartbeat, the rest are events. Returns the values and what each kind should give."""
    values: list[str] = []
    want: dict[str, list] = {"good": [], "bad": [], "heartbeat": []}
    for i in range(start, stop):
        if i % 5 == 0:
            value = f'{{"id": {i}, "kind": '  # cut short: not JSON
            want["bad"].append(value)
        elif i % 7 == 0:
            value = json.dumps({"id": i, "kind": "heartbeat"})
            want["heartbeat"].append(i)
        else:
            value = json.dumps({"id": i, "kind": "even" if i % 2 == 0 else "odd"})
            want["good"].append(i)
        values.append(value)
    return values, want


def project(tmp_path: Path, broker, topic: str, file: str, text: str) -> tuple[Path, str]:
    """A pipeline folder reading ``topic``; returns it and its database."""
    root = tmp_path / "pipeline"
    database = f"kafka_pl_{uuid.uuid4().hex[:8]}"
    (root / "transformations").mkdir(parents=True)
    (root / "transformations" / file).write_text(textwrap.dedent(text))
    spec = {
        "name": database,
        "storage": str(root / "storage"),
        "database": database,
        "configuration": {"bootstrap": broker.bootstrap, "topic": topic},
        "libraries": [{"glob": {"include": "transformations/**"}}],
    }
    (root / "spark-pipeline.yml").write_text(yaml.safe_dump(spec))
    return root, database


def run(spark, root: Path):
    from headwater import pipelines

    result = pipelines.run(root, spark)
    assert result.ok, [(f.name, f.error) for f in result.failed()]
    return result


def quality(result, flow: str) -> dict:
    found = [
        e.details for e in result.events if e.event_type == "flow_progress" and e.flow_name == flow
    ]
    return found[-1]["data_quality"]


def check_update(spark, database: str, result, want: dict[str, list], new: int) -> None:
    """After an update: bronze holds every record once, silver every good one once, the
    quarantine every bad one once with its coordinates, heartbeats were counted as dropped;
    this update read ``new`` records."""
    bronze = spark.table(f"{database}.bronze")
    total = len(want["good"]) + len(want["bad"]) + len(want["heartbeat"])
    assert bronze.count() == total
    assert bronze.select("partition", "offset").distinct().count() == total
    assert bronze.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int>"
    )
    assert result.flows["bronze"].num_output_rows == new

    silver = spark.table(f"{database}.silver")
    assert sorted(r.id for r in silver.select("id").collect()) == sorted(want["good"])

    aside = spark.table(f"{database}.silver_quarantine").collect()
    assert sorted(r.raw for r in aside) == sorted(want["bad"])
    assert all(list(r._failed_expectations) == ["parsed"] for r in aside)
    # The coordinates lead back to the very record in bronze.
    kept = {(r.topic, r.partition, r.offset): bytes(r.value).decode() for r in bronze.collect()}
    assert all(kept[(r.topic, r.partition, r.offset)] == r.raw for r in aside)

    dropped = spark.sql(
        f"SELECT count(*) AS n FROM {database}.bronze "
        "WHERE CAST(value AS STRING) LIKE '%heartbeat%'"
    ).first()
    assert dropped.n == len(want["heartbeat"])
    assert len(want["good"]) + len(aside) + dropped.n == total  # nothing unaccounted for


def ingest_twice(spark, broker, topic: str, root: Path, database: str) -> None:
    values, want = records(0, 40)
    broker.produce(topic, values, key=lambda i: str(i))
    first = run(spark, root)
    check_update(spark, database, first, want, new=40)
    q = quality(first, "silver")
    assert q["dropped_records"] == len(want["heartbeat"])
    assert q["quarantined_records"] == len(want["bad"])

    more, extra = records(40, 65)
    broker.produce(topic, more, key=lambda i: str(i))
    second = run(spark, root)
    want = {k: want[k] + extra[k] for k in want}
    check_update(spark, database, second, want, new=25)
    q = quality(second, "silver")
    assert q["dropped_records"] == len(extra["heartbeat"])
    assert q["quarantined_records"] == len(extra["bad"])

    third = run(spark, root)  # nothing new: nothing read, nothing written twice
    check_update(spark, database, third, want, new=0)


def test_python_pipeline_reads_a_topic_with_quarantine_and_drop(spark, broker, topic, tmp_path):
    root, database = project(tmp_path, broker, topic, "pipeline.py", PY_PIPELINE)
    ingest_twice(spark, broker, topic, root, database)


def test_sql_pipeline_reads_a_topic_with_read_kafka(spark, broker, topic, tmp_path):
    root, database = project(tmp_path, broker, topic, "pipeline.sql", SQL_PIPELINE)
    ingest_twice(spark, broker, topic, root, database)


def test_sql_batch_read_kafka_into_a_materialized_view(spark, broker, topic, tmp_path):
    """Without ``STREAM``: a batch read of what the topic holds, ``endingOffsets`` taken."""
    values, _ = records(0, 12)
    broker.produce(topic, values)
    text = """
    CREATE MATERIALIZED VIEW events AS
    SELECT CAST(value AS STRING) AS raw FROM read_kafka(
      bootstrapServers => '${bootstrap}', subscribe => '${topic}',
      startingOffsets => 'earliest', endingOffsets => 'latest');
    """
    root, database = project(tmp_path, broker, topic, "view.sql", text)
    run(spark, root)
    view = spark.table(f"{database}.events")
    assert sorted(r.raw for r in view.collect()) == sorted(values)

    more, _ = records(12, 20)
    broker.produce(topic, more)
    run(spark, root)  # a topic has no Delta version: the view is recomputed, never skipped
    view = spark.table(f"{database}.events")
    assert sorted(r.raw for r in view.collect()) == sorted(values + more)


def test_read_kafka_option_errors_name_the_file_before_anything_runs(
    spark, broker, topic, tmp_path
):
    text = """
    CREATE OR REFRESH STREAMING TABLE bronze AS
    SELECT * FROM STREAM read_kafka(bootstrapServers => '${bootstrap}', topic => '${topic}');
    """
    root, _ = project(tmp_path, broker, topic, "bad.sql", text)
    from headwater import pipelines

    with pytest.raises(PipelineDefinitionError) as e:
        pipelines.run(root, spark)
    message = str(e.value)
    assert "bad.sql:3" in message
    assert "read_kafka: unknown option 'topic'" in message
