"""Materialized views refreshed by the least work: an update whose inputs did not change
commits nothing to the view (no-op), a change recomputes it or merges the new rows' groups
(the reason in the event log), and the refresh policy (Python and SQL) is honoured. Real pipelines, real Delta
tables; the view's rows always equal its query's."""

from __future__ import annotations

from deltalake import DeltaTable
from pipeline_rows import orders

from headwater.pipelines.runner.progress import summary

PIPELINE = """
import dlt
from pyspark import pipelines as dp
from pyspark.sql import functions as F

source = spark.conf.get("source_dir")


@dp.table
def raw():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaHints", "id bigint, amount bigint")
        .load(source + "/orders")
    )


@dlt.table{policy}
def total():
    return spark.read.table("raw").groupBy("region").agg(F.sum("amount").alias("amount"))


@dp.materialized_view
def sampled():
    return spark.read.table("raw").where(F.rand() < 2.0).groupBy().count()
"""


def planning(result, dataset: str) -> dict:
    found = [
        e.details
        for e in result.events
        if e.event_type == "planning_information" and (e.dataset_name or "").endswith(dataset)
    ]
    assert len(found) == 1, found
    return found[0]


def version(project, table: str) -> int:
    location = project.spark.sql(f"DESCRIBE DETAIL {project.database}.{table}").first()
    return DeltaTable(location["location"]).version()


def test_an_unchanged_input_leaves_the_view_alone_and_a_change_recomputes_it(project):
    project.source("p.py", PIPELINE.format(policy=""))
    project.land("1.json", orders(0, 3))
    first = project.run()
    assert first.ok
    assert planning(first, "total")["chosen"] == "FULL_RECOMPUTE"
    assert project.rows("total") == [("eu", 30)]
    before = version(project, "total")

    second = project.run()  # no new file: raw commits nothing
    assert second.ok
    plan = planning(second, "total")
    assert plan["chosen"] == "NO_OP", plan
    assert plan["reason"] == "no input changed since the last refresh"
    assert version(project, "total") == before  # nothing committed
    assert project.rows("total") == [("eu", 30)]
    assert second.flows["total"].technique == "NO_OP"
    assert "refreshed by: NO_OP" in summary(second)
    # a query that draws random numbers is recomputed every time, and says why
    assert planning(second, "sampled")["chosen"] == "FULL_RECOMPUTE"
    assert "not deterministic" in planning(second, "sampled")["reason"]

    project.land("2.json", orders(100, 2, region="us"))
    third = project.run()
    assert third.ok
    plan = planning(third, "total")  # only appended: the new rows' groups merged
    assert plan["chosen"] == "GROUP_AGGREGATE" and "only appended to" in plan["reason"]
    assert sorted(project.rows("total")) == [("eu", 30), ("us", 2010)]


def test_a_full_refresh_of_the_input_recomputes_the_view(project):
    project.source("p.py", PIPELINE.format(policy=""))
    project.land("1.json", orders(0, 3))
    assert project.run().ok
    assert project.run(full_refresh=["raw"]).ok  # raw only: emptied, then refilled
    result = project.run()
    assert result.ok
    plan = planning(result, "total")  # every group touched: recomputed, by key or whole
    assert plan["chosen"] in ("FULL_RECOMPUTE", "GROUP_AGGREGATE") and "'" in plan["reason"]
    assert "changed (updates)" in plan["reason"], plan
    assert project.rows("total") == [("eu", 30)]


def test_policy_full_recomputes_and_incremental_strict_fails_rather_than_recompute(project):
    project.source("p.py", PIPELINE.format(policy='(refresh_policy="full")'))
    project.land("1.json", orders(0, 3))
    assert project.run().ok
    again = project.run()
    assert planning(again, "total")["reason"] == "the view's refresh policy is FULL"

    project.source("p.py", PIPELINE.format(policy='(refresh_policy="incremental_strict")'))
    project.land("2.json", orders(10, 1))
    strict = project.run()  # the definition changed: built again, allowed
    assert strict.ok, strict.failed()
    assert project.rows("total") == [("eu", 130)]
    assert planning(project.run(), "total")["chosen"] == "NO_OP"
    project.land("3.json", orders(20, 1))
    assert planning(project.run(), "total")["chosen"] == "GROUP_AGGREGATE"
    assert project.rows("total") == [("eu", 330)]
    project.spark.sql(f"DELETE FROM {project.database}.raw WHERE id = 20")
    failed = project.run()
    assert not failed.ok
    error = str(failed.flows["total"].error)
    assert "MATERIALIZED_VIEW_NOT_INCREMENTALIZABLE" in error and "updates" in error
    assert project.rows("total") == [("eu", 330)]  # left as it was, never wrong


def test_sql_refresh_policy_clause(project):
    project.source(
        "raw.py",
        PIPELINE.split("@dlt.table")[0],
    )
    project.source(
        "total.sql",
        "CREATE MATERIALIZED VIEW total REFRESH POLICY FULL AS "
        "SELECT region, sum(amount) AS amount FROM raw GROUP BY region",
    )
    project.land("1.json", orders(0, 3))
    assert project.run().ok
    assert planning(project.run(), "total")["chosen"] == "FULL_RECOMPUTE"
