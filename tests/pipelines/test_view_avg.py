"""Materialized views with ``avg`` refreshed by the *group aggregate* technique: each
average of integral or decimal values is kept as an exact sum and count beside the view
(a state folder named in the refresh's record, never a column of the view), combined with
the changed rows' sums and counts (appended, or taken back through the change data feed)
and turned into Spark's own average. After every refresh the view equals its query
recomputed from scratch, with the query's columns only; averages of doubles, and groups
past the bound where an exact sum gives Spark's double, are recomputed with the reason.
Real pipelines, real Delta tables."""

from __future__ import annotations

import random

import pytest
import view_checks
from pipeline_rows import orders
from view_checks import techniques

from headwater import storage
from headwater.pipelines.refresh import avg_state
from headwater.pipelines.refresh import inputs as view_inputs
from headwater.pipelines.runner.view_refresh import REWRITE_UP_TO

RAW = """
from pyspark import pipelines as dp

@dp.table(table_properties={"delta.enableChangeDataFeed": "true"})
def raw():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaHints", "id bigint, amount bigint, price decimal(10,2)")
        .load(spark.conf.get("source_dir") + "/orders")
    )
"""

VIEWS = """
from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.materialized_view
def means():
    return spark.read.table("raw").groupBy("region").agg(
        F.avg("amount").alias("mean"),
        F.avg("price").alias("mean_price"),
        F.avg((F.col("amount") % 7).cast("int")).alias("mean_mod"),
        F.count("*").alias("n"),
    )


@dp.materialized_view
def overall():  # no GROUP BY: one row, NULL averages when no value is left
    return spark.read.table("raw").agg(
        F.avg("amount").alias("mean"), F.avg("price").alias("mean_price"), F.count("*").alias("n")
    )


@dp.materialized_view
def uncounted():  # no count(*): appends only
    return spark.read.table("raw").groupBy("region").agg(F.avg("price").alias("mean_price"))


@dp.materialized_view
def amounts():  # averages of a plain integral column: refreshed in Arrow on the driver
    return spark.read.table("raw").groupBy("region").agg(
        F.avg("amount").alias("mean"),
        F.sum("amount").alias("total"),
        F.count("amount").alias("counted"),
        F.count("*").alias("n"),
    )


@dp.materialized_view
def doubles():  # sums of doubles do not combine exactly: the touched groups recomputed
    return spark.read.table("raw").groupBy("region").agg(
        F.avg(F.col("amount").cast("double")).alias("mean"), F.count("*").alias("n")
    )
"""

QUERIES = {
    "means": "SELECT region, avg(amount) AS mean, avg(price) AS mean_price, "
    "avg(CAST(amount % 7 AS int)) AS mean_mod, count(*) AS n FROM {db}.raw GROUP BY region",
    "overall": "SELECT avg(amount) AS mean, avg(price) AS mean_price, count(*) AS n FROM {db}.raw",
    "uncounted": "SELECT region, avg(price) AS mean_price FROM {db}.raw GROUP BY region",
    "amounts": "SELECT region, avg(amount) AS mean, sum(amount) AS total, "
    "count(amount) AS counted, count(*) AS n FROM {db}.raw GROUP BY region",
    "doubles": "SELECT region, avg(CAST(amount AS double)) AS mean, count(*) AS n "
    "FROM {db}.raw GROUP BY region",
}
UPDATES = ("update", "to_null", "move", "delete", "delete_region")
EXPECTED = {  # the technique per change (others: recompute)
    "append": {
        "means": "GROUP_AGGREGATE",
        "overall": "GROUP_AGGREGATE",
        "uncounted": "GROUP_AGGREGATE",
        "amounts": "GROUP_AGGREGATE",
        "doubles": "GROUP_AGGREGATE",  # (its touched groups recomputed)
    },
    "nothing": dict.fromkeys(QUERIES, "NO_OP"),
    **{
        kind: dict.fromkeys(("means", "overall", "amounts", "doubles"), "GROUP_AGGREGATE")
        for kind in UPDATES
    },
}


def rows_priced(start: int, n: int, region: str | None = "eu") -> list[dict]:
    """Orders with prices whose averages round (thirds, sevenths of cents)."""
    return [
        {**r, "region": region, "price": round((r["id"] * 37 % 101) / 7, 2)}
        for r in orders(start, n)
    ]


def same_rows(project, view: str) -> None:
    """The view equals its query recomputed, with exactly the query's columns."""
    view_checks.same_rows(project, view, QUERIES[view])
    expected = project.spark.sql(QUERIES[view].format(db=project.database))
    got = project.spark.table(f"{project.database}.{view}")
    types = [(f.name, f.dataType) for f in got.schema.fields]
    assert types == [(f.name, f.dataType) for f in expected.schema.fields], (view, got.schema)


def view_avg_state(path: str) -> dict:
    """The kept state's columns, its groups in order of their row counts."""
    return avg_state.read(path).sort_by("__rows").to_pydict()


