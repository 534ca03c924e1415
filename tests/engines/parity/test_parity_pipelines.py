"""Parity of a pipeline: one project run in-process (``headwater.pipelines.run``) twice,
with new data for the second update, on each engine. It has streaming tables over Auto
Loader, expectations with a quarantine, materialized views meant to refresh by each
technique (NO_OP, APPEND, GROUP_AGGREGATE, PARTITION_OVERWRITE, FULL_RECOMPUTE) and AUTO
CDC into SCD1 and SCD2 tables. Each update's flow statuses, rows, expectation counts and
the technique each view's refresh chose (the event log's ``planning_information``) must be
the same on both engines, and every table the same (tests/engines/parity/matrix.py)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml

from tests.engines.parity import matrix
from tests.engines.parity.matrix import collected, location, ran, row

DATABASE = "parity_pipeline"
SOURCES = """
import dlt
from pyspark import pipelines as dp
from pyspark.sql import Window
from pyspark.sql import functions as F

landing = spark.conf.get("landing")


def files(folder, schema):
    return (
        spark.readStream.format("cloudFiles").option("cloudFiles.format", "json")
        .schema(schema).load(f"{landing}/{folder}")
    )


@dp.table(partition_cols=["day"])
def orders():
    return files("orders", "id BIGINT, day STRING, region STRING, amount BIGINT")


@dp.table
def regions():  # its folder gets nothing new for the second update
    return files("regions", "region STRING, name STRING")


@dp.table
@dp.expect("small_id", "id < 100")
@dp.expect_or_drop("positive", "amount > 0")
@dp.expect_or_quarantine("known_region", "region IN ('eu', 'us')")
def clean_orders():
    return spark.readStream.table("orders")


@dp.materialized_view
def region_names():  # NO_OP: its input does not change
    return spark.read.table("regions").select("region", F.upper("name").alias("name"))


@dp.materialized_view
def big_orders():  # APPEND: a filter and projection of an input only appended to
    return spark.read.table("orders").where("amount > 20").select("id", "region", "amount")


@dp.materialized_view
def totals():  # GROUP_AGGREGATE
    return spark.read.table("orders").groupBy("region").agg(
        F.sum("amount").alias("amount"), F.count("*").alias("n")
    )


@dp.materialized_view(partition_cols=["day"])
def ranked():  # PARTITION_OVERWRITE: a window per partition of a partitioned input
    order = Window.partitionBy("day").orderBy(F.desc("amount"), "id")
    return spark.read.table("orders").select(
        "day", "id", "amount", F.row_number().over(order).alias("rank")
    )


@dp.materialized_view
def top_orders():  # FULL_RECOMPUTE: a LIMIT
    return spark.read.table("orders").orderBy(F.desc("amount"), "id").limit(3)


@dlt.table
def changes():
    return files("changes", "id BIGINT, name STRING, city STRING, op STRING, seq BIGINT")


for scd, target in ((1, "customers"), (2, "customers_history")):
    dlt.create_streaming_table(target)
    dlt.create_auto_cdc_flow(
        target=target,
        source="changes",
        keys=["id"],
        sequence_by=F.col("seq"),
        apply_as_deletes=F.expr("op = 'DELETE'"),
        except_column_list=["op", "seq"],
        stored_as_scd_type=scd,
    )
