"""The README's main job: a local medallion pipeline on embedded defaults.

Each run lands a few new files (JSON order events with duplicates, late events, a new
column mid-stream, a malformed line and a wrongly typed value; a CSV customer file), then:

* bronze: Auto Loader ingests the new files into ``bronze.orders`` / ``bronze.customers``;
* silver: typed, deduplicated within a watermark -> ``silver.orders``; bad records, with
  their reason, -> ``silver.orders_quarantine``;
* gold: hourly sales per store in ``complete`` mode -> ``gold.hourly_sales``; orders joined
  with customers in ``append`` mode -> ``gold.customer_orders``;

and prints every table's row count and a sample. Run it again: only the new files flow.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import uuid
from pathlib import Path

from pyspark.sql import functions as F

import headwater
from headwater.autoloader import run_with_schema_evolution

STORES = ("north", "south", "east", "west")


def land_files(landing: Path, run: int, rng: random.Random) -> list[Path]:
    """Write this run's landing files; returns them."""
    orders = landing / "orders"
    customers = landing / "customers"
    orders.mkdir(parents=True, exist_ok=True)
    customers.mkdir(parents=True, exist_ok=True)
    now = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(hours=6 * run)
    written = []
    seen: list[dict] = []
    for n in range(3):
        lines = []
        for _ in range(rng.randint(150, 250)):
            event = {
                "order_id": str(uuid.UUID(int=rng.getrandbits(128))),
                "customer_id": rng.randint(1, 50),
                "store": rng.choice(STORES),
                "amount": round(rng.uniform(1, 300), 2),
                "event_time": (now + dt.timedelta(minutes=rng.randint(0, 300))).isoformat(),
            }
            if n >= 1:  # the schema changes mid-stream: a new column appears
                event["coupon"] = rng.choice([None, "WELCOME", "SPRING"])
            seen.append(event)
            lines.append(json.dumps(event))
        lines += [json.dumps(e) for e in rng.sample(seen, 5)]  # duplicates, re-sent
        late = dict(rng.choice(seen), order_id=str(uuid.uuid4()))
        late["event_time"] = (now - dt.timedelta(hours=3)).isoformat()  # a late event
        lines.append(json.dumps(late))
        if n == 2:
            lines.append('{"order_id": "broken", "amount": 12.5,')  # malformed
            lines.append(
                json.dumps({**seen[0], "order_id": str(uuid.uuid4()), "amount": "n/a"})
            )  # wrong type
        path = orders / f"orders-run{run:03d}-{n}.json"
        path.write_text("\n".join(lines) + "\n")
        written.append(path)
    if run == 1:
        rows = ["customer_id,name,segment"] + [
            f"{i},Customer {i},{rng.choice(['retail', 'business'])}" for i in range(1, 51)
        ]
        path = customers / "customers.csv"
        path.write_text("\n".join(rows) + "\n")
        written.append(path)
    return written


def run(output: str = "demo-output", master: str | None = None) -> dict[str, int]:
    root = Path(output).resolve()
    landing, checkpoints = root / "landing", root / "checkpoints"
    spark = headwater.session("headwater-demo", master=master, warehouse=str(root / "warehouse"))
    run_no = (
        len(list((landing / "orders").glob("*-0.json"))) + 1 if (landing / "orders").exists() else 1
    )
    files = land_files(landing, run_no, random.Random(run_no))
    print(f"run {run_no}: landed {len(files)} files in {landing}")

    def ingest(name: str, fmt: str, **options: str):
        def start():
            reader = (
                spark.readStream.format("cloudFiles")
                .option("cloudFiles.format", fmt)
                .option("cloudFiles.schemaLocation", str(checkpoints / name))
                .option("cloudFiles.inferColumnTypes", "true")
            )
            for k, v in options.items():
                reader = reader.option(k, v)
            return (
                reader.load(str(landing / name.split("_", 1)[1]))
                .writeStream.option("checkpointLocation", str(checkpoints / name))
                .option("mergeSchema", "true")
                .trigger(availableNow=True)
                .toTable(f"bronze.{name.split('_', 1)[1]}")
            )

        query = run_with_schema_evolution(start)
        rows = sum(p["numInputRows"] for p in query.recentProgress)
        print(f"  Auto Loader -> bronze.{name.split('_', 1)[1]}: {rows} new rows")
        return query

    ingest(
        "bronze_orders",
        "json",
        **{"cloudFiles.schemaHints": "amount double, event_time timestamp, customer_id int"},
    )
    ingest("bronze_customers", "csv", header="true")

    bronze = spark.readStream.table("bronze.orders")
    bad = F.col("_rescued_data").isNotNull() | F.col("order_id").isNull() | F.col("amount").isNull()
    reason = (
        F.when(F.col("order_id").isNull(), "malformed record")
        .when(
            F.col("_rescued_data").isNotNull(), F.concat(F.lit("rescued: "), F.col("_rescued_data"))
        )
        .otherwise("missing amount")
    )
    good = (
        bronze.where(~bad)
        .withWatermark("event_time", "6 hours")
        .dropDuplicatesWithinWatermark(["order_id"])
        .drop("_rescued_data")
    )
    _run(good.writeStream, checkpoints / "silver_orders", "silver.orders")
    _run(
        bronze.where(bad).withColumn("reason", reason).writeStream,
        checkpoints / "silver_quarantine",
        "silver.orders_quarantine",
    )

    silver = spark.readStream.table("silver.orders")
    hourly = silver.groupBy(F.window("event_time", "1 hour").alias("hour"), "store").agg(
        F.count("*").alias("orders"), F.round(F.sum("amount"), 2).alias("revenue")
    )
    _run(
        hourly.writeStream.outputMode("complete"), checkpoints / "gold_hourly", "gold.hourly_sales"
    )
    customers = spark.table("bronze.customers").select("customer_id", "name", "segment")
    enriched = silver.join(customers, "customer_id", "left").select(
        "order_id", "event_time", "store", "amount", "name", "segment"
    )
    _run(enriched.writeStream, checkpoints / "gold_customer_orders", "gold.customer_orders")

    tables = [
        "bronze.orders", "bronze.customers", "silver.orders", "silver.orders_quarantine",
        "gold.hourly_sales", "gold.customer_orders",
    ]  # fmt: skip
    counts = {t: spark.table(t).count() for t in tables}
    for t in tables:
        print(f"\n== {t}: {counts[t]} rows")
        spark.table(t).show(3, truncate=60)
    print("What Auto Loader rescued into bronze.orders._rescued_data:")
    spark.table("bronze.orders").where("_rescued_data IS NOT NULL").select(
        "order_id", "_rescued_data"
    ).show(5, truncate=100)
    print(f"Tables are under {root / 'warehouse'}; run again to land and process new files.")
    return counts


def _run(writer, checkpoint: Path, table: str) -> None:
    writer.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).toTable(
        table
    ).awaitTermination()
