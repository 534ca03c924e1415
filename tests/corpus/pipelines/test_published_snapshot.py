"""The known platform's "apply changes from snapshot" demo, pattern 1: a snapshot table
read whole at every update and applied as SCD type 1 into ``orders`` with
``dlt.apply_changes_from_snapshot(snapshot_and_version=(DataFrame, version))``, the version
the load time in seconds, the table named from the pipeline's settings. The snapshots have
the demo generator's schema and moves: new orders, pending orders that move on, returned
orders that disappear (deletes)."""

from __future__ import annotations

import time

import pytest
from pipeline_corpus import Pipeline, assert_rows
from pipeline_sources import SOURCES

from headwater.errors import PipelineDefinitionError

SCHEMA = "order_id int, price int, order_status string, order_date string, customer_id string, product_id int"
NAMES = ("order_id", "price", "order_status", "order_date", "customer_id", "product_id")


def first_snapshot() -> list[tuple]:
    statuses = ("pending", "returned", "shipping", "re-ordered", "delivered")
    return [
        (i, 10 * i + 5, statuses[i % 5], f"2024-08-{1 + i:02d} 10:00:00", str(1 + i % 4), 1 + i % 5)
        for i in range(1, 11)
    ]


def second_snapshot(first: list[tuple]) -> list[tuple]:
    """Pending orders shipped (with a new date), even returned orders gone, two new."""
    moved = []
    for order in first:
        order_id, price, status, _, customer, product = order
        if status == "returned" and order_id % 2 == 0:
            continue
        if status == "pending":
            order = (order_id, price, "shipping", "2024-08-23 09:00:00", customer, product)
        moved.append(order)
    return moved + [
        (11, 999, "pending", "2024-08-23 10:00:00", "2", 3),
        (12, 15, "delivered", "2024-08-23 11:00:00", "4", 1),
    ]


@pytest.mark.xfail(
    strict=True,
    raises=PipelineDefinitionError,
    reason="apply_changes_from_snapshot(snapshot_and_version=(DataFrame, version)), a snapshot "
    "given as a pair, is refused: only a table name or a function is taken",
)
def test_snapshot_pattern1(tmp_path, spark):
    pipeline = Pipeline.create(tmp_path, spark, "snapshot_pattern1")
    # The demo's settings name the snapshot table's catalog and database.
    pipeline.spec(
        {"snapshot_source_catalog": "spark_catalog", "snapshot_source_database": pipeline.database}
    )
    pipeline.source("process_snapshot_pattern1.py", SOURCES["snapshot_pattern1"].text())
    first = first_snapshot()
    pipeline.append("orders_snapshot", first, SCHEMA)
    result = pipeline.run()
    assert result.ok, result.failed()
    assert_rows(pipeline.rows("orders"), [dict(zip(NAMES, r, strict=True)) for r in first])

    second = second_snapshot(first)
    spark.createDataFrame(second, SCHEMA).write.format("delta").mode("overwrite").saveAsTable(
        f"{pipeline.database}.orders_snapshot"
    )
    time.sleep(1.1)  # the version is the load time in whole seconds: the next one is greater
    result = pipeline.run()
    assert result.ok, result.failed()
    assert_rows(pipeline.rows("orders"), [dict(zip(NAMES, r, strict=True)) for r in second])
