"""Materialized views refreshed by the *append* technique: when rows were only appended to
inputs whose rows map to the view's one by one (projections, filters, unions, joins with
an unchanged side), the query runs on the new rows only and its result is appended, in one
commit with the record of what it read. After every refresh, whatever the technique, the
view equals its query recomputed from scratch (duplicates and NULLs included), and the
technique logged is the one expected for the change. Real pipelines, real Delta tables."""

from __future__ import annotations

import random

import pytest
import view_checks
from pipeline_rows import RAW_TABLE, orders
from view_checks import techniques, version

VIEWS = """
from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.materialized_view
def dims():
    return spark.sql(
        "SELECT * FROM VALUES ('eu', 'Europe'), ('us', 'Americas'), ('eu', 'Europa') "
        "AS t(region, name)"
    )


@dp.materialized_view
def big():  # a projection and a filter: row-wise
    return (
        spark.read.table("raw")
        .where("amount >= 20 OR amount IS NULL")
        .select("id", (F.col("amount") * 2).alias("double"), "region")
    )


@dp.materialized_view
def named():  # a join whose other side is another view
    return spark.read.table("raw").join(spark.read.table("dims"), "region")


@dp.materialized_view
def twice():  # the same input twice through a union
    raw = spark.read.table("raw")
    return raw.select("id").unionAll(raw.where("id % 2 = 0").select("id"))


@dp.materialized_view
def totals():  # an aggregate: its groups merged
    return spark.read.table("raw").groupBy("region").agg(F.sum("amount").alias("amount"))
"""

QUERIES = {  # each view's query, run from scratch on the tables as they are
    "big": "SELECT id, amount * 2 AS double, region FROM {db}.raw "
    "WHERE amount >= 20 OR amount IS NULL",
    "named": "SELECT r.region, r.id, r.amount, r._rescued_data, d.name FROM {db}.raw r "
    "JOIN {db}.dims d ON r.region = d.region",
    "twice": "SELECT id FROM {db}.raw UNION ALL SELECT id FROM {db}.raw WHERE id % 2 = 0",
    "totals": "SELECT region, sum(amount) AS amount FROM {db}.raw GROUP BY region",
}


def same_rows(project, view: str) -> None:
    view_checks.same_rows(project, view, QUERIES[view])


def test_appended_rows_are_appended_to_row_wise_views_and_equal_a_recompute(project):
    project.source("raw.py", RAW_TABLE)
    project.source("views.py", VIEWS)
    project.land("1.json", orders(0, 4) + orders(10, 2, region="us"))
    first = project.run()
    assert first.ok, first.failed()
    for view in QUERIES:
        same_rows(project, view)
    before = {v: version(project, v) for v in ("big", "named", "twice")}

    project.land("2.json", orders(20, 3) + [{"id": 30, "region": "eu"}])  # a NULL amount
    second = project.run()
    assert second.ok, second.failed()
    plans = techniques(second)
    for view in ("big", "named", "twice"):
        assert plans[view]["chosen"] == "APPEND", (view, plans[view]["reason"])
        assert "only appended to" in plans[view]["reason"]
        assert version(project, view) == before[view] + 1  # one commit: rows and record
        same_rows(project, view)
    assert plans["dims"]["chosen"] == "NO_OP"  # constant rows, unchanged definition
    assert plans["totals"]["chosen"] == "GROUP_AGGREGATE"  # (see test_view_group_aggregate)
    same_rows(project, "totals")
    assert second.flows["big"].technique == "APPEND"
    assert second.flows["big"].num_output_rows == 4  # only the new rows were computed

    third = project.run()  # nothing new
    assert {v: techniques(third)[v]["chosen"] for v in ("big", "named", "twice")} == dict.fromkeys(
        ("big", "named", "twice"), "NO_OP"
    )


def test_compacted_appends_and_updated_inputs_are_recomputed_with_the_reason(project):
    project.source("raw.py", RAW_TABLE)
    project.source("views.py", VIEWS)
    project.land("1.json", orders(0, 4))
    assert project.run().ok
    project.land("2.json", orders(4, 4))
    project.land("3.json", orders(8, 4))
    assert project.run(refresh=["raw"]).ok  # raw appends twice; the views wait
    project.spark.sql(f"OPTIMIZE {project.database}.raw")  # the appended files are merged
    result = project.run()
    assert result.ok, result.failed()
    plan = techniques(result)["big"]
    assert plan["chosen"] == "FULL_RECOMPUTE" and "rewritten since (OPTIMIZE)" in plan["reason"]
    same_rows(project, "big")

    project.spark.sql(f"DELETE FROM {project.database}.raw WHERE id = 1")
    result = project.run()
    plan = techniques(result)["big"]
    assert plan["chosen"] == "FULL_RECOMPUTE" and "changed (updates)" in plan["reason"], plan
    for view in QUERIES:
        same_rows(project, view)


@pytest.mark.slow
def test_random_changes_keep_every_view_equal_to_its_recompute(project):
    """Property-style: a seeded random sequence of appends, updates, deletes, compactions
    and empty updates; after each refresh every view equals a recompute of its query, and
    a row-wise view took APPEND exactly when the change was appends alone."""
    rnd = random.Random(20261126)
    project.source("raw.py", RAW_TABLE)
    project.source("views.py", VIEWS)
    project.land("0.json", orders(0, 30))  # appends stay a small part (cost model)
    assert project.run().ok
    db, next_id = project.database, 100
    for step in range(1, 9):
        kind = rnd.choice(["append", "append", "update", "delete", "nothing", "optimize"])
        if kind == "append":
            region = rnd.choice(["eu", "us", "asia"])
            rows = orders(next_id, rnd.randint(1, 5), region=region)
            rows += [dict(rows[0])] if rnd.random() < 0.5 else []  # a duplicate row
            project.land(f"{step}.json", rows)
            next_id += 10
        elif kind == "update":
            project.spark.sql(f"UPDATE {db}.raw SET amount = NULL WHERE id % 3 = {step % 3}")
        elif kind == "delete":
            project.spark.sql(f"DELETE FROM {db}.raw WHERE id % 4 = {step % 4}")
        elif kind == "optimize":
            project.spark.sql(f"OPTIMIZE {db}.raw")
        result = project.run()
        assert result.ok, (step, kind, result.failed())
        plans = techniques(result)
        for view in QUERIES:
            same_rows(project, view)
        expected = {"append": "APPEND", "nothing": "NO_OP", "optimize": "NO_OP"}
        want = expected.get(kind, "FULL_RECOMPUTE")
        assert plans["big"]["chosen"] == want, (step, kind, plans["big"])
        want = {"APPEND": "GROUP_AGGREGATE"}.get(want, want)
        read, held = plans["totals"].get("rows_changed"), plans["totals"].get("input_rows")
        if want == "FULL_RECOMPUTE" and not (None not in (read, held) and read > held):
            want = "GROUP_AGGREGATE"  # (no count beside its sum: its touched groups again)
        assert plans["totals"]["chosen"] == want, (step, kind, plans["totals"])
