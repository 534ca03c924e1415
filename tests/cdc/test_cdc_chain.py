"""The real chain: PostgreSQL -> Debezium on Kafka Connect -> Kafka -> a pipeline reading
the topic with headwater.debezium and applying it with AUTO CDC (SCD1 and SCD2). After
every update the SCD1 target equals the database table and the SCD2 target holds each
key's whole history (tests/cdc/history.py), over the initial snapshot, multi-row
transactions, a primary-key update, deletes with REPLICA IDENTITY DEFAULT and FULL,
numeric and time types."""

from __future__ import annotations

import datetime as dt
import time
import uuid
from pathlib import Path

import yaml

from tests.cdc.chain import connector_config, kafka_connect
from tests.cdc.history import History, assert_targets_match

PIPELINE = """
import dlt
from headwater import debezium

META = ["_op", "_sequence", "_unavailable", "_ts_ms"]

@dlt.table
def accounts_changes():
    return debezium.changes(
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", spark.conf.get("bootstrap"))
        .option("subscribe", spark.conf.get("topic"))
        .option("startingOffsets", "earliest")
        .load()
    )

dlt.create_streaming_table("accounts")
dlt.create_auto_cdc_flow(
    target="accounts", source="accounts_changes", keys=["id"], sequence_by="_sequence",
    apply_as_deletes="_op = 'd'", apply_as_truncates="_op = 't'",
    except_column_list=META, stored_as_scd_type=1,
)

dlt.create_streaming_table("accounts_history")
dlt.create_auto_cdc_flow(
    target="accounts_history", source="accounts_changes", keys=["id"],
    sequence_by="_sequence", where="_op <> 't'", apply_as_deletes="_op = 'd'",
    except_column_list=META, stored_as_scd_type=2,
)
"""
TABLE = """CREATE TABLE accounts (id INT PRIMARY KEY, owner TEXT, balance NUMERIC(12,2),
    opened TIMESTAMP, seen TIMESTAMPTZ)"""
COLUMNS = "id, owner, balance, opened, seen"
STEPS = [
    # (transactions, messages they put on the topic: a delete adds its tombstone)
    ([["UPDATE accounts SET balance = balance + 0.01 WHERE id = 1",
       "INSERT INTO accounts VALUES (6, 'f', -6.66, '1970-01-01 00:00:00', now())",
       "UPDATE accounts SET owner = 'bb' WHERE id = 2",
       "UPDATE accounts SET balance = 0 WHERE id = 2"]], 4),
    ([["UPDATE accounts SET id = 30 WHERE id = 3"],  # delete + tombstone + create
      ["DELETE FROM accounts WHERE id = 4"]], 5),
    ([["ALTER TABLE accounts REPLICA IDENTITY FULL"],
      ["UPDATE accounts SET balance = 1234567890.12, opened = '2262-04-11 23:47:16.854775'"
       " WHERE id = 5"],
      ["DELETE FROM accounts WHERE id = 6"]], 3),
]  # fmt: skip


def utc(row: tuple) -> tuple:
    """A row as Spark reads it back: the ``timestamptz`` in UTC, without its zone."""
    return (*row[:4], row[4].astimezone(dt.timezone.utc).replace(tzinfo=None))


def wait_for_messages(broker, topic: str, count: int, timeout: float = 60) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(broker.client_conf(**{"group.id": "watch"}))
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            try:
                _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=2)
            except Exception:
                high = 0
            if high >= count:
                return
            time.sleep(0.2)
    finally:
        consumer.close()
    raise AssertionError(f"{topic} holds fewer than {count} messages after {timeout}s")


def project(
    tmp_path: Path, name: str, bootstrap: str, topic: str, pipeline: str, file: str = "cdc.py"
) -> Path:
    """A pipeline folder with ``pipeline`` (Python, or SQL in a ``.sql`` ``file``) reading
    ``topic`` (the configuration's ``topic``, ``bootstrap``)."""
    root = tmp_path / "pipeline"
    (root / "transformations").mkdir(parents=True)
    (root / "transformations" / file).write_text(pipeline)
    spec = {
        "name": name, "storage": str(root / "storage"), "database": name,
        "configuration": {"bootstrap": bootstrap, "topic": topic},
        "libraries": [{"glob": {"include": "transformations/**"}}],
    }  # fmt: skip
    (root / "spark-pipeline.yml").write_text(yaml.safe_dump(spec))
    return root


def test_scd1_mirrors_and_scd2_records_the_database(
    spark, broker, postgres, connect_classpath, tmp_path: Path
):
    from headwater import pipelines

    spark.conf.set("spark.sql.session.timeZone", "UTC")
    name = f"c{uuid.uuid4().hex[:8]}"
    history = History("accounts", COLUMNS, utc)
    history.execute(
        postgres,
        TABLE,
        "INSERT INTO accounts SELECT i, chr(96 + i), i * 100.25, "
        "'2024-01-02 03:04:05.123456'::timestamp + i * interval '1 day', "
        "'2024-01-02 03:04:05+02'::timestamptz FROM generate_series(1, 5) i",
    )
    topic = f"{name}.public.accounts"
    root = project(tmp_path, name, broker.bootstrap, topic, PIPELINE)
    config = connector_config(name, postgres, ["public.accounts"])
    with kafka_connect(connect_classpath, broker.bootstrap, {name: config}):
        expected = 5
        wait_for_messages(broker, topic, expected)
        for step in [([], 0), *STEPS]:
            transactions, messages = step
            for statements in transactions:
                history.execute(postgres, *statements)
            expected += messages
            wait_for_messages(broker, topic, expected)
            result = pipelines.run(root, spark)
            assert result.ok, [(f.name, f.error) for f in result.failed()]
            assert_targets_match(spark, postgres, f"{name}.accounts",
                                 f"{name}.accounts_history", history)  # fmt: skip
    postgres.execute("DROP TABLE accounts")