"""

DATASETS = (
    "orders",
    "regions",
    "clean_orders",
    "clean_orders_quarantine",
    "region_names",
    "big_orders",
    "totals",
    "ranked",
    "top_orders",
    "changes",
    "customers",
    "customers_history",
)


def order(i: int, day: str, region: str, amount: int) -> dict:
    return {"id": i, "day": day, "region": region, "amount": amount}


def change(i: int, name: str | None, city: str | None, op: str, seq: int) -> dict:
    return {"id": i, "name": name, "city": city, "op": op, "seq": seq}


# What lands before each update: rows that pass, are dropped, quarantined and warned of;
# the second update's orders all on a new day, change events out of order.
LANDED = [
    {
        "orders": [
            order(1, "2024-01-01", "eu", 10),
            order(2, "2024-01-01", "us", 30),
            order(3, "2024-01-02", "eu", 25),
            order(4, "2024-01-02", "asia", 40),
            order(5, "2024-01-02", "us", -5),
            order(150, "2024-01-01", "eu", 50),
        ],
        "regions": [{"region": "eu", "name": "Europe"}, {"region": "us", "name": "States"}],
        "changes": [
            change(1, "Ana", "Lima", "INSERT", 1),
            change(2, "Bo", "Oslo", "INSERT", 1),
            change(1, "Ana", "Cusco", "UPDATE", 3),
            change(3, "Cy", "Rome", "INSERT", 2),
        ],
    },
    {
        "orders": [
            order(6, "2024-01-03", "eu", 60),
            order(7, "2024-01-03", "us", 5),
            order(8, "2024-01-03", "mars", 70),
        ],
        "changes": [
            change(2, None, None, "DELETE", 4),
            change(1, "Ana", "Puno", "UPDATE", 2),  # late: older than seq 3
            change(3, "Cy", "Milan", "UPDATE", 5),
            change(4, "Di", "Kyiv", "INSERT", 3),
        ],
    },
]


def project(root: str) -> Path:
    """The pipeline's folder: spec, sources; its landing folder and storage beside."""
    folder = Path(root, "pipeline")
    (folder / "transformations").mkdir(parents=True)
    (folder / "transformations" / "parity.py").write_text(textwrap.dedent(SOURCES))
    spec = {
        "name": DATABASE,
        "storage": f"{root}/storage",
        "database": DATABASE,
        "configuration": {"landing": f"{root}/landing"},
        "libraries": [{"glob": {"include": "transformations/**"}}],
    }
    (folder / "spark-pipeline.yml").write_text(yaml.safe_dump(spec))
    return folder


def land(root: str, update: int) -> None:
    for folder, rows in LANDED[update].items():
        target = Path(root, "landing", folder)
        target.mkdir(parents=True, exist_ok=True)
        (target / f"{update}.json").write_text("".join(json.dumps(r) + "\n" for r in rows))


def techniques(result) -> dict[str, str]:
    """The technique each view's refresh chose, from the update's planning events."""
    return {
        e.dataset_name.split(".")[-1]: e.details["chosen"]
        for e in result.events
        if e.event_type == "planning_information"
    }


def update(spark, root: str, folder: Path, number: int) -> dict:
    from headwater import pipelines

    land(root, number)
    result = pipelines.run(folder, spark)
    flows = {
        name: (str(run.status), run.num_output_rows, run.changes)
        for name, run in sorted(result.flows.items())
    }
    return {
        "state": result.state,
        "flows": flows,
        "techniques": techniques(result),
        "rows": {name: collected(spark.table(f"{DATABASE}.{name}")) for name in DATASETS},
    }


def quality(spark, folder: Path) -> list[tuple]:
    """Each update's expectation counts (the update ids and times aside)."""
    from headwater import pipelines

    found = pipelines.quality(folder, spark)
    kept = [c for c in found.columns if "update" not in c and "time" not in c]
    return collected(found.select(*kept))


def pipeline_updates(spark, root):
    folder = project(root)
    updates = [update(spark, root, folder, number) for number in range(2)]
    tables = {name: location(spark, f"{DATABASE}.{name}") for name in DATASETS}
    return ran((updates, quality(spark, folder)), **tables)


OPERATIONS = [
    row(
        pipeline_updates,
        documented=["commit-names"],
        # the runner turns the change feed on in tables the views read
        protocol_in="create_with_change_data_feed",
    )
]


@pytest.mark.parametrize("op", OPERATIONS)
def test_pipelines(parity_runs, op):
    matrix.assert_parity(parity_runs[__file__], op)


def test_each_view_refreshed_by_the_technique_it_was_meant_for(parity_runs):
    """The pipeline exercises every technique (on headwater's engine; the parity row says
    delta-spark chose the same): all recomputed when new, then each by its own."""
    runs = parity_runs[__file__].outcomes["headwater"]["pipeline_updates"]
    first, second = runs["result"][0]
    assert set(first["techniques"].values()) == {"FULL_RECOMPUTE"}
    assert second["techniques"] == {
        "region_names": "NO_OP",
        "big_orders": "APPEND",
        "totals": "GROUP_AGGREGATE",
        "ranked": "PARTITION_OVERWRITE",
        "top_orders": "FULL_RECOMPUTE",
    }
