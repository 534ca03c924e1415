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


@pytest.mark.slow
def test_merge_killed_midway_leaves_previous_version_and_rerun_is_right(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(100000).selectExpr("id", "'orig' as v").repartition(4).write.format("delta").save(
        path
    )
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
        assert table.version() in (0, 1)
        if table.version() == 1:
            break  # this run finished its commit before the kill
        assert table.to_pyarrow_table().num_rows == 100000  # untouched
    if RsTable(path).version() == 0:
        run_python(MERGE_CHILD, path)
    rows = RsTable(path).to_pyarrow_table().to_pydict()
    merged = dict(zip(rows["id"], rows["v"], strict=True))
    assert len(merged) == 150000 == len(rows["id"])
    assert merged[2] == "merged" and merged[1] == "orig" and merged[199998] == "merged"
