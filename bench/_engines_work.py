"""The operations of ``bench_engines.py``, run inside one engine's process.

``tests/engines/peer.py`` loads this file in the child process of either engine
(headwater's or delta-spark) and calls one function of it with that engine's SparkSession.
Every function does the same thing on either engine, through engine-neutral entry points
(the ``delta`` reader and writer, ``MERGE INTO delta.`<path>``` SQL, ``cloudFiles``), and
times only the action itself with ``time.perf_counter``. What it returns is plain data:
seconds, what the table holds afterwards (so the parent can check both engines agree) and
how many files the engine left.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:  # the child loads this file by path, not as a package
    sys.path.insert(0, str(BENCH))

from _merge_data import (  # noqa: E402
    checksum,
    generate_source,
    generate_target,
    write_source,
)
from bench_delta import generate, source_layout  # noqa: E402

MERGE_SQL = (
    "MERGE INTO delta.`{target}` t USING {source} s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
)
MERGE_DAYS = 16  # the target's days (its d column), as bench_merge.py's default


def configure(spark, shuffle_partitions: int) -> str:
    """The settings both engines run with (the tests' delta-spark session sets 2 shuffle
    partitions, headwater's keeps Spark's default): the same on both sides. Returns the
    versions and the JVM's maximum heap, so the report shows both engines had the same."""
    spark.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions))
    spark.conf.set("spark.sql.adaptive.enabled", "true")
    from importlib.metadata import version

    heap = spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
    return {
        "versions": f"pyspark {spark.version}, delta-spark {version('delta-spark')}",
        "heap_gib": round(heap / 2**30, 2),
    }


def _seconds(fn) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def table_files(spark, path: str) -> dict:
    """Files in the table's current version (``DESCRIBE DETAIL``), Parquet and deletion
    vector files on disk (removed ones included: what the engine leaves until VACUUM), and
    the engine named by its last commit (proof of which engine wrote it)."""
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    parquet = dvs = 0
    for _dir, dirs, names in os.walk(path):
        if "_delta_log" in dirs:
            dirs.remove("_delta_log")
        parquet += sum(n.endswith(".parquet") for n in names)
        dvs += sum(n.endswith(".bin") for n in names)
    commits = sorted(Path(path, "_delta_log").glob("*.json"))
    engine = ""
    for line in commits[-1].read_text().splitlines():
        action = json.loads(line)
        if "commitInfo" in action:
            engine = action["commitInfo"].get("engineInfo", "")
    return {
        "active_files": int(detail["numFiles"]),
        "parquet_on_disk": parquet,
        "dv_files_on_disk": dvs,
        "versions": len(commits),
        "engine_info": engine,
    }


# -- data each engine makes for itself -------------------------------------------------------


