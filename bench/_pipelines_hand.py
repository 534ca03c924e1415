"""The pipelines benchmark's native baseline: the pipeline's flows written by hand as
Structured Streaming queries and batch writes into headwater's Delta tables, one after the
other in dependency order (see bench_pipelines.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _pipelines_workload import HINTS

# -- the hand-written flows ------------------------------------------------------------------


def hand_update(spark, db: str, checkpoints: Path, landing: Path) -> dict[str, float]:
    """The pipeline's flows as a user writes them without a runner: one query at a time in
    dependency order, each awaited. Seconds per flow, reader built to query ended."""
    from pyspark.sql import functions as F

    seconds: dict[str, float] = {}

    def stream(flow: str, target: str, build: Callable[[], Any]) -> None:
        start = time.perf_counter()
        query = (
            build()
            .writeStream.format("delta")
            .option("checkpointLocation", str(checkpoints / flow))
            .trigger(availableNow=True)
            .toTable(f"{db}.{target}")
        )
        query.awaitTermination()
        if query.exception() is not None:
            raise RuntimeError(f"hand-written flow {flow} failed: {query.exception()}")
        seconds[flow] = time.perf_counter() - start

    def view(name: str, build: Callable[[], Any]) -> None:
        start = time.perf_counter()
        build().write.format("delta").mode("overwrite").saveAsTable(f"{db}.{name}")
        seconds[name] = time.perf_counter() - start

    def table(name: str):
        return spark.read.table(f"{db}.{name}")

    def table_stream(name: str):
        return spark.readStream.table(f"{db}.{name}")

    stream(
        "bronze_orders",
        "bronze_orders",
        lambda: (
            spark.readStream.format("cloudFiles")
            .option("cloudFiles.format", "json")
            .option("cloudFiles.schemaLocation", str(checkpoints / "bronze_orders" / "schema"))
            .option("cloudFiles.schemaHints", HINTS)
            .load(str(landing))
        ),
    )
    stream(
        "silver_orders",
        "silver_orders",
        lambda: (
            table_stream("bronze_orders")
            .where("status = 'ok' AND amount > 0")
            .withColumn("revenue", F.col("amount") * F.col("qty"))
            .withColumn("day", F.to_date("ts"))
            .withColumn("hour", F.hour("ts"))
        ),
    )
    stream(
        "silver_returns",
        "silver_returns",
        lambda: (
            table_stream("bronze_orders")
            .where("status = 'returned'")
            .select(
                "id",
                "ts",
                "customer_id",
                "store",
                (-F.col("amount") * F.col("qty")).alias("refund"),
            )
        ),
    )
    stream(
        "ledger_sales",
        "ledger",
        lambda: table_stream("silver_orders").select(
            "id", "store", "day", F.col("revenue").alias("value"), F.lit("sale").alias("kind")
        ),
    )
    stream(
        "ledger_refunds",
        "ledger",
        lambda: table_stream("silver_returns").select(
            "id",
            "store",
            F.to_date("ts").alias("day"),
            F.col("refund").alias("value"),
            F.lit("refund").alias("kind"),
        ),
    )
    view(
        "gold_daily_sales",
        lambda: (
            table("silver_orders")
            .groupBy("day", "store")
            .agg(F.count("*").alias("orders"), F.sum("revenue").alias("revenue"))
        ),
    )
    view(
        "gold_customers",
        lambda: (
            table("silver_orders")
            .groupBy("customer_id")
            .agg(
                F.count("*").alias("orders"),
                F.sum("revenue").alias("revenue"),
                F.min("ts").alias("first_order"),
                F.max("ts").alias("last_order"),
            )
        ),
    )

    def store_returns():
        sales = (
            table("silver_orders")
            .groupBy("store")
            .agg(F.count("*").alias("orders"), F.sum("revenue").alias("revenue"))
        )
        refunds = (
            table("silver_returns")
            .groupBy("store")
            .agg(F.count("*").alias("returns"), F.sum("refund").alias("refunded"))
        )
        return sales.join(refunds, "store", "left").withColumn(
            "return_rate", F.col("returns") / F.col("orders")
        )

    view("gold_store_returns", store_returns)
    view(
        "gold_ledger",
        lambda: (
            table("ledger")
            .groupBy("store", "kind")
            .agg(F.count("*").alias("entries"), F.sum("value").alias("total"))
        ),
    )
    return seconds
