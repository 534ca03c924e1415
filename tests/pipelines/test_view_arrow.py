"""Materialized views whose small changes are refreshed in Arrow on the driver: a GROUP BY
of plain columns of one input with sums, counts, count_if, min and max of plain columns,
after appends or updates and deletes read from the change data feed, combined with the
view's rows without a Spark job and committed with the refresh's record in one commit.
After every refresh the view equals its query recomputed (NULL keys, NULL sums, decimal
sums, duplicates, emptied groups); the planning event says which executor ran; a change
above the threshold runs in Spark. Real pipelines, real Delta tables."""

from __future__ import annotations

import random

import view_checks
from view_checks import techniques, version

from headwater.pipelines.refresh.arrow_refresh import UP_TO_ROWS

RAW = """
from pyspark import pipelines as dp

@dp.table(table_properties={"delta.enableChangeDataFeed": "true"})
def raw():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaHints",
                "id bigint, amount bigint, qty int, price decimal(10,2), flag boolean")
        .load(spark.conf.get("source_dir") + "/orders")
    )
"""

VIEWS = """
from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.materialized_view
def sums():  # every aggregate takes rows back: appends, updates and deletes in Arrow
    return spark.read.table("raw").groupBy("region", "qty").agg(
        F.sum("amount").alias("total"), F.count("amount").alias("amounts"),
        F.sum("price").alias("value"), F.count("price").alias("prices"),
        F.count("*").alias("n"), F.expr("count_if(flag)").alias("flagged"),
    )


@dp.materialized_view
def extremes():  # min/max: appends in Arrow, updates by the touched groups in Spark
    return spark.read.table("raw").groupBy("region").agg(
        F.min("amount").alias("low"), F.max("price").alias("high"), F.count("*").alias("n")
    )
"""

QUERIES = {
    "sums": "SELECT region, qty, sum(amount) AS total, count(amount) AS amounts, "
    "sum(price) AS value, count(price) AS prices, count(*) AS n, count_if(flag) AS flagged "
    "FROM {db}.raw GROUP BY region, qty",
    "extremes": "SELECT region, min(amount) AS low, max(price) AS high, count(*) AS n "
    "FROM {db}.raw GROUP BY region",
}


def rows(rnd: random.Random, start: int, n: int) -> list[dict]:
    """Orders with NULLs in every column but the id, and a duplicate now and then."""
    out = []
    for i in range(start, start + n):
        row = {
            "id": i,
            "region": rnd.choice(["eu", "us", "asia", None]),
            "qty": rnd.choice([1, 2, None]),
            "amount": rnd.choice([i * 10, -i, None]),
            "price": rnd.choice([i + 0.25, 0.1, None]),
            "flag": rnd.choice([True, False, None]),
        }
        out.append({k: v for k, v in row.items() if v is not None or rnd.random() < 0.5})
    return out + ([dict(out[0])] if rnd.random() < 0.5 else [])


def test_small_changes_are_refreshed_in_arrow_equal_to_their_recompute(project):
    """Property-style: seeded random rows appended, updated (values, to NULL, moving rows
    between groups) and deleted (a whole group), in a shuffled order; after each change
    the views equal their recompute, by the executor expected, and an update with no
    change is a NO_OP (the record committed with the groups); then a change above the
    threshold runs in Spark."""
    rnd = random.Random(31)
    project.source("raw.py", RAW)
    project.source("views.py", VIEWS)
    project.land("0.json", rows(rnd, 0, 40))
    assert project.run().ok
    db, next_id = project.database, 100
    statements = {
        "update": "UPDATE {db}.raw SET amount = amount + 7, price = price * 2 WHERE id % 3 = 0",
        "to_null": "UPDATE {db}.raw SET price = NULL, flag = NULL WHERE id % 4 = 1",
        "move": "UPDATE {db}.raw SET region = NULL, qty = 2 WHERE id % 5 = 2",
        "delete_group": "DELETE FROM {db}.raw WHERE region <=> 'asia'",
    }
    kinds = ["append", *statements]
    rnd.shuffle(kinds)
    for step, kind in enumerate(kinds, 1):
        if kind == "append":
            project.land(f"{step}.json", rows(rnd, next_id, rnd.randint(1, 6)))
            next_id += 10
        else:
            project.spark.sql(statements[kind].format(db=db))
        before = version(project, "sums")
        result = project.run()
        assert result.ok, (step, kind, result.failed())
        plans = techniques(result)
        for view, query in QUERIES.items():
            view_checks.same_rows(project, view, query)
        assert plans["sums"]["chosen"] == "GROUP_AGGREGATE", (step, kind, plans["sums"])
        assert plans["sums"]["executor"] == "arrow", (step, kind, plans["sums"])
        assert version(project, "sums") == before + 1  # the groups and the record: one commit
        want = ("GROUP_AGGREGATE", "arrow") if kind == "append" else ("GROUP_AGGREGATE", "spark")
        read, held = plans["extremes"].get("rows_changed"), plans["extremes"].get("input_rows")
        if kind != "append" and None not in (read, held) and read > held:
            want = ("FULL_RECOMPUTE", "spark")  # (the cost model: cheaper to recompute)
        got = plans["extremes"]["chosen"], plans["extremes"]["executor"]
        assert got == want, (step, kind, plans["extremes"])
    assert techniques(project.run())["sums"]["chosen"] == "NO_OP"  # the record was kept

    project.spark.conf.set(UP_TO_ROWS, "3")
    try:
        project.land("big.json", rows(rnd, 500, 4))
        result = project.run()
    finally:
        project.spark.conf.unset(UP_TO_ROWS)
    assert result.ok, result.failed()
    plan = techniques(result)["sums"]
    assert (plan["chosen"], plan["executor"]) == ("GROUP_AGGREGATE", "spark"), plan
    assert "rows changed, more than the 3 refreshed without Spark" in plan["executor_reason"]
    for view, query in QUERIES.items():
        view_checks.same_rows(project, view, query)