def recorded_state(project, view: str) -> str | None:
    location = project.spark.sql(f"DESCRIBE DETAIL {project.database}.{view}").first()
    recorded, _ = view_inputs.last_recorded(location["location"])
    assert recorded is not None
    return recorded.state


def test_averages_are_kept_through_sums_and_counts(project):
    project.source("raw.py", RAW)
    project.source("views.py", VIEWS)
    project.land("1.json", rows_priced(0, 20) + rows_priced(50, 3, region="us") + [{"id": 90}])
    first = project.run()
    assert first.ok, first.failed()
    assert techniques(first)["means"]["chosen"] == "FULL_RECOMPUTE"
    state = recorded_state(project, "means")
    assert state is not None and storage.exists(state)  # the recompute kept the sums
    assert recorded_state(project, "doubles") is None

    project.land("2.json", rows_priced(100, 4) + rows_priced(110, 2, region=None))
    result = project.run()
    assert result.ok, result.failed()
    plans = techniques(result)
    for view in QUERIES:
        same_rows(project, view)
    for view in ("means", "overall", "uncounted", "amounts"):
        assert plans[view]["chosen"] == "GROUP_AGGREGATE", plans[view]
        assert "avg" in plans[view]["reason"]
    # a plain integral column's average: its kept state combined in Arrow, no Spark job;
    # an expression's, or a decimal one's (rounded as Spark's), in Spark
    assert plans["amounts"]["executor"] == "arrow", plans["amounts"]
    assert plans["means"]["executor"] == "spark"
    assert "'mean_price' is not of a plain column" in plans["means"]["executor_reason"]
    assert plans["uncounted"]["executor"] == "spark"
    assert "'mean_price'" in plans["uncounted"]["executor_reason"]
    kept = recorded_state(project, "amounts")
    counts = project.spark.table(f"{project.database}.amounts").select("n").collect()
    assert kept is not None and view_avg_state(kept)["__rows"] == sorted(r.n for r in counts)
    assert plans["doubles"]["chosen"] == "GROUP_AGGREGATE"
    assert "double values" in plans["doubles"]["reason"], plans["doubles"]
    assert "with those keys" in plans["doubles"]["reason"], plans["doubles"]
    assert recorded_state(project, "means") != state  # a new state, the old one untouched
    assert storage.exists(state)
    assert techniques(project.run())["means"]["chosen"] == "NO_OP"
    assert not storage.exists(state)  # replaced: pruned by the next refresh

    db = project.spark.sql  # rows taken back: a NULL region empties, us loses its prices
    db(f"DELETE FROM {project.database}.raw WHERE region IS NULL")
    db(f"UPDATE {project.database}.raw SET price = NULL, amount = NULL WHERE region = 'us'")
    result = project.run()
    assert result.ok, result.failed()
    plans = techniques(result)
    for view in QUERIES:
        same_rows(project, view)
    assert plans["means"]["chosen"] == "GROUP_AGGREGATE", plans["means"]
    assert (plans["amounts"]["chosen"], plans["amounts"]["executor"]) == (
        "GROUP_AGGREGATE",
        "arrow",
    ), plans["amounts"]
    assert plans["uncounted"]["chosen"] == "FULL_RECOMPUTE"
    assert "no count(*)" in plans["uncounted"]["reason"]
    assert techniques(project.run())["means"]["chosen"] == "NO_OP"


def test_a_lost_state_or_a_sum_past_2_53_is_recomputed(project):
    project.source("raw.py", RAW)
    project.source("views.py", VIEWS)
    project.land("1.json", rows_priced(0, 10))
    assert project.run().ok
    storage.delete_dir(recorded_state(project, "means") or "")
    project.land("2.json", rows_priced(20, 2))
    result = project.run()
    assert result.ok, result.failed()
    plan = techniques(result)["means"]
    assert plan["chosen"] == "FULL_RECOMPUTE" and "are gone" in plan["reason"], plan
    same_rows(project, "means")

    # 2^53 + 1 is no double: Spark's double sum rounds it, the exact sum would not
    project.land("3.json", [{"id": 300, "amount": 2**53 + 1, "region": "eu"}])
    result = project.run()
    assert result.ok, result.failed()
    for view in ("means", "amounts"):  # (amounts: found past it by the Arrow refresh)
        plan = techniques(result)[view]
        assert plan["chosen"] == "FULL_RECOMPUTE" and "2^53" in plan["reason"], plan
    for view in ("means", "overall", "amounts"):
        same_rows(project, view)
    project.spark.sql(f"DELETE FROM {project.database}.raw WHERE id = 300")
    result = project.run()  # back under the bound: incremental again
    assert result.ok, result.failed()
    assert techniques(result)["means"]["chosen"] == "GROUP_AGGREGATE"
    same_rows(project, "means")


