"""Debezium change events on Kafka applied with AUTO CDC, in Python and in SQL.

One table's change history (snapshot reads, inserts, updates, deletes with their
tombstones, a truncate delivered early, a key that comes back) is produced to two topics of 3 partitions:
once in order (each key on its own partition, as Debezium does), and shuffled over the
partitions with repeats and late events. One pipeline decodes and flattens each topic and
applies it to an SCD1 and an SCD2 target; after three updates with events arriving
between them, the targets of both deliveries are exactly equal, and equal to applying the
history in ``lsn`` order (``tests/kafka/debezium_history.py``).
"""

from __future__ import annotations

import random
import textwrap
import uuid
from pathlib import Path

import yaml

from tests.kafka import debezium_history as h

# The recipe of docs/kafka.md, "Change data from a database (Debezium)".
PY_PIPELINE = """
import dlt
from pyspark.sql import functions as F

ROW = "id BIGINT, name STRING, city STRING"
ENVELOPE = f"before STRUCT<{ROW}>, after STRUCT<{ROW}>, op STRING, ts_ms BIGINT, source STRUCT<lsn BIGINT>"

@dlt.table
def users_changes():
    e = F.from_json(F.col("value").cast("string"), ENVELOPE)
    return (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", spark.conf.get("bootstrap"))
        .option("subscribe", spark.conf.get("topic"))
        .option("startingOffsets", "earliest")
        .load()
        .where("value IS NOT NULL")  # the tombstone after each delete
        .select(e.alias("e"))
        .select(
            F.coalesce("e.after.id", "e.before.id").alias("id"),  # a delete's key is in before
            "e.after.name",
            "e.after.city",
            "e.op",
            F.col("e.source.lsn").alias("lsn"),
            "e.ts_ms",
        )
    )

dlt.create_streaming_table("users")
dlt.create_auto_cdc_flow(
    target="users",
    source="users_changes",
    keys=["id"],
    sequence_by="lsn",
    apply_as_deletes="op = 'd'",
    apply_as_truncates="op = 't'",
    except_column_list=["op", "lsn", "ts_ms"],
    stored_as_scd_type=1,
)

dlt.create_streaming_table("users_history")
dlt.create_auto_cdc_flow(
    target="users_history",
    source="users_changes",
    keys=["id"],
    sequence_by="lsn",
    where="op <> 't'",  # a truncate has no key and no place in a history
    apply_as_deletes="op = 'd'",
    except_column_list=["op", "lsn", "ts_ms"],
    stored_as_scd_type=2,
)
"""

SQL_PIPELINE = """
CREATE OR REFRESH STREAMING TABLE users_changes AS
SELECT coalesce(e.after.id, e.before.id) AS id, e.after.name, e.after.city,
       e.op, e.source.lsn AS lsn, e.ts_ms
FROM (
  SELECT from_json(CAST(value AS STRING),
    'before STRUCT<id BIGINT, name STRING, city STRING>, after STRUCT<id BIGINT, name STRING, city STRING>, op STRING, ts_ms BIGINT, source STRUCT<lsn BIGINT>') AS e
  FROM STREAM read_kafka(
    bootstrapServers => '${bootstrap}',
    subscribe => '${topic}',
    startingOffsets => 'earliest')
  WHERE value IS NOT NULL
);

CREATE OR REFRESH STREAMING TABLE users;
CREATE FLOW users_cdc AS AUTO CDC INTO users FROM STREAM(users_changes)
  KEYS (id)
  APPLY AS DELETE WHEN op = 'd'
  APPLY AS TRUNCATE WHEN op = 't'
  SEQUENCE BY lsn
  COLUMNS * EXCEPT (op, lsn, ts_ms)
  STORED AS SCD TYPE 1;

CREATE OR REFRESH STREAMING TABLE users_history;
CREATE FLOW users_history_cdc AS AUTO CDC INTO users_history
  FROM STREAM(users_changes) WHERE op <> 't'
  KEYS (id)
  APPLY AS DELETE WHEN op = 'd'
  SEQUENCE BY lsn
  COLUMNS * EXCEPT (op, lsn, ts_ms)
  STORED AS SCD TYPE 2;
"""

DELIVERIES = ("ordered", "shuffled")
LANGUAGES = {"py": PY_PIPELINE, "sql": SQL_PIPELINE}
UPDATES = 2


