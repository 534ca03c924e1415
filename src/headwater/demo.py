"""The README's main job: a small end-to-end run on embedded defaults.

Rows are written to a Delta table by name, streamed incrementally into a second table,
aggregated in ``complete`` mode into a third, and read back by name and through SQL.
Running it again continues from the checkpoints: only the new rows are processed.
(The Auto Loader medallion demo replaces this once ``cloudFiles`` lands.)
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from pyspark.sql import functions as F

import headwater


def run(output: str = "demo-output", master: str | None = None, batches: int = 3) -> dict[str, int]:
    root = Path(output).resolve()
    spark = headwater.session("headwater-demo", master=master, warehouse=str(root / "warehouse"))
    checkpoints = root / "checkpoints"
    print(f"headwater demo: warehouse {root / 'warehouse'}")

    rng = random.Random()
    for b in range(batches):
        t0 = time.time()
        n = rng.randint(500, 1500)
        orders = (
            spark.range(n)
            .withColumn("order_id", F.expr("uuid()"))
            .withColumn(
                "store",
                F.element_at(
                    F.array(*[F.lit(s) for s in ("north", "south", "east", "west")]),
                    (F.col("id") % 4 + 1).cast("int"),
                ),
            )
            .withColumn("amount", F.round(F.rand() * 200, 2).cast("decimal(10,2)"))
            .withColumn("ordered_at", F.current_timestamp())
            .withColumn("order_date", F.current_date())
            .drop("id")
        )
        orders.write.mode("append").option("partitionBy", "order_date").saveAsTable("bronze.orders")
        print(f"  landed batch {b + 1}: {n} orders ({time.time() - t0:.1f}s)")

    silver = (
        spark.readStream.table("bronze.orders")
        .where("amount > 0")
        .withColumn("amount_band", F.when(F.col("amount") >= 100, "large").otherwise("small"))
    )
    q = (
        silver.writeStream.option("checkpointLocation", str(checkpoints / "silver_orders"))
        .trigger(availableNow=True)
        .toTable("silver.orders")
    )
    q.awaitTermination()
    print(f"  silver.orders: streamed {sum(p['numInputRows'] for p in q.recentProgress)} new rows")

    gold = (
        spark.readStream.table("silver.orders")
        .groupBy("store", "amount_band")
        .agg(F.count("*").alias("orders"), F.sum("amount").alias("revenue"))
    )
    q = (
        gold.writeStream.outputMode("complete")
        .option("checkpointLocation", str(checkpoints / "gold_store_sales"))
        .trigger(availableNow=True)
        .toTable("gold.store_sales")
    )
    q.awaitTermination()

    counts = {
        name: spark.table(name).count()
        for name in ("bronze.orders", "silver.orders", "gold.store_sales")
    }
    for name, count in counts.items():
        print(f"\n{name}: {count} rows")
        spark.table(name).show(5, truncate=False)
    print("SQL over the gold table:")
    spark.sql(
        "SELECT store, SUM(orders) AS orders, SUM(revenue) AS revenue "
        "FROM gold.store_sales GROUP BY store ORDER BY revenue DESC"
    ).show()
    return counts
