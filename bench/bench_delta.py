"""headwater's Delta format against Spark's own Parquet I/O, in one run on the same data.

Four measurements, each run ``--repeat`` times (best time kept), ours vs native:

* **batch write**: ``df.write.format("delta").mode("overwrite").save(p1)`` vs
  ``df.write.mode("overwrite").parquet(p2)``, from the same materialised source;
* **full scan + aggregate**: ``spark.read.format("delta").load(p1)`` vs
  ``spark.read.parquet(p2)``, ``groupBy(k).agg(sum(x), count(*))``;
* **filtered scan**: a 1% ``id`` range and a column subset, aggregated, on both tables;
* **streaming append**: the source directory read as a file stream
  (``maxFilesPerTrigger``) into the ``delta`` sink vs Spark's ``parquet`` file sink,
  ``trigger(availableNow=True)``, timed from ``start()`` to ``awaitTermination()``.

The ratio is ours/native time (lower is better); a measurement meets its target when the
ratio is at most the target. Every result is checked against the source, so a fast wrong
answer fails the run.

    .venv/bin/python bench/bench_delta.py --rows 10000000 --repeat 3 --json results.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
from pathlib import Path

from _common import (
    best_of,
    check,
    header_lines,
    parse_bench_args,
    ratio_table,
    run_and_report,
    timed,
)

# measurement key -> (printed name, target ratio ours/native)
MEASUREMENTS = {
    "write": ("batch write", 1.25),
    "scan": ("full scan + aggregate", 1.1),
    "filtered_scan": ("filtered scan", 1.1),
    "streaming": ("streaming append", 1.1),
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=10_000_000, help="rows in the generated data")
    return parse_bench_args(p, argv, at_least_one=("--rows",))


# -- data ------------------------------------------------------------------------------------


def source_layout(rows: int) -> tuple[int, int]:
    """(files in the source directory, maxFilesPerTrigger): about 8 micro-batches."""
    files = min(64, max(8, rows // 250_000))
    return files, max(1, files // 8)


def generate(spark, rows: int, files: int):
    """``rows`` rows, six columns: long, int, double, string, date, timestamp."""
    from pyspark.sql import functions as F

    return spark.range(0, rows, 1, numPartitions=files).select(
        F.col("id"),
        (F.col("id") % 100).cast("int").alias("k"),
        (F.rand(seed=42) * 1000.0).alias("x"),
        F.concat(
            F.lit("customer-"), F.lpad(((F.col("id") * 7919) % 10_000_019).cast("string"), 8, "0")
        ).alias("s"),
        F.date_add(F.lit(dt.date(2020, 1, 1)), (F.col("id") % 1500).cast("int")).alias("d"),
        F.timestamp_seconds(F.lit(1_577_836_800) + F.col("id") % 100_000_000).alias("ts"),
    )


# -- checks ----------------------------------------------------------------------------------


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)


# -- the run ---------------------------------------------------------------------------------


def run(spark, args: argparse.Namespace, run_dir: Path) -> dict:
    from pyspark.sql import functions as F

    rows = args.rows
    files, per_trigger = source_layout(rows)
    source_dir = str(run_dir / "source")
    delta_path = str(run_dir / "delta")
    parquet_path = str(run_dir / "parquet")

    # Materialise the source once, so generation cost is in neither timing.
    gen_s, _ = timed(
        lambda: generate(spark, rows, files).write.mode("overwrite").parquet(source_dir)
    )
    src = spark.read.parquet(source_dir)
    schema = src.schema

    def agg_by_k(df):
        rows_ = df.groupBy("k").agg(F.sum("x").alias("sx"), F.count("*").alias("n")).collect()
        return {r["k"]: (r["sx"], r["n"]) for r in rows_}

    lo = rows // 2
    hi = lo + max(1, rows // 100)

    def filtered(df):
        r = (
            df.filter((F.col("id") >= lo) & (F.col("id") < hi))
            .select("id", "x", "s")
            .agg(F.count("*").alias("n"), F.sum("x").alias("sx"), F.max("s").alias("ms"))
            .collect()[0]
        )
        return (r["n"], r["sx"], r["ms"])

    # Reference answers from the source (this also warms up the JVM for both sides alike).
    expected_agg = agg_by_k(src)
    expected_filtered = filtered(src)
    check("source", sum(n for _, n in expected_agg.values()) == rows, "row count")

    results: dict[str, dict] = {}

    def record(key: str, ours: float, native: float, all_times: dict, **extra) -> None:
        name, target = MEASUREMENTS[key]
        ratio = ours / native if native > 0 else float("inf")
        results[key] = {
            "name": name,
            "ours_s": ours,
            "native_s": native,
            "ratio": ratio,
            "target": target,
            "meets_target": ratio <= target,
            "runs": all_times,
            **extra,
        }

    # 1. batch write
    ours, native, all_times, _ = best_of(
        args.repeat,
        lambda i: src.write.format("delta").mode("overwrite").save(delta_path),
        lambda i: src.write.mode("overwrite").parquet(parquet_path),
    )
    record("write", ours, native, all_times)

    # 2. full scan + aggregate
    ours, native, all_times, res = best_of(
        args.repeat,
        lambda i: agg_by_k(spark.read.format("delta").load(delta_path)),
        lambda i: agg_by_k(spark.read.parquet(parquet_path)),
    )
    for side in ("ours", "native"):
        got = res[side]
        ok = got.keys() == expected_agg.keys() and all(
            got[k][1] == expected_agg[k][1] and _close(got[k][0], expected_agg[k][0]) for k in got
        )
        check(f"scan ({side})", ok, "aggregates differ from the source")
    record("scan", ours, native, all_times)

    # 3. filtered scan
    ours, native, all_times, res = best_of(
        args.repeat,
        lambda i: filtered(spark.read.format("delta").load(delta_path)),
        lambda i: filtered(spark.read.parquet(parquet_path)),
    )
    for side in ("ours", "native"):
        n, sx, ms = res[side]
        en, esx, ems = expected_filtered
        ok = n == en and ms == ems and _close(sx or 0.0, esx or 0.0)
        check(f"filtered scan ({side})", ok, (res[side], expected_filtered))
    record("filtered_scan", ours, native, all_times, rows_selected=expected_filtered[0])

    # 4. streaming append: same file-stream source, delta sink vs Spark's parquet file sink
    def stream(fmt: str, i: int) -> None:
        out = str(run_dir / f"stream-{fmt}-{i}")
        chk = str(run_dir / f"checkpoint-{fmt}-{i}")
        query = (
            spark.readStream.schema(schema)
            .option("maxFilesPerTrigger", per_trigger)
            .parquet(source_dir)
            .writeStream.format(fmt)
            .option("checkpointLocation", chk)
            .trigger(availableNow=True)
            .start(out)
        )
        query.awaitTermination()
        if query.exception() is not None:
            raise RuntimeError(f"{fmt} stream failed: {query.exception()}")

    ours, native, all_times, _ = best_of(
        args.repeat, lambda i: stream("delta", i), lambda i: stream("parquet", i)
    )
    for i in range(args.repeat):
        n_ours = spark.read.format("delta").load(str(run_dir / f"stream-delta-{i}")).count()
        n_native = spark.read.parquet(str(run_dir / f"stream-parquet-{i}")).count()
        check("streaming", n_ours == rows and n_native == rows, (n_ours, n_native, rows))
    record(
        "streaming",
        ours,
        native,
        all_times,
        ours_rows_per_s=rows / ours,
        native_rows_per_s=rows / native,
        micro_batches=math.ceil(files / per_trigger),
    )

    return {
        "rows": rows,
        "repeat": args.repeat,
        "source_files": files,
        "max_files_per_trigger": per_trigger,
        "generate_s": gen_s,
        "results": results,
    }


# -- report ----------------------------------------------------------------------------------


def format_report(report: dict) -> str:
    env = report["environment"]
    lines = [
        *header_lines(env),
        f"run:       {report['rows']:,} rows, master {env['spark_master']}, "
        f"best of {report['repeat']}, source {report['source_files']} files, "
        f"maxFilesPerTrigger {report['max_files_per_trigger']}",
        "",
        *ratio_table(report["results"][key] for key in MEASUREMENTS),
    ]
    s = report["results"]["streaming"]
    lines += [
        "",
        f"streaming throughput: ours {s['ours_rows_per_s']:,.0f} rows/s, "
        f"native {s['native_rows_per_s']:,.0f} rows/s "
        f"({s['micro_batches']} micro-batches)",
        "ratio = ours / native time; a measurement meets its target when ratio <= target.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None, spark=None) -> dict:
    """Run, print and return the report (``spark``: see ``_common.run_and_report``)."""
    return run_and_report(parse_args(argv), "bench-delta", run, format_report, spark=spark)


if __name__ == "__main__":
    main()