def recipe(language: str, delivery: str) -> str:
    """The recipe in one language for one delivery's topic, its datasets named after
    both (``py_shuffled``, ``py_shuffled_history``, ...)."""
    return (
        textwrap.dedent(LANGUAGES[language])
        .replace("users", f"{language}_{delivery}")
        .replace('"topic"', f'"{delivery}_topic"')
        .replace("${topic}", f"${{{delivery}_topic}}")
    )


def project(tmp_path: Path, broker, topics: dict[str, str]) -> tuple[Path, str]:
    """One pipeline with the recipe in Python and in SQL for each delivery's topic (one
    update runs them all); returns its folder and database."""
    root = tmp_path / "pipeline"
    database = f"kafka_cdc_{uuid.uuid4().hex[:8]}"
    (root / "transformations").mkdir(parents=True)
    for language in LANGUAGES:
        for delivery in DELIVERIES:
            file = root / "transformations" / f"{delivery}.{language}"
            file.write_text(recipe(language, delivery))
    spec = {
        "name": database,
        "storage": str(root / "storage"),
        "database": database,
        "configuration": {
            "bootstrap": broker.bootstrap,
            **{f"{d}_topic": topic for d, topic in topics.items()},
        },
        "libraries": [{"glob": {"include": "transformations/**"}}],
    }
    (root / "spark-pipeline.yml").write_text(yaml.safe_dump(spec))
    return root, database


def produce(broker, topic: str, changes: list[h.Change], partition) -> None:
    """Each change (and a delete's tombstone) to the partition ``partition(change)``."""
    producer = broker.producer()
    for change in changes:
        for key, value in h.records([change]):
            producer.produce(topic, key=key, value=value, partition=partition(change))
    assert producer.flush(30) == 0


def rows(spark, name: str) -> list[tuple]:
    return sorted((tuple(r) for r in spark.table(name).collect()), key=str)


def test_the_shuffled_delivery_is_late_and_repeated():
    """The delivery the pipelines are tested on has what the test claims: events after
    newer ones of their key, some an update later, and repeats."""
    changes = h.history()
    deliveries = h.shuffled(changes, UPDATES)
    after_newer, across = h.late(deliveries)
    assert after_newer >= 10 and across >= 3
    sent = [c for d in deliveries for c in d]
    assert len(sent) - len(set(sent)) == 4 * UPDATES
    assert set(sent) == set(changes)
    assert h.late(h.in_order(changes, UPDATES)) == (0, 0)
    # the truncate comes first; a change older than it comes an update later for a key
    # no earlier delivery named (what the flow's memory of the truncate keeps out)
    (truncate,) = [c for c in changes if c.op == "t"]
    assert truncate in deliveries[0]
    first_keys = {c.id for c in deliveries[0]}
    assert any(c.lsn < truncate.lsn and c.id not in first_keys for c in deliveries[1])


def test_debezium_changes_in_any_delivery_give_the_same_scd1_and_scd2(spark, broker, tmp_path):
    from headwater import pipelines

    changes = h.history()
    plans = {"ordered": h.in_order(changes, UPDATES), "shuffled": h.shuffled(changes, UPDATES)}
    topics = {d: broker.create_topic(f"dbz_{d}_{uuid.uuid4().hex[:8]}", 3) for d in DELIVERIES}
    root, database = project(tmp_path, broker, topics)
    rng = random.Random(11)
    partition = {
        "ordered": lambda c: (c.id or 0) % 3,  # a key's changes on one partition, in order
        "shuffled": lambda c: rng.randrange(3),
    }
    for update in range(UPDATES):
        for d in DELIVERIES:
            produce(broker, topics[d], plans[d][update], partition[d])
        result = pipelines.run(root, spark)
        assert result.ok, [(f.name, f.error) for f in result.failed()]
        so_far = [c for part in plans["ordered"][: update + 1] for c in part]
        for language in LANGUAGES:
            table = f"{database}.{language}_ordered"
            assert rows(spark, table) == sorted(h.scd1(so_far), key=str)
            assert rows(spark, f"{table}_history") == sorted(h.scd2(so_far), key=str)

    scd1, scd2 = sorted(h.scd1(changes), key=str), sorted(h.scd2(changes), key=str)
    for language in LANGUAGES:
        for delivery in DELIVERIES:
            table = f"{database}.{language}_{delivery}"
            assert rows(spark, table) == scd1, table
            assert rows(spark, f"{table}_history") == scd2, table
        history = spark.table(f"{database}.{language}_shuffled_history")
        assert history.columns == ["id", "name", "city", "__START_AT", "__END_AT"]
