"""Exactly once under SIGKILL inside a change derivation and an affected-keys refresh: a
view over a Delta table without a change data feed (row tracking on) holds ``max`` (it
cannot take rows back), so after an UPDATE and a DELETE its refresh derives the changed
rows from the files the commits removed and added and recomputes only the groups whose
keys those rows hold; the update is killed while that query runs, then run to the end:
the view equals its query recomputed. (One pipeline for both kills: each crash test is
tens of seconds of CI.)"""

from __future__ import annotations

import pytest
from test_crash import project, run_here, shared_warehouse
from test_view_crash import kill_inside_refresh
from view_checks import techniques

from headwater import pipelines
from headwater.pipelines.refresh.arrow_refresh import UP_TO_ROWS

PIPELINE = """
import os, time
from pyspark import pipelines as dp
from pyspark.sql import functions as F

marks = spark.conf.get("marks")

@F.udf("bigint")
def slow(i):  # marks that the view's query runs (slowly once "slow" exists)
    open(os.path.join(marks, "running"), "a").close()
    if os.path.exists(os.path.join(marks, "slow")):
        time.sleep(0.5)
    return i

@dp.materialized_view
def totals():
    rows = spark.read.format("delta").load(spark.conf.get("input"))
    return rows.select(slow("id").alias("id"), "region").groupBy("region").agg(
        F.count("*").alias("n"), F.sum("id").alias("ids"), F.max("id").alias("top")
    )
"""


@pytest.mark.slow
def test_refresh_killed_deriving_changes_and_recomputing_keys_then_rerun_is_exact(spark, tmp_path):
    root, database, _ = project(tmp_path, PIPELINE, "derivecrash")
    warehouse = shared_warehouse(spark)
    marks = tmp_path / "marks"
    marks.mkdir()
    source = str(tmp_path / "orders")
    spec = root / "spark-pipeline.yml"
    settings = f"configuration:\n  marks: {marks}\n  input: {source}\n  {UP_TO_ROWS}: '0'"
    spec.write_text(spec.read_text().replace("configuration:", settings))
    spark.sql(
        f"CREATE TABLE delta.`{source}` (id BIGINT, region STRING) USING DELTA "
        "TBLPROPERTIES ('delta.enableRowTracking' = 'true')"
    )
    for i in range(6):  # six files: a rewrite of one reads a small part of the input
        spark.sql(
            f"INSERT INTO delta.`{source}` SELECT id, 'r' || (id % 3) FROM range({i * 10}, {i * 10 + 10})"
        )
    run_here(spark, root)
    (marks / "slow").touch()
    for after, statement in (
        (0.2, f"UPDATE delta.`{source}` SET region = 'moved' WHERE id IN (3, 4)"),
        (0.8, f"DELETE FROM delta.`{source}` WHERE id = 25"),
    ):
        spark.sql(statement)
        kill_inside_refresh(root, warehouse, marks, after)
    (marks / "slow").unlink()
    result = pipelines.run(root, spark)  # the rerun: the changes since the last record
    assert result.ok, result.failed()
    plan = techniques(result)["totals"]
    assert plan["chosen"] == "GROUP_AGGREGATE", plan
    assert "recomputed from the inputs' rows with those keys" in plan["reason"], plan
    want = spark.sql(
        f"SELECT region, count(*) AS n, sum(id) AS ids, max(id) AS top "
        f"FROM delta.`{source}` GROUP BY region"
    )
    have = spark.table(f"{database}.totals").select(*want.columns)
    assert sorted(map(list, have.collect())) == sorted(map(list, want.collect()))
