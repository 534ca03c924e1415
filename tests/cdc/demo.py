"""The change-data-capture demo: a real PostgreSQL, Debezium's connector on Kafka Connect
and the KRaft broker started in a temporary folder (``tests/cdc/chain.py``), a workload of
inserts, updates and deletes in the database, and a SQL pipeline (``read_debezium`` and
AUTO CDC, as docs/cdc.md writes it) keeping an SCD1 mirror and an SCD2 history; after each
round it shows both catching up and checks the mirror against the database, then stops
everything and removes the folder. Runs in the cdc tier's environment (pyspark 4.2 with
Spark's Kafka connector, the cdc jars, PostgreSQL installed)::

    PYTHONPATH=$PWD/src .venv-kafka/bin/python -m tests.cdc.demo [--rounds 3]
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tests.cdc.chain import connector_config, kafka_connect, postgres_server
from tests.cdc.test_cdc_chain import project, wait_for_messages
from tests.jars import tier_jars
from tests.kafka.broker import kafka_broker

NAME = "shop"
TOPIC = f"{NAME}.public.accounts"
PIPELINE = """
CREATE OR REFRESH STREAMING TABLE accounts_changes AS
SELECT * FROM STREAM read_debezium(bootstrapServers => '${bootstrap}', subscribe => '${topic}',
                                   startingOffsets => 'earliest');

CREATE OR REFRESH STREAMING TABLE accounts;
CREATE FLOW accounts_mirror AS AUTO CDC INTO accounts FROM STREAM(accounts_changes)
  KEYS (id) APPLY AS DELETE WHEN _op = 'd' SEQUENCE BY _sequence
  COLUMNS * EXCEPT (_op, _sequence, _unavailable, _ts_ms) STORED AS SCD TYPE 1;

CREATE OR REFRESH STREAMING TABLE accounts_history;
CREATE FLOW accounts_versions AS AUTO CDC INTO accounts_history FROM STREAM(accounts_changes)
  KEYS (id) APPLY AS DELETE WHEN _op = 'd' SEQUENCE BY _sequence
  COLUMNS * EXCEPT (_op, _sequence, _unavailable, _ts_ms) STORED AS SCD TYPE 2;
"""
TABLE = "CREATE TABLE accounts (id INT PRIMARY KEY, owner TEXT, balance NUMERIC(12,2))"
FIRST_ROWS = 10


def workload(postgres, rng: random.Random, next_id: int) -> tuple[int, int]:
    """A round of transactions: inserts, updates and deletes of one row each. Returns the
    messages they put on the topic (a delete adds its tombstone) and the next free id."""
    ids = [row[0] for row in postgres.rows("SELECT id FROM accounts")]
    messages = 0
    with postgres.connect() as conn:
        for _ in range(3):
            with conn.transaction():
                for _ in range(rng.randint(1, 4)):
                    kind = rng.choice(
                        ["insert", "update", "update", "delete"] if ids else ["insert"]
                    )
                    if kind == "insert":
                        conn.execute("INSERT INTO accounts VALUES (%s, %s, %s)",
                                     (next_id, f"owner{next_id}", rng.randint(0, 99999) / 100))  # fmt: skip
                        ids.append(next_id)
                        next_id += 1
                    elif kind == "update":
                        conn.execute("UPDATE accounts SET balance = balance + %s WHERE id = %s",
                                     (rng.randint(1, 9999) / 100, rng.choice(ids)))  # fmt: skip
                    else:
                        gone = ids.pop(rng.randrange(len(ids)))
                        conn.execute("DELETE FROM accounts WHERE id = %s", (gone,))
                        messages += 1
                    messages += 1
    return messages, next_id


def run(
    spark, workdir: Path, rounds: int = 3, seed: int = 7, say: Callable[[str], None] = print
) -> list[bool]:
    """The demo in ``workdir`` with ``spark`` (a session with Spark's Kafka connector);
    returns, per round, whether the mirror equalled the database and the history's open
    versions the mirror."""
    from headwater import pipelines

    rng = random.Random(seed)
    began = time.monotonic()
    with kafka_broker(":".join(tier_jars("kafka-broker"))) as broker, postgres_server() as pg:
        pg.execute(TABLE, f"INSERT INTO accounts SELECT i, 'owner' || i, i * 10.5 "
                          f"FROM generate_series(1, {FIRST_ROWS}) i")  # fmt: skip
        root = project(workdir, NAME, broker.bootstrap, TOPIC, PIPELINE, file="cdc.sql")
        config = connector_config(NAME, pg, ["public.accounts"])
        with kafka_connect(":".join(tier_jars("cdc")), broker.bootstrap, {NAME: config}):
            say(f"PostgreSQL, Kafka Connect (Debezium) and the broker up in "
                f"{time.monotonic() - began:.1f}s")  # fmt: skip
            expected, next_id, results = FIRST_ROWS, FIRST_ROWS + 1, []
            for round_ in range(rounds + 1):
                if round_:
                    messages, next_id = workload(pg, rng, next_id)
                    expected += messages
                    say(f"\n-- round {round_}: {messages} changes written to the database")
                else:
                    say(f"\n-- initial snapshot of {FIRST_ROWS} rows")
                wait_for_messages(broker, TOPIC, expected)
                result = pipelines.run(root, spark)
                if not result.ok:
                    raise RuntimeError(
                        f"the pipeline failed: {[(f.name, f.error) for f in result.failed()]}"
                    )
                results.append(show(spark, pg, say))
    say("\nstopped PostgreSQL, Kafka Connect and the broker")
    return results


def show(spark, postgres, say: Callable[[str], None]) -> bool:
    database = postgres.rows("SELECT id, owner, balance FROM accounts ORDER BY id")
    mirror = [tuple(r) for r in spark.table(f"{NAME}.accounts").orderBy("id").collect()]
    history = spark.table(f"{NAME}.accounts_history")
    current = [tuple(r) for r in history.where("__END_AT IS NULL").drop("__START_AT", "__END_AT")
               .orderBy("id").collect()]  # fmt: skip
    closed = history.where("__END_AT IS NOT NULL").count()
    same = mirror == database and current == database
    say(f"database {len(database)} rows; SCD1 mirror {len(mirror)} rows; SCD2 history "
        f"{len(current)} open and {closed} closed versions; mirror equals the database: "
        f"{'yes' if same else 'NO'}")  # fmt: skip
    busiest = history.groupBy("id").count().orderBy("count", "id", ascending=False).first()
    if busiest is not None:
        say(f"history of id {busiest.id}:")
        for v in history.where(f"id = {busiest.id}").orderBy("__START_AT").collect():
            say(f"  {v.owner:>10} {v.balance!s:>10}  open={v['__END_AT'] is None}")
    return same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import headwater

    workdir = Path(tempfile.mkdtemp(prefix="headwater-cdc-demo-"))
    spark = headwater.session("headwater-cdc-demo", master="local[2]",
                              warehouse=str(workdir / "warehouse"),
                              conf={"spark.jars": ",".join(tier_jars("kafka"))})  # fmt: skip
    spark.sparkContext.setLogLevel("ERROR")
    try:
        results = run(spark, workdir, args.rounds)
    finally:
        spark.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    raise SystemExit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