@pytest.mark.slow
def test_random_changes_keep_averages_equal_to_their_recompute(project):
    """Property-style: seeded random appends (duplicates, NULL amounts, prices and
    regions), updates (values, to NULL, moving rows between groups), deletes (some rows, a
    whole group, then refilled); after each refresh every view equals a recompute, by the
    technique expected. Groups are combined in a rewrite of the view or merged into it, by
    turns; the kept state is combined on the driver or in Spark (as a state past the
    driver's bound is), by turns of two refreshes: each reads the other's folder."""
    try:
        random_changes(project, random.Random(21))
    finally:
        project.spark.conf.unset(REWRITE_UP_TO)
        project.spark.conf.unset(avg_state.ON_DRIVER_UP_TO)


def random_changes(project, rnd: random.Random) -> None:
    project.source("raw.py", RAW)
    project.source("views.py", VIEWS)
    project.land("0.json", rows_priced(0, 20) + rows_priced(40, 5, region="us"))
    assert project.run().ok
    db, next_id = project.database, 100
    statements = {
        "update": "UPDATE {db}.raw SET amount = amount + 7, price = price * 3 WHERE id % 4 = {r}",
        "to_null": "UPDATE {db}.raw SET price = NULL WHERE id % 5 = {r}",
        "move": "UPDATE {db}.raw SET region = 'asia' WHERE id % 6 = {r}",
        "delete": "DELETE FROM {db}.raw WHERE id % 4 = {r}",
        "delete_region": "DELETE FROM {db}.raw WHERE region <=> '{region}'",
    }
    # every kind once (appends twice), shuffled; an append after the group deleted refills it
    kinds = [*statements, "append", "append", "nothing"]
    rnd.shuffle(kinds)
    if "append" not in kinds[kinds.index("delete_region") :]:
        kinds.remove("append")
        kinds.insert(kinds.index("delete_region") + 1, "append")
    assert set(kinds) == {*statements, "append", "nothing"} == set(EXPECTED), kinds
    exercised = set()  # the kinds that changed a view at least once
    ways = set()  # (commit, where the state was combined) of the grouped refreshes
    executors = set()  # where amounts' grouped refreshes ran (Arrow: rewrites on the driver)
    for step, kind in enumerate(kinds, 1):
        commit = view_checks.commit_by_turns(project, step)
        on_driver = step // 2 % 2 == 1  # (0: every state combined in Spark)
        project.spark.conf.set(avg_state.ON_DRIVER_UP_TO, str(int(on_driver) * 2**26))
        if kind == "append":  # (also refills an emptied group)
            rows = rows_priced(next_id, rnd.randint(1, 4), region=rnd.choice(["eu", "us", "asia"]))
            rows += [{"id": next_id + 9, "region": rnd.choice(["eu", None])}]  # NULL values
            rows += [dict(rows[0])] if rnd.random() < 0.5 else []  # a duplicate
            project.land(f"{step}.json", rows)
            next_id += 10
        elif kind != "nothing":
            region = rnd.choice(["eu", "us", "asia"])
            if kind == "delete_region":  # a group that has rows (else it matches none)
                have = project.spark.sql(f"SELECT DISTINCT region FROM {db}.raw").collect()
                present = sorted(r[0] for r in have if r[0] is not None)
                region = region if region in present else present[0]
            project.spark.sql(statements[kind].format(db=db, r=rnd.randint(0, 2), region=region))
        result = project.run()
        assert result.ok, (step, kind, result.failed())
        plans = techniques(result)
        exercised |= {kind} if any(plans[v]["chosen"] != "NO_OP" for v in QUERIES) else set()
        if any(plans[v]["chosen"] == "GROUP_AGGREGATE" for v in QUERIES):
            ways.add((commit, on_driver))
        if plans["amounts"]["chosen"] == "GROUP_AGGREGATE":
            executors.add(plans["amounts"]["executor"])
        for view in QUERIES:
            same_rows(project, view)
            want = EXPECTED[kind].get(view, "FULL_RECOMPUTE")
            if kind in UPDATES and plans[view]["chosen"] == "NO_OP":  # (matched no row)
                want = "NO_OP"
            if kind == "append" and "are new" in plans[view]["reason"]:  # (cost model: the
                want = "FULL_RECOMPUTE"  # input shrank by deletes, the new rows are most)
            read, held = plans[view].get("rows_changed"), plans[view].get("input_rows")
            if want == "GROUP_AGGREGATE" and None not in (read, held) and read > held:
                want = "FULL_RECOMPUTE"  # the update cost model: cheaper to recompute
            assert plans[view]["chosen"] == want, (step, kind, view, plans[view])
    assert exercised == set(kinds) - {"nothing"}, exercised  # no kind matched no row
    assert {commit for commit, _ in ways} == {"merge", "rewrite"}, ways
    assert {on_driver for _, on_driver in ways} == {True, False}, ways
    assert executors == {"arrow", "spark"}, executors
