"""MERGE from foreachBatch is idempotent with txnAppId/txnVersion; a killed MERGE commits nothing."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from deltalake import DeltaTable as RsTable

from headwater.delta.tables import DeltaTable
from tests.conftest import REPO, run_python


def test_foreach_batch_merge_with_txn_confs_is_skipped_on_replay(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(3).selectExpr("id", "0 as n").write.format("delta").save(path)
    target = DeltaTable.forPath(spark, path)
    batch = spark.createDataFrame([(1, 1), (7, 1)], "id long, n int")

    def upsert(df, batch_id):
        df.sparkSession.conf.set("spark.databricks.delta.write.txnAppId", "upserts")
        df.sparkSession.conf.set("spark.databricks.delta.write.txnVersion", str(batch_id))
        try:
            (
                target.alias("t").merge(df.alias("s"), "t.id = s.id")
                .whenMatchedUpdate(set={"n": "t.n + s.n"}).whenNotMatchedInsertAll().execute()
            )  # fmt: skip
        finally:
            df.sparkSession.conf.unset("spark.databricks.delta.write.txnAppId")
            df.sparkSession.conf.unset("spark.databricks.delta.write.txnVersion")

    upsert(batch, 0)
    upsert(batch, 0)  # the same batch again after a crash: no second increment
    assert sorted(tuple(r) for r in target.toDF().collect()) == [(0, 0), (1, 1), (2, 0), (7, 1)]
    assert RsTable(path).transaction_version("upserts") == 0


MERGE_CHILD = textwrap.dedent(
    """
    import sys, headwater
    from headwater.delta.tables import DeltaTable
    path = sys.argv[1]
    spark = headwater.session(master="local[2]", warehouse=path + "_wh")
    src = spark.range(0, 200000, 2).selectExpr("id", "'merged' as v")
    print("STARTED", flush=True)
    (DeltaTable.forPath(spark, path).alias("t").merge(src.alias("s"), "t.id = s.id")
        .whenMatchedUpdate(set={"v": "s.v"}).whenNotMatchedInsertAll().execute())
    print("DONE", flush=True)
    """
)


def _live_rows(path: str) -> tuple[dict, int]:
    """(id -> v, row count) as delta-rs's query engine reads the table (deletion vectors
    applied)."""
    import pyarrow as pa
    from deltalake import QueryBuilder

    table = pa.table(
        QueryBuilder().register("t", RsTable(path)).execute("select id, v from t").read_all()
    )
    return dict(
        zip(table.column("id").to_pylist(), table.column("v").to_pylist(), strict=True)
    ), table.num_rows


@pytest.mark.slow
@pytest.mark.parametrize("vectors", [False, True], ids=["rewrite", "deletion-vectors"])
def test_merge_killed_midway_leaves_previous_version_and_rerun_is_right(spark, tmp_path, vectors):
    path = str(tmp_path / "t")
    rows = spark.range(100000).selectExpr("id", "'orig' as v").repartition(4)
    if vectors:
        (
            DeltaTable.create(spark).location(path).addColumns(rows.schema)
            .property("delta.enableDeletionVectors", "true").execute()
        )  # fmt: skip
        rows.write.format("delta").mode("append").save(path)
    else:
        rows.write.format("delta").save(path)
    base = RsTable(path).version()
    rng = random.Random(5)
    for _ in range(3):
        proc = subprocess.Popen(
            [sys.executable, "-c", MERGE_CHILD, path], cwd=str(REPO),
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        proc.stdout.readline()
        time.sleep(rng.uniform(0.5, 4.0))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        table = RsTable(path)
        assert table.version() in (base, base + 1)
        if table.version() == base + 1:
            break  # this run finished its commit before the kill
        assert _live_rows(path)[1] == 100000  # untouched
    if RsTable(path).version() == base:
        run_python(MERGE_CHILD, path)
    merged, n = _live_rows(path)
    assert len(merged) == 150000 == n
    assert merged[2] == "merged" and merged[1] == "orig" and merged[199998] == "merged"
    if vectors:
        last = sorted((tmp_path / "t" / "_delta_log").glob("*.json"))[-1]
        assert "deletionVector" in last.read_text()  # the plan that writes vectors ran
