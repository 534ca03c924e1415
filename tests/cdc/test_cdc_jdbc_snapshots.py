"""A database without Debezium: ``create_auto_cdc_from_snapshot_flow`` over Spark's JDBC
source reading the chain's PostgreSQL (the driver of the ``jdbc-postgres`` jars), as
docs/cdc.md shows it. The SCD1 flow's source is a view of the pipeline reading the table
(a snapshot at each update); the SCD2 flow's is the platform's
``next_snapshot_and_version`` function, versioned by the database's WAL position (None
when nothing was written since the last snapshot). After each update with inserts,
updates, deletes and a key update in the database between them, the mirror equals the
table and the history holds each key's versions."""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.cdc.test_cdc_chain import project
from tests.cdc.test_cdc_sql import ROWS, TABLE, update_and_compare

PIPELINE = """
import dlt

def jdbc(**options):
    return (spark.read.format("jdbc").option("url", spark.conf.get("url"))
            .option("driver", "org.postgresql.Driver").option("user", "postgres")
            .options(**options).load())

@dlt.view
def accounts_snapshot():
    return jdbc(dbtable="public.accounts")

dlt.create_streaming_table("accounts")
dlt.create_auto_cdc_from_snapshot_flow(
    target="accounts", source="accounts_snapshot", keys=["id"], stored_as_scd_type=1
)

def next_snapshot_and_version(latest_version):
    position = jdbc(query="SELECT pg_current_wal_lsn() - '0/0' AS at").first().at
    if latest_version is not None and position <= latest_version:
        return None  # nothing written since the last snapshot
    return jdbc(dbtable="public.accounts"), int(position)

dlt.create_streaming_table("accounts_history")
dlt.create_auto_cdc_from_snapshot_flow(
    target="accounts_history", source=next_snapshot_and_version, keys=["id"],
    stored_as_scd_type=2,
)
"""
CHANGES = [
    [],
    ["INSERT INTO accounts VALUES (4, 'd', 4.04)",
     "UPDATE accounts SET balance = 1.01 WHERE id = 1",
     "DELETE FROM accounts WHERE id = 2"],
    ["UPDATE accounts SET id = 30 WHERE id = 3",
     "UPDATE accounts SET owner = 'aa', balance = 1.02 WHERE id = 1",
     "INSERT INTO accounts VALUES (2, 'b2', 2.02)"],
]  # fmt: skip


def test_snapshots_read_with_jdbc_mirror_and_record_the_database(spark, postgres, tmp_path: Path):
    from headwater import pipelines

    name = f"j{uuid.uuid4().hex[:8]}"
    postgres.execute(TABLE, ROWS)
    root = project(tmp_path, name, "", "", PIPELINE)
    spark.conf.set("url", postgres.jdbc_url)
    try:
        for statements in CHANGES:
            if statements:
                postgres.execute(*statements)
            update_and_compare(spark, postgres, root, name)
        history = spark.table(f"{name}.accounts_history")
        versions = history.orderBy("id", "__START_AT").collect()
        assert [(r.id, r.owner, float(r.balance), r["__END_AT"] is None) for r in versions] == [
            (1, "a", 100.25, False), (1, "a", 1.01, False), (1, "aa", 1.02, True),
            (2, "b", 200.5, False), (2, "b2", 2.02, True),
            (3, "c", 300.75, False), (4, "d", 4.04, True), (30, "c", 300.75, True),
        ]  # fmt: skip
        # A fourth update with nothing written: the function returns None, no new version.
        assert pipelines.run(root, spark).ok
        assert spark.table(f"{name}.accounts_history").count() == len(versions)
    finally:
        postgres.execute("DROP TABLE accounts")