def prepare(spark, base: str, rows: int, merge_rows: int, loader_rows: int) -> dict:
    """Every input of the run, under ``base`` (untimed): the Parquet source of the
    streaming append, the MERGE target (a Delta table of this engine, never changed: each
    MERGE runs on a copy) and source, and Auto Loader's landing directory of JSON files."""
    files, _ = source_layout(rows)
    generate(spark, rows, files).write.mode("overwrite").parquet(f"{base}/source")
    generate_target(spark, rows, MERGE_DAYS).write.format("delta").save(f"{base}/merge-target")
    table, n_upd, n_ins = generate_source(rows, merge_rows, MERGE_DAYS, 0.125)
    write_source(table, Path(base, "merge-source"))
    loader_files = max(4, min(32, loader_rows // 50_000))
    (
        generate(spark, loader_rows, loader_files)
        .select("id", "k", "x", "s")
        .write.mode("overwrite")
        .json(f"{base}/landing")
    )
    return {"updates": n_upd, "inserts": n_ins, "loader_files": loader_files}


# -- the measured operations -----------------------------------------------------------------


def batch_write(spark, base: str, rows: int) -> dict:
    """The generated rows, cached in memory first (untimed) so the write is the measured
    work; each cached partition is one contiguous ``id`` range, so every file the write
    makes covers a narrow range and min/max statistics can skip it."""
    files, _ = source_layout(rows)
    df = generate(spark, rows, files).cache()
    df.count()
    path = f"{base}/table"
    seconds, _ = _seconds(lambda: df.write.format("delta").mode("overwrite").save(path))
    df.unpersist()
    return {"seconds": seconds, "files": table_files(spark, path)}


def full_scan(spark, base: str) -> dict:
    from pyspark.sql import functions as F

    df = spark.read.format("delta").load(f"{base}/table")
    query = df.groupBy("k").agg(F.sum("x").alias("sx"), F.count("*").alias("n"))
    seconds, got = _seconds(query.collect)
    answer = sorted((r["k"], round(r["sx"], 3), r["n"]) for r in got)
    return {"seconds": seconds, "answer": answer}


def filtered_scan(spark, base: str, rows: int) -> dict:
    """A 1% ``id`` range, three columns, aggregated; the files Spark's scan read."""
    from pyspark.sql import functions as F

    lo = rows // 2
    hi = lo + max(1, rows // 100)
    query = (
        spark.read.format("delta")
        .load(f"{base}/table")
        .filter((F.col("id") >= lo) & (F.col("id") < hi))
        .select("id", "x", "s")
        .agg(F.count("*").alias("n"), F.sum("x").alias("sx"), F.max("s").alias("ms"))
    )
    seconds, got = _seconds(query.collect)
    r = got[0]
    return {
        "seconds": seconds,
        "answer": [r["n"], round(r["sx"] or 0.0, 3), r["ms"]],
        "files_read": files_read(query),
        "files": table_files(spark, f"{base}/table")["active_files"],
    }


def files_read(df) -> int | None:
    """The sum of the ``numFiles`` ("number of files read") metric of every file scan in
    the plan that ran; None when no scan has it (a Python data source, for example)."""
    total, found = 0, False
    stack = [df._jdf.queryExecution().executedPlan()]
    while stack:
        node = stack.pop()
        name = node.getClass().getSimpleName()
        if name == "AdaptiveSparkPlanExec":
            stack.append(node.executedPlan())
            continue
        if name.endswith("QueryStageExec"):
            stack.append(node.plan())
            continue
        metrics = node.metrics()
        if metrics.contains("numFiles"):
            total += int(metrics.apply("numFiles").value())
            found = True
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))
    return total if found else None


def merge(spark, base: str, deletion_vectors: bool) -> dict:
    """MERGE the source (10% updates, 90% inserts) into a fresh copy of the target."""
    name = "merge-dv" if deletion_vectors else "merge"
    target = f"{base}/{name}"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(f"{base}/merge-target", target)
    if deletion_vectors:
        spark.sql(
            f"ALTER TABLE delta.`{target}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
        )
    spark.read.parquet(f"{base}/merge-source").createOrReplaceTempView("merge_source")
    statement = MERGE_SQL.format(target=target, source="merge_source")
    seconds, _ = _seconds(lambda: spark.sql(statement).collect())
    rows, sums = checksum(spark.read.format("delta").load(target))
    return {"seconds": seconds, "answer": [rows, str(sums)], "files": table_files(spark, target)}


def _available_now(stream, checkpoint: str, out: str) -> float:
    """Seconds from ``start()`` of ``stream`` into the ``delta`` sink at ``out``
    (``availableNow``) to the end of ``awaitTermination()``."""

    def run():
        query = (
            stream.writeStream.format("delta")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start(out)
        )
        query.awaitTermination()
        if query.exception() is not None:
            raise RuntimeError(f"the stream into {out} failed: {query.exception()}")

    return _seconds(run)[0]


def streaming_append(spark, base: str, rows: int, batches: int) -> dict:
    """The Parquet source read as a file stream (``batches`` micro-batches) into Delta,
    ``availableNow``, timed from ``start()`` to the end of ``awaitTermination()``."""
    files, _ = source_layout(rows)
    per_trigger = -(-files // batches)
    source = f"{base}/source"
    out, checkpoint = f"{base}/stream", f"{base}/stream-checkpoint"
    schema = spark.read.parquet(source).schema

    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", per_trigger)
    seconds = _available_now(stream.parquet(source), checkpoint, out)
    n = spark.read.format("delta").load(out).count()
    return {"seconds": seconds, "answer": [n], "files": table_files(spark, out)}


def auto_loader(spark, base: str, loader_files: int) -> dict:
    """headwater's ``cloudFiles`` source (JSON, inferred column types) into a Delta table of
    this engine. On delta-spark only the source is registered, so the ``delta`` sink is
    delta-spark's own (the commit's engineInfo shows it)."""
    from headwater.autoloader.source import CloudFilesDataSource

    spark.dataSource.register(CloudFilesDataSource)
    out = f"{base}/loaded"

    stream = (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.inferColumnTypes", "true")
        .option("cloudFiles.schemaLocation", f"{base}/loaded-schema")
        .option("cloudFiles.maxFilesPerTrigger", max(1, loader_files // 4))
        .load(f"{base}/landing")
        .select("id", "k", "x", "s")
    )
    seconds = _available_now(stream, f"{base}/loaded-checkpoint", out)
    from pyspark.sql import functions as F

    r = spark.read.format("delta").load(out).agg(F.count("*"), F.sum("id")).collect()[0]
    return {"seconds": seconds, "answer": [r[0], r[1]], "files": table_files(spark, out)}
