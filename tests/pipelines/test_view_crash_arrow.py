"""Exactly once under SIGKILL when a view's refresh runs in Arrow on the driver: the
*group aggregate* technique's small-change path writes the view's new rows as one Parquet
file and commits it with the refresh's record in one Delta commit, no Spark job. An
update is killed just before that commit (the file written, not committed) and just
after it (committed, the update not finished), after appends and after updates taken back
through the change data feed; then the update is run to the end: the view equals its
query recomputed from scratch, every group once with its right counts, sums and averages
(whose kept state is written before the commit, and named by it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from test_crash import land, project, run_here, shared_warehouse

from tests.conftest import REPO

PIPELINE = """
from pyspark import pipelines as dp
from pyspark.sql import functions as F

@dp.table(table_properties={"delta.enableChangeDataFeed": "true"})
def bronze():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaHints", "id bigint, region string")
        .load(spark.conf.get("source_dir") + "/orders")
    )

@dp.materialized_view
def totals():
    return spark.read.table("bronze").groupBy("region").agg(
        F.count("*").alias("n"), F.sum("id").alias("ids"), F.count("id").alias("counted"),
        F.avg("id").alias("mean"),
    )
"""

# An update whose Arrow refresh stops ``moment`` ("before" or "after") its commit: it
# marks the moment in a file and waits there to be killed. The commit itself is the real
# one, the hook only holds the process at that point.
HELD = textwrap.dedent(
    """
    import os, sys, time, headwater
    from headwater import pipelines
    from headwater.engines import headwater_writes
    root, warehouse, moment, marker = sys.argv[1:5]
    real = headwater_writes.overwrite_arrow

    def overwrite_arrow(rows, read, user_metadata, commit):
        def held(txn):
            if moment == "before":
                open(marker, "w").close()
                time.sleep(300)
            version = commit(txn)
            if moment == "after":
                open(marker, "w").close()
                time.sleep(300)
            return version
        return real(rows, read, user_metadata, held)

    headwater_writes.overwrite_arrow = overwrite_arrow
    spark = headwater.session(master="local[2]", warehouse=warehouse)
    result = pipelines.run(root, spark)
    print("STATE", result.state, flush=True)
    """
)

QUERY = (
    "SELECT region, count(*) AS n, sum(id) AS ids, count(id) AS counted, avg(id) AS mean "
    "FROM {db}.bronze GROUP BY region"
)


def killed_at_commit(root, warehouse: str, moment: str, marker) -> None:
    """An update SIGKILLed while its view's Arrow refresh is held ``moment`` its commit;
    the hold must be reached (the refresh ran in Arrow)."""
    marker.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", HELD, str(root), warehouse, moment, str(marker)],
        cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 240
    while not marker.exists():
        assert proc.poll() is None, f"the update ended without refreshing in Arrow: {moment}"
        assert time.monotonic() < deadline, "the view's Arrow refresh never reached its commit"
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def update_bronze(spark, database: str, where: str) -> None:
    """Rows of bronze updated (a region renamed, ids changed) by the test's own session (no
    driver started for it): the view takes their old images back from their groups and
    adds the new ones."""
    spark.sql(f"UPDATE {database}.bronze SET id = id + 1, region = 'apac' WHERE {where}")


@pytest.mark.slow
def test_arrow_refresh_killed_at_its_commit_then_rerun_equals_a_recompute(spark, tmp_path):
    root, database, _ = project(tmp_path, PIPELINE, "arrowcrash")
    warehouse = shared_warehouse(spark)
    orders = tmp_path / "landing" / "orders"
    marker = tmp_path / "held"
    for i in range(20):
        land(orders, i)
    run_here(spark, root)
    landed = 20
    for moment, where in (
        ("before", None),  # appended rows
        ("after", None),
        ("before", "id % 7 = 0"),  # appended and updated rows (taken back, then added)
        ("after", "id % 5 = 1"),
    ):
        land(orders, landed)
        landed += 1
        if where is not None:
            update_bronze(spark, database, where)
        killed_at_commit(root, warehouse, moment, marker)

    run_here(spark, root)
    want = spark.sql(QUERY.format(db=database))
    view = spark.table(f"{database}.totals")
    have = sorted(map(list, view.select(*want.columns).collect()))
    want = sorted(map(list, want.collect()))
    assert have == want
    assert {r[0] for r in want} == {"eu", "us", "apac"}
    assert sum(r[1] for r in want) == landed * 20
