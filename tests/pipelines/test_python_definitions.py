"""Pipelines written as users write them for SDP (``pyspark.pipelines``) and for the
known system (``import dlt``), run unchanged: results checked table by table after a first
update and after new files land."""

from __future__ import annotations

from pipeline_rows import orders

MEDALLION_DP = """
from pyspark import pipelines as dp
from pyspark.sql import functions as F

source = spark.conf.get("source_dir")


@dp.table(comment="raw orders, as landed")
def bronze_orders():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.inferColumnTypes", "true")
        .load(source + "/orders")
    )


@dp.table
def silver_orders():
    return spark.readStream.table("bronze_orders").where("amount > 0")


@dp.materialized_view
def gold_by_region():
    return spark.read.table("silver_orders").groupBy("region").agg(
        F.count("*").alias("orders"), F.sum("amount").alias("total")
    )
"""


def test_dp_medallion_runs_and_takes_only_new_files_on_rerun(project):
    project.source("medallion.py", MEDALLION_DP)
    project.land("1.json", orders(0, 5) + orders(5, 3, "us"))
    first = project.run()
    assert first.ok, first.failed()
    assert project.count("bronze_orders") == 8
    assert project.count("silver_orders") == 7  # id 0 has amount 0
    assert project.rows("gold_by_region", "region") == [("eu", 4, 100), ("us", 3, 180)]
    assert first.flows["bronze_orders"].num_output_rows == 8

    project.land("2.json", orders(100, 2, "us"))
    second = project.run()
    assert second.ok, second.failed()
    assert second.flows["bronze_orders"].num_output_rows == 2
    assert second.flows["silver_orders"].num_output_rows == 2
    assert project.count("bronze_orders") == 10
    assert project.rows("gold_by_region", "region") == [("eu", 4, 100), ("us", 5, 2190)]


def test_graph_edges_come_from_reads_whatever_the_definition_order(project):
    project.source(
        "gold_first.py",
        """
        from pyspark import pipelines as dp

        @dp.materialized_view
        def totals():
            return spark.read.table("clean").groupBy().sum("amount")

        @dp.materialized_view
        def clean():
            return spark.read.table("raw").where("amount >= 20")

        @dp.materialized_view
        def raw():
            return spark.createDataFrame([(1, 10), (2, 20), (3, 30)], "id int, amount int")
        """,
    )
    result = project.run()
    assert result.ok, result.failed()
    assert list(result.flows) == ["raw", "clean", "totals"]
    assert result.graph.flows["totals"].inputs == (f"{project.database}.clean",)
    assert project.rows("totals") == [(50,)]


DLT_STYLE = """
import dlt
from pyspark.sql import functions as F

source = spark.conf.get("source_dir")


@dlt.view
def landed():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaHints", "id bigint, amount bigint")
        .load(source + "/orders")
    )


@dlt.table
def bronze():
    return dlt.read_stream("landed")


@dlt.table(comment="batch: a materialized view")
def regions():
    return dlt.read("bronze").select("region").distinct()


@dlt.table
def big():
    return spark.table("LIVE.bronze").where("amount >= 30")


dlt.create_streaming_table("all_orders")


@dlt.append_flow(target="all_orders")
def from_bronze():
    return dlt.read_stream("bronze").select("id", "amount")


@dlt.append_flow(target="all_orders", once=True)
def backfill():
    return spark.createDataFrame([(-1, 0)], "id bigint, amount bigint")
"""


def test_dlt_style_runs_unchanged(project):
    project.source("dlt_style.py", DLT_STYLE)
    project.land("1.json", orders(1, 4))
    result = project.run()
    assert result.ok, result.failed()
    kinds = {k.split(".")[-1]: d.kind for k, d in result.graph.datasets.items()}
    assert kinds == {
        "landed": "temporary_view",
        "bronze": "streaming_table",
        "regions": "materialized_view",
        "big": "materialized_view",
        "all_orders": "streaming_table",
    }
    assert project.count("bronze") == 4
    assert project.rows("regions") == [("eu",)]
    assert sorted(r[0] for r in project.rows("big")) == [3, 4]
    assert sorted(r[0] for r in project.rows("all_orders")) == [-1, 1, 2, 3, 4]
    assert not project.spark.catalog.tableExists(f"{project.database}.landed")

    project.land("2.json", orders(10, 1))
    again = project.run()
    assert again.ok, again.failed()
    # the backfill ran once only; the stream took the new file only
    assert sorted(r[0] for r in project.rows("all_orders")) == [-1, 1, 2, 3, 4, 10]


def test_two_append_flows_into_one_table_both_land_exactly_once(project):
    project.source(
        "two_flows.py",
        """
        from pyspark import pipelines as dp

        source = spark.conf.get("source_dir")
        dp.create_streaming_table("events")

        def landing(folder):
            return (
                spark.readStream.format("cloudFiles")
                .option("cloudFiles.format", "json")
                .option("cloudFiles.schemaHints", "id bigint, amount bigint")
                .load(f"{source}/{folder}")
            )

        @dp.append_flow(target="events")
        def from_eu():
            return landing("eu")

        @dp.append_flow(target="events")
        def from_us():
            return landing("us")
        """,
    )
    project.land("a.json", orders(0, 3), folder="eu")
    project.land("b.json", orders(100, 2, "us"), folder="us")
    assert project.run().ok
    assert project.count("events") == 5
    project.land("c.json", orders(200, 1, "us"), folder="us")
    result = project.run()
    assert result.ok
    assert result.flows["from_eu"].num_output_rows == 0
    assert result.flows["from_us"].num_output_rows == 1
    ids = sorted(r[0] for r in project.rows("events"))
    assert ids == [0, 1, 2, 100, 101, 200]
    assert (project.storage / "checkpoints" / "from_eu").is_dir()
    assert (project.storage / "checkpoints" / "from_us").is_dir()
