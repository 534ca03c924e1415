"""Exactly once under SIGKILL during an incremental refresh: a materialized view refreshed
by GROUP_AGGREGATE (and one by APPEND) is killed while its query runs on the new rows or
while its merge commits, at several moments, then the update is run to the end: each view
equals its query recomputed from scratch (its rows and its record commit together, so a
killed refresh is simply done again)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from test_crash import CHILD, land, project, run_here, shared_warehouse

from headwater.pipelines.runner.view_refresh import REWRITE_UP_TO
from tests.conftest import REPO

PIPELINE = """
import os, time
from pyspark import pipelines as dp
from pyspark.sql import functions as F

marks = spark.conf.get("marks")

@F.udf("bigint")
def slow(i):  # marks that the views' queries run, and lets a kill land inside them
    open(os.path.join(marks, "running"), "a").close()
    time.sleep(0.002)
    return i

@dp.table
def bronze():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaHints", "id bigint, region string")
        .load(spark.conf.get("source_dir") + "/orders")
    )

@dp.materialized_view
def totals():
    return (
        spark.read.table("bronze").select(slow("id").alias("id"), "region")
        .groupBy("region").agg(F.count("*").alias("n"), F.sum("id").alias("ids"))
    )

@dp.materialized_view
def evens():
    return spark.read.table("bronze").where(slow("id") % 2 == 0).select("id", "region")
"""


def kill_inside_refresh(root, warehouse: str, marks, after: float) -> None:
    """An update in a child process, SIGKILLed ``after`` seconds after a view's query
    started running (the marker file appears)."""
    marker = marks / "running"
    marker.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root), warehouse, ""],
        cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 180
    while not marker.exists() and proc.poll() is None:
        assert time.monotonic() < deadline, "the views' queries never ran"
        time.sleep(0.02)
    time.sleep(after)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.mark.slow
def test_incremental_refresh_killed_then_rerun_equals_a_recompute(spark, tmp_path):
    root, database, _ = project(tmp_path, PIPELINE, "viewcrash")
    warehouse = shared_warehouse(spark)
    marks = tmp_path / "marks"
    marks.mkdir()
    spec = root / "spark-pipeline.yml"
    # (every view counts as large: the group aggregate commits by MERGE, the riskier path)
    settings = f"configuration:\n  marks: {marks}\n  {REWRITE_UP_TO}: '0'"
    spec.write_text(spec.read_text().replace("configuration:", settings))
    orders = tmp_path / "landing" / "orders"
    for i in range(20):  # the rounds' appends stay a small part (the cost model)
        land(orders, i)
    run_here(spark, root)
    landed = 20
    for after in (0.0, 0.4, 1.2, 2.5):
        for _ in range(2):
            land(orders, landed)
            landed += 1
        kill_inside_refresh(root, warehouse, marks, after)

    run_here(spark, root)
    got = {}
    for view, query in (
        ("totals", f"SELECT region, count(*) AS n, sum(id) AS ids FROM {database}.bronze GROUP BY region"),
        ("evens", f"SELECT id, region FROM {database}.bronze WHERE id % 2 = 0"),
    ):  # fmt: skip
        want = spark.sql(query)
        have = spark.table(f"{database}.{view}").select(*want.columns)
        history = spark.sql(f"DESCRIBE HISTORY {database}.{view}").collect()
        modes = {f"{r.operation} {(r.operationParameters or {}).get('mode', '')}" for r in history}
        got[view] = (
            sorted(map(list, have.collect())),
            sorted(map(list, want.collect())),
            sorted(m.strip() for m in modes),
        )
    for view, (have, want, _) in got.items():
        assert have == want, view
    assert "MERGE" in got["totals"][2]  # refreshed by GROUP_AGGREGATE at least once
    assert "WRITE Append" in got["evens"][2], got["evens"][2]  # and by APPEND
    assert len(got["evens"][1]) == landed * 10  # 20 rows per file, half of them even
