"""Materialized views refreshed by the *group aggregate* technique: when rows were only
appended to the inputs of one GROUP BY whose aggregates combine (sum, count, count_if,
min, max), the query runs on the new rows and its groups merge into the view's, with the
refresh's record in the same commit. After every refresh the view equals its query
recomputed from scratch (NULL sums, NULL keys and empty groups included); aggregates that
do not combine (DISTINCT, HAVING) are recomputed (``avg``: test_view_avg.py) with the reason. Real pipelines,
real Delta tables."""

from __future__ import annotations

import random

import pytest
import view_checks
from pipeline_rows import RAW_TABLE, orders
from view_checks import techniques, version

from headwater.pipelines.runner.view_refresh import REWRITE_UP_TO

VIEWS = """
from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.materialized_view
def by_region():
    return spark.read.table("raw").groupBy("region").agg(
        F.sum("amount").alias("total"),
        F.count("*").alias("n"),
        F.count("amount").alias("amounts"),
        F.expr("count_if(amount > 50)").alias("big"),
        F.min("amount").alias("low"),
        F.max("id").alias("last_id"),
    )


@dp.materialized_view
def overall():  # no GROUP BY: one row
    return spark.read.table("raw").agg(F.sum("amount").alias("total"), F.count("*").alias("n"))


@dp.materialized_view
def averages():  # a distinct count does not combine: its touched groups recomputed
    return spark.read.table("raw").groupBy("region").agg(F.countDistinct("amount").alias("kinds"))
"""

QUERIES = {
    "by_region": "SELECT region, sum(amount) AS total, count(*) AS n, count(amount) AS amounts, "
    "count_if(amount > 50) AS big, min(amount) AS low, max(id) AS last_id "
    "FROM {db}.raw GROUP BY region",
    "overall": "SELECT sum(amount) AS total, count(*) AS n FROM {db}.raw",
    "averages": "SELECT region, count(DISTINCT amount) AS kinds FROM {db}.raw GROUP BY region",
}


def same_rows(project, view: str) -> None:
    view_checks.same_rows(project, view, QUERIES[view])


def test_appended_rows_merge_into_their_groups(project):
    project.source("raw.py", RAW_TABLE)
    project.source("views.py", VIEWS)
    project.land("1.json", orders(100, 30) + [{"id": 5, "region": "us"}])  # us: a NULL sum
    assert project.run().ok
    before = version(project, "by_region")

    # eu grows, us gets its first amount, asia and a NULL region are new groups
    rows = orders(10, 3) + orders(20, 1, region="us") + orders(30, 2, region="asia")
    project.land("2.json", rows + [{"id": 40, "amount": 7}])
    result = project.run()
    assert result.ok, result.failed()
    plans = techniques(result)
    for view in ("by_region", "overall"):
        assert plans[view]["chosen"] == "GROUP_AGGREGATE", plans[view]
        assert "merge into the view's" in plans[view]["reason"]
        same_rows(project, view)
    assert version(project, "by_region") == before + 1  # one commit: groups and record
    assert plans["by_region"]["rows_appended"] == 7 and plans["by_region"]["input_rows"] == 38
    assert result.flows["by_region"].num_output_rows == 4  # eu, us updated; asia, NULL new
    # count_if of an expression is not read in Arrow: Spark runs it; the global one is
    assert plans["by_region"]["executor"] == "spark"
    assert "'big' is not of a plain column" in plans["by_region"]["executor_reason"]
    assert plans["overall"]["executor"] == "arrow", plans["overall"]
    assert plans["averages"]["chosen"] == "GROUP_AGGREGATE"  # (its touched groups again)
    assert "aggregates DISTINCT" in plans["averages"]["reason"]
    assert "with those keys" in plans["averages"]["reason"]
    same_rows(project, "averages")
    assert techniques(project.run())["by_region"]["chosen"] == "NO_OP"


@pytest.mark.slow
def test_random_changes_keep_aggregates_equal_to_their_recompute(project):
    """Property-style: seeded random appends (with duplicates and NULLs), updates,
    deletes, compactions and empty updates; after each refresh every view equals a
    recompute, by GROUP_AGGREGATE exactly when the change was appends alone — the first
    appends' groups merged into the view, the second's combined in a rewrite of it."""
    try:
        changes_keep_aggregates_exact(project, random.Random(7))
    finally:
        project.spark.conf.unset(REWRITE_UP_TO)
    assert "MERGE" in history(project, "by_region")


def history(project, table: str) -> set[str]:
    rows = project.spark.sql(f"DESCRIBE HISTORY {project.database}.{table}").collect()
    return {r.operation for r in rows}


def changes_keep_aggregates_exact(project, rnd: random.Random) -> None:
    project.source("raw.py", RAW_TABLE)
    project.source("views.py", VIEWS)
    project.land("0.json", orders(0, 30))  # appends stay a small part (cost model)
    assert project.run().ok
    db, next_id = project.database, 100
    kinds = ["append", "append", "update", "delete", "nothing", "optimize"]  # each kind
    rnd.shuffle(kinds)  # (appends twice: one may follow another)
    assert set(kinds) == {"append", "update", "delete", "nothing", "optimize"}, kinds
    for step, kind in enumerate(kinds, 1):
        if kind == "append":  # (the first merged, the second rewritten)
            view_checks.commit_by_turns(project, kinds[:step].count("append"))
            rows = orders(next_id, rnd.randint(1, 4), region=rnd.choice(["eu", "us", "asia"]))
            rows += [{"id": next_id + 9, "region": rnd.choice(["eu", None])}]  # NULL amount
            rows += [dict(rows[0])] if rnd.random() < 0.5 else []
            project.land(f"{step}.json", rows)
            next_id += 10
        elif kind == "update":
            project.spark.sql(f"UPDATE {db}.raw SET amount = amount + 1 WHERE id % 2 = 0")
        elif kind == "delete":
            project.spark.sql(f"DELETE FROM {db}.raw WHERE id % 3 = 0")
        elif kind == "optimize":
            project.spark.sql(f"OPTIMIZE {db}.raw")
        result = project.run()
        assert result.ok, (step, kind, result.failed())
        for view in QUERIES:
            same_rows(project, view)
        want = {"append": "GROUP_AGGREGATE", "nothing": "NO_OP", "optimize": "NO_OP"}
        plan = techniques(result)["by_region"]
        expected = want.get(kind, "GROUP_AGGREGATE")  # (min: updates by the touched groups)
        read, held = plan.get("rows_changed"), plan.get("input_rows")
        if kind in ("update", "delete") and None not in (read, held) and read > held:
            expected = "FULL_RECOMPUTE"  # (the cost model: cheaper to recompute)
        assert plan["chosen"] == expected, (step, kind, plan)
