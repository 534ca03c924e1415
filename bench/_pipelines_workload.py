"""The pipelines benchmark's workload, shared by every side it measures: the landing files,
the pipeline's one source (ours with Auto Loader, SDP with the json file source), a project
folder, and the checks that each side's tables hold the same rows (see bench_pipelines.py)."""

from __future__ import annotations

import os
from pathlib import Path

from _common import check

# Every column hinted, so SDP's explicit schema is the same as Auto Loader's inferred one.
HINTS = (
    "id BIGINT, ts TIMESTAMP, customer_id INT, store STRING, qty INT, amount DOUBLE, status STRING"
)
STREAMING_FLOWS = (
    "bronze_orders",
    "silver_orders",
    "silver_returns",
    "ledger_sales",
    "ledger_refunds",
)
VIEWS = ("gold_daily_sales", "gold_customers", "gold_store_returns", "gold_ledger")
FLOWS = (*STREAMING_FLOWS, *VIEWS)
STREAMING_TABLES = ("bronze_orders", "silver_orders", "silver_returns", "ledger")
TABLES = (*STREAMING_TABLES, *VIEWS)
STORES = 50
CUSTOMERS = 10_000

# The pipeline's one source. ``{bronze}`` is the bronze reader: Auto Loader for ours, the
# plain json file source for SDP; the rest is the same text for both.
PIPELINE_SOURCE = '''\
"""Orders: bronze from the landing files, two silvers, a ledger fed by two flows, gold views."""

from pyspark import pipelines as dp
from pyspark.sql import functions as F

source = spark.conf.get("source_dir")


@dp.table(comment="orders as landed")
def bronze_orders():
    return {bronze}


@dp.table(comment="completed orders, with revenue, day and hour")
def silver_orders():
    return (
        spark.readStream.table("bronze_orders")
        .where("status = 'ok' AND amount > 0")
        .withColumn("revenue", F.col("amount") * F.col("qty"))
        .withColumn("day", F.to_date("ts"))
        .withColumn("hour", F.hour("ts"))
    )


@dp.table(comment="returned orders, with the refund")
def silver_returns():
    return (
        spark.readStream.table("bronze_orders")
        .where("status = 'returned'")
        .select("id", "ts", "customer_id", "store", (-F.col("amount") * F.col("qty")).alias("refund"))
    )


dp.create_streaming_table("ledger", comment="sales and refunds, one row each")


@dp.append_flow(target="ledger")
def ledger_sales():
    return spark.readStream.table("silver_orders").select(
        "id", "store", "day", F.col("revenue").alias("value"), F.lit("sale").alias("kind")
    )


@dp.append_flow(target="ledger")
def ledger_refunds():
    return spark.readStream.table("silver_returns").select(
        "id", "store", F.to_date("ts").alias("day"), F.col("refund").alias("value"),
        F.lit("refund").alias("kind"),
    )


@dp.materialized_view
def gold_daily_sales():
    return spark.read.table("silver_orders").groupBy("day", "store").agg(
        F.count("*").alias("orders"), F.sum("revenue").alias("revenue")
    )


@dp.materialized_view
def gold_customers():
    return spark.read.table("silver_orders").groupBy("customer_id").agg(
        F.count("*").alias("orders"), F.sum("revenue").alias("revenue"),
        F.min("ts").alias("first_order"), F.max("ts").alias("last_order"),
    )


@dp.materialized_view
def gold_store_returns():
    sales = spark.read.table("silver_orders").groupBy("store").agg(
        F.count("*").alias("orders"), F.sum("revenue").alias("revenue")
    )
    refunds = spark.read.table("silver_returns").groupBy("store").agg(
        F.count("*").alias("returns"), F.sum("refund").alias("refunded")
    )
    return sales.join(refunds, "store", "left").withColumn(
        "return_rate", F.col("returns") / F.col("orders")
    )


@dp.materialized_view
def gold_ledger():
    return spark.read.table("ledger").groupBy("store", "kind").agg(
        F.count("*").alias("entries"), F.sum("value").alias("total")
    )
'''

OURS_BRONZE = (
    'spark.readStream.format("cloudFiles").option("cloudFiles.format", "json")'
    f'.option("cloudFiles.schemaHints", "{HINTS}").load(source)'
)
SDP_BRONZE = f'spark.readStream.format("json").schema("{HINTS}").load(source)'


# -- landing files ---------------------------------------------------------------------------


def mixed(ids, salt: int):
    """A splitmix64-style hash of ``ids`` (uint64, wrapping): each column drawn from its own
    salt, so status, store and customer are not tied to each other through ``id``, as plain
    ``id * k % n`` columns are (every return then fell in stores that had no sale, and the
    join of the two silvers matched nothing)."""
    import numpy as np

    x = (ids.astype(np.uint64) + np.uint64(salt)) * np.uint64(0x9E3779B97F4A7C15)
    x ^= x >> np.uint64(31)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(29)
    return x