BUILT = """
from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.materialized_view
def totals():
    with open(spark.conf.get("source_dir") + "/built.txt", "a") as f:
        f.write("x")  # each time its query is built
    return spark.read.table("raw").groupBy("region").agg(
        F.sum("amount").alias("total"), F.count("amount").alias("amounts"),
        F.count("*").alias("n"),
    )
"""


def test_a_refresh_that_runs_no_query_builds_none(project):
    """The graph's analysis builds each query once an update, over stand-ins of its
    inputs; a refresh that is a NO_OP or a small change aggregated in Arrow plans on that
    one and builds no other (the query on the real tables lists their files: about half of
    such a refresh). A refresh that runs the query builds it on the real tables (and plans
    on it): the first, a recompute, and a change done in Spark, which builds it once more
    on the new rows."""
    rnd = random.Random(7)
    project.source("raw.py", RAW)
    project.source("views.py", BUILT)
    built = project.landing / "built.txt"
    query = "SELECT region, sum(amount) AS total, count(amount) AS amounts, count(*) AS n "
    query += "FROM {db}.raw GROUP BY region"

    def update(expected: tuple[str, str | None], builds: int) -> None:
        built.unlink(missing_ok=True)
        result = project.run()
        assert result.ok, result.failed()
        plan = techniques(result)["totals"]
        assert (plan["chosen"], plan.get("executor")) == expected, plan
        assert len(built.read_text()) == builds, plan
        view_checks.same_rows(project, "totals", query)

    project.land("0.json", rows(rnd, 0, 30))
    update(("FULL_RECOMPUTE", "spark"), 2)
    update(("NO_OP", None), 1)
    project.land("1.json", rows(rnd, 100, 5))
    update(("GROUP_AGGREGATE", "arrow"), 1)
    project.spark.sql(f"DELETE FROM {project.database}.raw WHERE id IN (3, 101)")
    update(("GROUP_AGGREGATE", "arrow"), 1)
    project.spark.conf.set(UP_TO_ROWS, "0")
    try:
        project.land("2.json", rows(rnd, 200, 5))
        update(("GROUP_AGGREGATE", "spark"), 3)  # (planned on the real tables; new rows)
    finally:
        project.spark.conf.unset(UP_TO_ROWS)


def test_a_stand_in_is_its_input_only_with_the_same_columns():
    """What the refresh checks before it plans on the analysed query: names, types and
    nullability at every depth (a column that may hold NULL where the stand-in's may not
    would change what the plan concludes), not field metadata."""
    from pyspark.sql.types import ArrayType, LongType, MapType, StringType, StructField
    from pyspark.sql.types import StructType as T

    from headwater.pipelines.runner.view_refresh import same_columns

    def schema(nullable: bool = True, inner: bool = True, name: str = "a") -> T:
        nested = T([StructField("x", ArrayType(LongType(), inner))])
        values = MapType(StringType(), nested, True)
        return T([StructField(name, LongType(), nullable), StructField("m", values)])

    assert same_columns(schema(), schema())
    with_metadata = T([StructField("a", LongType(), True, {"comment": "c"}), schema()["m"]])
    assert same_columns(schema(), with_metadata)
    assert not same_columns(schema(nullable=False), schema())
    assert not same_columns(schema(inner=False), schema())
    assert not same_columns(schema(name="b"), schema())
    assert not same_columns(T([*schema().fields, StructField("c", LongType())]), schema())
