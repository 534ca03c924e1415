"""The README's main job: a local medallion pipeline, declared, on embedded defaults.

Each run lands a few new files (JSON order events with duplicates, late events, a new
column mid-stream, a malformed line and a wrongly typed value; a CSV customer file), then
runs one update of a declarative pipeline whose sources are written next to the data
(``<output>/pipeline/``, Python in ``pyspark.pipelines`` style and SQL), as a user would
write them:

* bronze (Python): Auto Loader ingests the new files -> ``bronze.orders`` /
  ``bronze.customers`` (schema inferred with hints, new columns picked up, bad values
  rescued into ``_rescued_data``); records that could not be parsed are quarantined by an
  expectation, with the rules they broke -> ``bronze.orders_quarantine``;
* silver (Python): deduplicated within a watermark -> ``silver.orders``, with expectations
  of every action (warn on unknown stores, drop test orders of amount 0, fail on a missing
  order id);
* gold (SQL): hourly sales per store (a materialized view with an expectation) ->
  ``gold.hourly_sales``; orders joined with customers (a streaming table) ->
  ``gold.customer_orders``;

then prints the graph, every table's row count and a sample, the expectations' results
and the update's events from the event log. Run it again: only the new files flow.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import uuid
from pathlib import Path

import headwater
from headwater import pipelines
from headwater.errors import PipelineError
from headwater.pipelines.runner.progress import Printer, summary

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
            if rng.random() < 0.02:  # a till test: amount 0 (silver drops these)
                event["amount"] = 0.0
            if rng.random() < 0.02:  # a pop-up store nobody registered (silver warns)
                event["store"] = "kiosk"
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


SPEC = """name: medallion
storage: ../storage
libraries:
  - glob:
      include: transformations/**
configuration:
  demo.landing: {landing}
"""

BRONZE = """from pyspark import pipelines as dp

landing = spark.conf.get("demo.landing")


@dp.table(name="bronze.orders", comment="order events as landed")
@dp.expect_or_quarantine("parsed", "_rescued_data IS NULL AND order_id IS NOT NULL")
def bronze_orders():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.inferColumnTypes", "true")
        .option("cloudFiles.schemaHints", "amount double, event_time timestamp, customer_id int")
        .load(landing + "/orders")
    )


@dp.table(name="bronze.customers", comment="the customer file")
def bronze_customers():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "csv")
        .option("cloudFiles.inferColumnTypes", "true")
        .option("header", "true")
        .load(landing + "/customers")
    )
"""

SILVER = """from pyspark import pipelines as dp


@dp.table(name="silver.orders", comment="orders, each once")
@dp.expect("known_store", "store IN ('north', 'south', 'east', 'west')")
@dp.expect_or_drop("not_a_test", "amount > 0")
@dp.expect_or_fail("has_order_id", "order_id IS NOT NULL")
def silver_orders():
    return (
        spark.readStream.table("bronze.orders")
        .withWatermark("event_time", "6 hours")
        .dropDuplicatesWithinWatermark(["order_id"])
        .drop("_rescued_data")
    )
"""

GOLD = """-- Hourly sales per store, recomputed after silver.orders is up to date.
CREATE OR REFRESH MATERIALIZED VIEW gold.hourly_sales (
  CONSTRAINT has_revenue EXPECT (revenue > 0)
)
COMMENT 'orders and revenue per store and hour'
AS SELECT date_trunc('HOUR', event_time) AS hour, store,
          count(*) AS orders, round(sum(amount), 2) AS revenue
   FROM silver.orders
   GROUP BY date_trunc('HOUR', event_time), store;

-- Each new order, with its customer.
CREATE OR REFRESH STREAMING TABLE gold.customer_orders
AS SELECT o.order_id, o.event_time, o.store, o.amount, c.name, c.segment
   FROM STREAM(silver.orders) o
   LEFT JOIN bronze.customers c ON o.customer_id = c.customer_id;
"""

TABLES = (
    "bronze.orders", "bronze.orders_quarantine", "bronze.customers", "silver.orders",
    "gold.hourly_sales", "gold.customer_orders",
)  # fmt: skip


def write_pipeline(project: Path, landing: Path) -> None:
    """The pipeline's sources, written once (edit them and run again)."""
    if (project / "spark-pipeline.yml").exists():
        return
    (project / "transformations").mkdir(parents=True, exist_ok=True)
    (project / "spark-pipeline.yml").write_text(SPEC.format(landing=landing))
    (project / "transformations" / "bronze.py").write_text(BRONZE)
    (project / "transformations" / "silver.py").write_text(SILVER)
    (project / "transformations" / "gold.sql").write_text(GOLD)


def run(
    output: str = "demo-output",
    master: str | None = None,
    warehouse: str | None = None,
    conf: dict[str, str] | None = None,
    delta_engine: str | None = None,
) -> dict[str, int]:
    """Land files and run the pipeline once. ``warehouse`` may be on an object store
    (``s3://bucket/prefix``, its endpoint and keys in ``conf`` as ``spark.hadoop.fs.s3a.*``);
    landing files, checkpoints and the event log's storage stay under ``output``.
    ``delta_engine``: ``"delta-spark"`` runs the same pipeline on delta-spark's tables."""
    root = Path(output).resolve()
    landing, project = root / "landing", root / "pipeline"
    warehouse = warehouse or str(root / "warehouse")
    spark = headwater.session(
        "headwater-demo", master=master, warehouse=warehouse, conf=conf, delta_engine=delta_engine
    )
    run_no = (
        len(list((landing / "orders").glob("*-0.json"))) + 1 if (landing / "orders").exists() else 1
    )
    files = land_files(landing, run_no, random.Random(run_no))
    print(f"run {run_no}: landed {len(files)} files in {landing}")
    write_pipeline(project, landing)
    print(f"pipeline sources: {project / 'transformations'}")
    try:
        result = pipelines.run(project, spark, listeners=[Printer()])
    except PipelineError as e:  # the sources are wrong: one line, as the CLI says it
        raise SystemExit(f"error: {e}") from None
    print("\nThe graph (learned from what each definition reads):")
    print(result.graph.describe())
    print()
    print(summary(result))
    if not result.ok:  # what follows reads tables a failed flow may not have written
        failed = ", ".join(r.name for r in result.failed())
        raise SystemExit(
            f"The update {result.state.lower()} (failed: {failed or 'none'}); the summary "
            f"above has each flow's error. Fix it and run again: the files are kept."
        )
    counts = {t: spark.table(t).count() for t in TABLES}
    for t in TABLES:
        print(f"\n== {t}: {counts[t]} rows")
        spark.table(t).show(3, truncate=60)
    print("Quarantined by bronze's expectation, with the rules each record broke:")
    spark.table("bronze.orders_quarantine").select(
        "order_id", "amount", "_rescued_data", "_failed_expectations"
    ).show(5, truncate=60)
    print("The expectations of this update (pipeline_quality(...), no JSON to dig through):")
    pipelines.quality(project, spark).where(f"update_id = '{result.update_id}'").drop(
        "update_id", "update_time"
    ).show(20, truncate=False)
    print("The event log, as users query it (SQL on event_log(...)):")
    spark.sql(
        f"""
        SELECT origin.flow_name AS flow,
               details:flow_progress.status AS status,
               details:flow_progress.metrics.num_output_rows AS rows
        FROM event_log('{root / "storage"}')
        WHERE event_type = 'flow_progress' AND origin.update_id = '{result.update_id}'
          AND details:flow_progress.metrics IS NOT NULL
          AND details:flow_progress.status IN ('COMPLETED', 'FAILED')
        ORDER BY timestamp
        """
    ).show(20, truncate=False)
    print(f"Tables are under {warehouse}; run again to land and process new files.")
    return counts
