"""The MERGE/UPDATE/DELETE benchmark's tables and the checks of their answers: the target
and source rows, the UPDATE/DELETE predicates, and the row checksums and file sets that
every measured pair is compared with (see bench_merge.py)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

COLUMNS = ("id", "cust", "qty", "price", "amount", "status", "note", "d")
STATUSES = ("placed", "paid", "shipped", "delivered")
START = dt.date(2026, 1, 1)
CUSTOMERS = 100_000
UPDATES = {"amount": "amount + 1.5", "status": "'corrected'"}


# -- data ------------------------------------------------------------------------------------


def write_tasks(rows: int) -> int:
    """Tasks writing the target: files of ~150k rows (each a contiguous id range)."""
    return max(4, min(64, rows // 150_000))


def generate_target(spark, rows: int, partitions: int):
    """``rows`` orders; ``id`` ascending with ``d`` (``partitions`` days of equal size)."""
    from pyspark.sql import functions as F

    def h(salt: int, mod: int):
        return F.pmod(F.xxhash64(F.col("id"), F.lit(salt)), F.lit(mod))

    status = F.element_at(F.array(*[F.lit(s) for s in STATUSES]), (h(4, 4) + 1).cast("int"))
    note = F.concat(F.lit("order "), F.col("id").cast("string"), F.lit(" of a customer"))
    day = F.expr(f"CAST((id * {partitions}) div {rows} AS INT)")
    return (
        spark.range(0, rows, 1, numPartitions=write_tasks(rows))
        .select(
            F.col("id"),
            h(1, CUSTOMERS).cast("int").alias("cust"),
            (h(2, 50) + 1).cast("int").alias("qty"),
            (h(3, 100_000) / 100.0).alias("price"),
            status.alias("status"),
            note.alias("note"),
            F.date_add(F.lit(START), day).alias("d"),
        )
        .withColumn("amount", F.col("price") * F.col("qty"))
        .select(*COLUMNS)
    )


def generate_source(rows: int, source_rows: int, partitions: int, updates_from: float):
    """The MERGE source as an Arrow table: 10% existing keys (random, from the newest
    ``updates_from`` of the target), 90% new keys; rows shuffled. Also the numbers of
    updates and inserts."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(20261121)
    n_upd = source_rows // 10
    n_ins = source_rows - n_upd
    lo = rows - int(rows * updates_from)
    upd_ids = lo + rng.choice(rows - lo, size=n_upd, replace=False).astype(np.int64)
    ids = np.concatenate([upd_ids, np.arange(rows, rows + n_ins, dtype=np.int64)])
    is_upd = np.arange(source_rows) < n_upd
    order = rng.permutation(source_rows)
    ids, is_upd = ids[order], is_upd[order]
    qty = rng.integers(1, 51, size=source_rows).astype(np.int32)
    price = rng.integers(0, 100_000, size=source_rows) / 100.0
    days = (ids * partitions) // rows + (START - dt.date(1970, 1, 1)).days
    table = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "cust": pa.array(rng.integers(0, CUSTOMERS, size=source_rows).astype(np.int32)),
            "qty": pa.array(qty),
            "price": pa.array(price, pa.float64()),
            "amount": pa.array(price * qty, pa.float64()),
            "status": pa.array(np.where(is_upd, "updated", "placed").tolist(), pa.string()),
            "note": pa.array([f"merged order {i}" for i in ids.tolist()], pa.string()),
            "d": pa.array(days.astype(np.int32), pa.int32()).cast(pa.date32()),
        }
    )
    return table, n_upd, n_ins


def write_source(table, directory: Path, files: int = 4) -> None:
    """The source as ``files`` Parquet files with row groups Spark can split between tasks."""
    import pyarrow.parquet as pq

    directory.mkdir(parents=True)
    step = -(-table.num_rows // files)
    for i in range(files):
        part = table.slice(i * step, step)
        if part.num_rows:
            pq.write_table(part, directory / f"part-{i:05d}.parquet", row_group_size=131_072)


def dml_operations(rows: int) -> dict[str, tuple[str, dict[str, str] | None]]:
    """UPDATE/DELETE key -> (predicate, assignments or None for a delete)."""
    n = max(1, rows // 100)
    a, b = int(rows * 0.30), int(rows * 0.60)
    return {
        "update_range": (f"id >= {a} AND id < {a + n}", UPDATES),
        "update_scattered": ("cust % 100 = 3", UPDATES),
        "delete_range": (f"id >= {b} AND id < {b + n}", None),
        "delete_scattered": ("cust % 100 = 7", None),
    }


# -- checks ----------------------------------------------------------------------------------


def checksum(df) -> tuple[int, int]:
    """(rows, sum of xxhash64 over every column): equal for the same multiset of rows."""
    from pyspark.sql import functions as F

    r = (
        df.select(*COLUMNS)
        .agg(F.count("*"), F.sum(F.xxhash64(*COLUMNS).cast("decimal(38,0)")))
        .collect()[0]
    )
    return int(r[0]), int(r[1] or 0)


def expected_after(spark, key: str, ref, source_dir: str, predicate: str | None, sets):
    """What the table must hold after operation ``key``, computed by plain Spark."""
    from pyspark.sql import functions as F

    if key == "merge":
        src = spark.read.parquet(source_dir).select(*COLUMNS)
        return ref.join(src.select("id"), "id", "left_anti").select(*COLUMNS).unionByName(src)
    cond = F.coalesce(F.expr(predicate), F.lit(False))
    if sets is None:
        return ref.where(~cond)
    types = dict(ref.dtypes)
    return ref.select(
        *[
            F.when(cond, F.expr(sets[c]).cast(types[c])).otherwise(F.col(c)).alias(c)
            if c in sets
            else F.col(c)
            for c in COLUMNS
        ]
    )


def file_set(path: str) -> set[str]:
    import deltalake
    import pyarrow as pa

    return set(pa.table(deltalake.DeltaTable(path).get_add_actions()).column("path").to_pylist())


def delta_rs_rows(path: str) -> int:
    """Rows as delta-rs's query engine counts them (deletion vectors applied)."""
    import deltalake
    import pyarrow as pa

    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(path))
    return pa.table(query.execute("SELECT count(*) AS n FROM t").read_all()).column(0)[0].as_py()
