"""Materialized views refreshed by the *group aggregate* technique when rows were updated
or deleted: where the input's change data feed has every changed row, the query runs on
the removed rows (deletes, updates' old images) and on the added ones (inserts, updates'
new images), and the difference of their groups is merged into the view's — counts and
exact sums taken back, a sum with no value left NULL, a group with no row left deleted.
Aggregates that cannot take rows back (min/max, a sum with nothing to tell when it becomes
NULL) and inputs without the feed are recomputed, with the reason. After every refresh the
view equals its query recomputed from scratch. Real pipelines, real Delta tables."""

from __future__ import annotations

import random

import pytest
import view_checks
from pipeline_rows import RAW_TABLE, orders
from view_checks import techniques

from headwater.pipelines.runner.view_refresh import REWRITE_UP_TO

FEED = '@dp.table(table_properties={"delta.enableChangeDataFeed": "true"})\n'
RAW_WITH_FEED = RAW_TABLE.replace("@dp.table\n", FEED)
NO_FEED = '@dp.table(table_properties={"delta.enableChangeDataFeed": "false"})\n'

VIEWS = """
from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.materialized_view
def counted():  # counts and a sum with its count: rows can be taken back
    return spark.read.table("raw").where("id % 7 != 3").groupBy("region").agg(
        F.sum("amount").alias("total"),
        F.count("*").alias("n"),
        F.count("amount").alias("amounts"),
        F.expr("count_if(amount > 50)").alias("big"),
    )


@dp.materialized_view
def overall():  # no GROUP BY: the one row stays when every row is deleted
    return spark.read.table("raw").agg(
        F.sum(F.col("amount") * 2).alias("total"),
        F.count(F.col("amount") * 2).alias("amounts"),
        F.count("*").alias("n"),
    )


@dp.materialized_view
def lowest():  # min cannot take rows back: the touched groups are recomputed
    return spark.read.table("raw").groupBy("region").agg(
        F.min("amount").alias("low"), F.count("*").alias("n")
    )


@dp.materialized_view
def unpaired():  # nothing tells when this sum becomes NULL: the groups recomputed
    return spark.read.table("raw").groupBy("region").agg(
        F.sum("amount").alias("total"), F.count("*").alias("n")
    )
"""

QUERIES = {
    "counted": "SELECT region, sum(amount) AS total, count(*) AS n, count(amount) AS amounts, "
    "count_if(amount > 50) AS big FROM {db}.raw WHERE id % 7 != 3 GROUP BY region",
    "overall": "SELECT sum(amount * 2) AS total, count(amount * 2) AS amounts, count(*) AS n "
    "FROM {db}.raw",
    "lowest": "SELECT region, min(amount) AS low, count(*) AS n FROM {db}.raw GROUP BY region",
    "unpaired": "SELECT region, sum(amount) AS total, count(*) AS n FROM {db}.raw GROUP BY region",
}

# The technique each view is refreshed by, for each kind of change (the others: recompute).
EXPECTED = {
    "append": dict.fromkeys(QUERIES, "GROUP_AGGREGATE"),
    "nothing": dict.fromkeys(QUERIES, "NO_OP"),
    "optimize": dict.fromkeys(QUERIES, "NO_OP"),
    **{
        kind: dict.fromkeys(QUERIES, "GROUP_AGGREGATE")  # (lowest, unpaired: by key)
        for kind in ("update", "to_null", "move", "same", "delete", "delete_region")
    },
}


def test_updated_and_deleted_rows_are_taken_back_through_the_change_feed(project):
    project.source("raw.py", RAW_WITH_FEED)
    project.source("views.py", VIEWS)
    project.land("1.json", orders(0, 20) + orders(50, 5, region="us") + [{"id": 90}])
    assert project.run().ok

    db = project.database
    project.spark.sql(f"UPDATE {db}.raw SET amount = NULL WHERE region = 'us'")  # us: NULL sum
    project.spark.sql(f"DELETE FROM {db}.raw WHERE region IS NULL")  # a group empties
    result = project.run()
    assert result.ok, result.failed()
    plans = techniques(result)
    for view in QUERIES:
        view_checks.same_rows(project, view, QUERIES[view])
    assert plans["counted"]["chosen"] == "GROUP_AGGREGATE", plans["counted"]
    assert "taken back" in plans["counted"]["reason"]
    assert plans["overall"]["chosen"] == "GROUP_AGGREGATE"
    # The others' groups cannot take rows back: the groups the changes touched recomputed.
    assert plans["lowest"]["chosen"] == "GROUP_AGGREGATE"
    assert "min/max ('low') cannot take rows back" in plans["lowest"]["reason"]
    assert plans["unpaired"]["chosen"] == "GROUP_AGGREGATE"
    assert "no count of the same values" in plans["unpaired"]["reason"]
    assert "with those keys" in plans["unpaired"]["reason"]
    assert techniques(project.run())["counted"]["chosen"] == "NO_OP"


