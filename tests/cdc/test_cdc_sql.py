"""The real chain read in SQL: ``read_debezium(...)`` in a SQL pipeline, its change rows
applied with AUTO CDC into an SCD1 mirror and an SCD2 history that equal the database
after each update (initial snapshot, then a multi-row transaction with an insert, updates
of a NUMERIC, a primary-key update and a delete)."""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.cdc.chain import connector_config, kafka_connect
from tests.cdc.test_cdc_chain import project, wait_for_messages

PIPELINE = """
CREATE OR REFRESH STREAMING TABLE accounts_changes AS
SELECT * FROM STREAM read_debezium(
  bootstrapServers => '${bootstrap}',
  subscribe => '${topic}',
  startingOffsets => 'earliest');

CREATE OR REFRESH STREAMING TABLE accounts;
CREATE FLOW accounts_cdc AS AUTO CDC INTO accounts FROM STREAM(accounts_changes)
  KEYS (id)
  APPLY AS DELETE WHEN _op = 'd'
  APPLY AS TRUNCATE WHEN _op = 't'
  SEQUENCE BY _sequence
  COLUMNS * EXCEPT (_op, _sequence, _unavailable, _ts_ms)
  UNAVAILABLE COLUMNS IN _unavailable
  STORED AS SCD TYPE 1;

CREATE OR REFRESH STREAMING TABLE accounts_history;
CREATE FLOW accounts_history_cdc AS AUTO CDC INTO accounts_history
  FROM STREAM(accounts_changes) WHERE _op <> 't'
  KEYS (id)
  APPLY AS DELETE WHEN _op = 'd'
  SEQUENCE BY _sequence
  COLUMNS * EXCEPT (_op, _sequence, _unavailable, _ts_ms)
  UNAVAILABLE COLUMNS IN _unavailable
  STORED AS SCD TYPE 2;
"""
TABLE = "CREATE TABLE accounts (id INT PRIMARY KEY, owner TEXT, balance NUMERIC(12,2))"
ROWS = "INSERT INTO accounts SELECT i, chr(96 + i), i * 100.25 FROM generate_series(1, 3) i"
STEP = [  # one transaction: 5 messages (the key update is a delete, its tombstone, a create)
    "INSERT INTO accounts VALUES (4, 'd', 4.04)",
    "UPDATE accounts SET balance = balance + 0.01 WHERE id = 1",
    "UPDATE accounts SET id = 30 WHERE id = 3",
]


def update_and_compare(spark, postgres, root: Path, name: str) -> None:
    """One update of the pipeline at ``root``; then its SCD1 target ``accounts`` and the
    current rows of its SCD2 target ``accounts_history`` equal the database table."""
    from headwater import pipelines

    result = pipelines.run(root, spark)
    assert result.ok, [(f.name, f.error) for f in result.failed()]
    want = postgres.rows("SELECT id, owner, balance FROM accounts ORDER BY id")
    for table, where in [("accounts", "true"), ("accounts_history", "__END_AT IS NULL")]:
        got = spark.table(f"{name}.{table}").where(where).orderBy("id").collect()
        assert [(r.id, r.owner, r.balance) for r in got] == want, table


def test_read_debezium_in_a_sql_pipeline_mirrors_and_records_the_database(
    spark, broker, postgres, connect_classpath, tmp_path: Path
):
    name = f"s{uuid.uuid4().hex[:8]}"
    postgres.execute(TABLE, ROWS)
    topic = f"{name}.public.accounts"
    root = project(tmp_path, name, broker.bootstrap, topic, PIPELINE, file="cdc.sql")
    config = connector_config(name, postgres, ["public.accounts"])
    try:
        with kafka_connect(connect_classpath, broker.bootstrap, {name: config}):
            wait_for_messages(broker, topic, 3)
            update_and_compare(spark, postgres, root, name)
            postgres.execute(*STEP)
            wait_for_messages(broker, topic, 3 + 5)
            update_and_compare(spark, postgres, root, name)
        history = spark.table(f"{name}.accounts_history").where("id = 1").orderBy("__START_AT")
        assert [float(r.balance) for r in history.collect()] == [100.25, 100.26]
        assert spark.table(f"{name}.accounts_history").where("id = 3").first()["__END_AT"]
    finally:
        postgres.execute("DROP TABLE accounts")