def file_columns(index: int, rows_per_file: int) -> dict:
    """The orders of landing file ``index`` (ids ``index * rows_per_file`` onwards): about
    80% ``ok``, 10% ``returned``, 10% ``cancelled``, spread over 30 days, 50 stores and
    10,000 customers, deterministic so both sides and the checks see the same rows."""
    import numpy as np

    ids = np.arange(index * rows_per_file, (index + 1) * rows_per_file, dtype=np.int64)
    start = np.datetime64("2024-01-01T00:00:00", "ms")
    ts = np.datetime_as_string(
        start + ((ids * 1_237) % (30 * 86_400_000)).astype("timedelta64[ms]"),
        unit="ms",
        timezone="UTC",
    )
    kind = mixed(ids, 1) % np.uint64(10)
    status = np.where(kind == 0, "returned", np.where(kind == 1, "cancelled", "ok"))
    stores = (mixed(ids, 2) % np.uint64(STORES)).astype(np.int64)
    return {
        "id": ids,
        "ts": ts,
        "customer_id": (mixed(ids, 3) % np.uint64(CUSTOMERS)).astype(np.int64),
        "store": np.char.add("store-", np.char.zfill(stores.astype(str), 2)),
        "qty": (1 + mixed(ids, 4) % np.uint64(5)).astype(np.int64),
        "amount": (mixed(ids, 5) % np.uint64(100_000)).astype(np.int64) / 100.0,
        "status": status,
    }


def land_file(directory: Path, index: int, rows_per_file: int) -> dict[str, int]:
    """Write landing file ``index`` (under a hidden name first, so no source sees half a
    file); what its rows add to each streaming table's count."""
    c = file_columns(index, rows_per_file)
    columns = [c[k].tolist() for k in ("id", "ts", "customer_id", "store", "qty", "amount")]
    lines = [
        f'{{"id":{i},"ts":"{t}","customer_id":{cu},"store":"{s}","qty":{q},'
        f'"amount":{a!r},"status":"{st}"}}\n'
        for i, t, cu, s, q, a, st in zip(*columns, c["status"].tolist(), strict=True)
    ]
    path = directory / f"part-{index:06d}.json"
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_text("".join(lines))
    os.replace(tmp, path)
    sales = int(((c["status"] == "ok") & (c["amount"] > 0)).sum())
    returns = int((c["status"] == "returned").sum())
    return {
        "bronze_orders": rows_per_file,
        "silver_orders": sales,
        "silver_returns": returns,
        "ledger": sales + returns,
    }


def land(directory: Path, first: int, count: int, rows_per_file: int) -> dict[str, int]:
    """Files ``first .. first + count - 1``; their rows per streaming table."""
    directory.mkdir(parents=True, exist_ok=True)
    total = dict.fromkeys(STREAMING_TABLES, 0)
    for i in range(first, first + count):
        for table, n in land_file(directory, i, rows_per_file).items():
            total[table] += n
    return total


def write_project(
    root: Path,
    name: str,
    landing: Path,
    source: str,
    database: str | None = None,
    conf: dict[str, str] | None = None,
) -> Path:
    """A pipeline project: ``spark-pipeline.yml`` and ``transformations/orders.py``. The
    storage is a ``file://`` URI, which SDP requires and headwater accepts; ``conf`` goes
    into the spec's ``configuration`` beside ``source_dir``."""
    import yaml

    (root / "transformations").mkdir(parents=True)
    (root / "transformations" / "orders.py").write_text(source)
    data = {
        "name": name,
        "storage": f"file://{root / 'storage'}",
        **({"database": database} if database else {}),
        "configuration": {"source_dir": str(landing), **(conf or {})},
        "libraries": [{"glob": {"include": "transformations/**"}}],
    }
    (root / "spark-pipeline.yml").write_text(yaml.safe_dump(data, sort_keys=False))
    return root


# -- checks ----------------------------------------------------------------------------------


def table_shapes(spark, db: str) -> dict[str, tuple[int, tuple[str, ...]]]:
    """Each table's row count and column names."""
    shapes = {}
    for name in TABLES:
        df = spark.read.table(f"{db}.{name}")
        shapes[name] = (df.count(), tuple(df.columns))
    return shapes


def check_tables(what: str, spark, ours_db: str, hand_db: str, expected: dict) -> dict:
    """Ours and hand-written hold the same tables, row counts and columns; the streaming
    tables hold the rows the landing files make. Returns the row counts."""
    ours, hand = table_shapes(spark, ours_db), table_shapes(spark, hand_db)
    for name in TABLES:
        check(f"{what}, {name}", ours[name] == hand[name], {"ours": ours[name], "hand": hand[name]})
    for name, n in expected.items():
        check(f"{what}, {name} vs landing", ours[name][0] == n, {"ours": ours[name][0], "want": n})
    return {name: ours[name][0] for name in TABLES}