def test_without_the_change_feed_a_delete_of_most_of_a_file_is_recomputed(project):
    """The user turned the feed off (the runner turns it on otherwise: see
    test_view_change_feed_on.py): the delete is read back from the files it removed and
    added (test_view_derived_changes.py), here the table's whole file and its rewrite,
    more rows than a recompute reads."""
    project.source("raw.py", RAW_TABLE.replace("@dp.table\n", NO_FEED))
    project.source("views.py", VIEWS)
    project.land("1.json", orders(0, 10))
    assert project.run().ok
    project.spark.sql(f"DELETE FROM {project.database}.raw WHERE id < 3")
    result = project.run()
    assert result.ok, result.failed()
    plan = techniques(result)["counted"]
    assert plan["chosen"] == "FULL_RECOMPUTE"
    assert "more than the 7 a recompute reads" in plan["reason"], plan
    view_checks.same_rows(project, "counted", QUERIES["counted"])


@pytest.mark.slow
def test_random_changes_taken_back_equal_their_recompute(project):
    """Property-style: seeded random appends (duplicates, NULL amounts and regions),
    updates (values, to NULL, moving rows between groups, setting values to themselves),
    deletes (some rows, a whole group), compactions and empty updates; after each refresh
    every view equals a recompute, by the technique expected for the change — with the
    groups combined in a rewrite of the (small) view, or merged into it, by turns."""
    try:
        random_changes(project, random.Random(11))
    finally:
        project.spark.conf.unset(REWRITE_UP_TO)


def random_changes(project, rnd: random.Random) -> None:
    project.source("raw.py", RAW_WITH_FEED)
    project.source("views.py", VIEWS)
    project.land("0.json", orders(0, 30) + orders(40, 6, region="us"))
    assert project.run().ok
    db, next_id = project.database, 100
    statements = {
        "update": "UPDATE {db}.raw SET amount = amount + 7 WHERE id % 4 = {r}",
        "to_null": "UPDATE {db}.raw SET amount = NULL WHERE id % 5 = {r}",
        "move": "UPDATE {db}.raw SET region = 'asia' WHERE id % 6 = {r}",
        "same": "UPDATE {db}.raw SET amount = amount WHERE id % 3 = {r}",
        "delete": "DELETE FROM {db}.raw WHERE id % 4 = {r}",
        "delete_region": "DELETE FROM {db}.raw WHERE region <=> '{region}'",
        "optimize": "OPTIMIZE {db}.raw",
    }
    kinds = [*statements, "append", "nothing"]  # every kind once, shuffled
    rnd.shuffle(kinds)
    assert set(kinds) == {*statements, "append", "nothing"} == set(EXPECTED), kinds
    exercised = set()  # the kinds that changed a view at least once
    commits = set()  # the ways grouped changes were committed
    for step, kind in enumerate(kinds, 1):
        commit = view_checks.commit_by_turns(project, step)
        if kind == "append":
            rows = orders(next_id, rnd.randint(1, 4), region=rnd.choice(["eu", "us", "asia"]))
            rows += [{"id": next_id + 9, "region": rnd.choice(["eu", None])}]  # NULL amount
            rows += [dict(rows[0])] if rnd.random() < 0.5 else []  # a duplicate
            project.land(f"{step}.json", rows)
            next_id += 10
        elif kind != "nothing":
            region = rnd.choice(["eu", "us", "asia"])
            sql = statements[kind].format(db=db, r=rnd.randint(0, 2), region=region)
            project.spark.sql(sql)
        result = project.run()
        assert result.ok, (step, kind, result.failed())
        plans = techniques(result)
        exercised |= {kind} if any(plans[v]["chosen"] != "NO_OP" for v in QUERIES) else set()
        grouped = any(plans[v]["chosen"] == "GROUP_AGGREGATE" for v in QUERIES)
        commits |= {commit} if grouped else set()
        for view, query in QUERIES.items():
            view_checks.same_rows(project, view, query)
            want = EXPECTED[kind].get(view, "FULL_RECOMPUTE")
            if kind in ("update", "to_null", "move", "same", "delete", "delete_region"):
                changed = plans[view]["chosen"] != "NO_OP"  # (a statement may match no row)
                want = want if changed else "NO_OP"
                read, rows = plans[view].get("rows_changed"), plans[view].get("input_rows")
                if want == "GROUP_AGGREGATE" and None not in (read, rows) and read > rows:
                    want = "FULL_RECOMPUTE"  # the cost model: cheaper to recompute
            assert plans[view]["chosen"] == want, (step, kind, view, plans[view])
    assert exercised >= set(kinds) - {"nothing", "optimize", "same"}, exercised
    assert commits == {"merge", "rewrite"}, commits
