"""File skipping after liquid clustering and Z-order, against the same table unclustered.

One data set (``id``, ``a`` and ``b`` uniform over ``rows / 100`` values each, independent,
and a payload string) is written three times as the same number of files:

* **unclustered** (the baseline): rows spread at random, so every file holds every range
  of ``a`` and ``b``;
* **clustered**: ``CLUSTER BY (a)``, appended unclustered, then ``OPTIMIZE`` (timed, untimed
  in the ratios) with the target file size set to give the same number of files;
* **z-ordered**: ``OPTIMIZE ... ZORDER BY (a, b)`` of a copy of the unclustered table.

Measured for point filters (``col = v``, several values): the files a reader skipping by
the log's min/max statistics reads (delta-spark's and delta-rs's data skipping, headwater's
DML pruning), and the query's seconds through headwater's read
(``spark.read.format("delta").load(p).where(...).count()``, where Spark's Parquet reader
skips row groups by their statistics) and through delta-rs (which skips files by the log's).
The ratios are laid-out / unclustered (lower is better). Every count is checked against the
unclustered table's.

    .venv/bin/python bench/bench_clustering.py --rows 10000000 --files 64
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from _common import (
    check,
    header_lines,
    markdown_table,
    parse_bench_args,
    run_and_report,
)

TARGET = 0.5  # a point filter should cost at most half of the unclustered scan


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=10_000_000, help="rows in the table")
    p.add_argument("--files", type=int, default=64, help="data files of each table")
    p.add_argument("--points", type=int, default=5, help="point-filter values per column")
    return parse_bench_args(p, argv, at_least_one=("--rows", "--files", "--points"))


def run(spark, args: argparse.Namespace, run_dir: Path) -> dict:
    import pyarrow.compute as pc
    from deltalake import DeltaTable as RsTable
    from pyspark.sql import functions as F

    from headwater.delta.log.delta_log import DeltaLog
    from headwater.delta.read.pruning import keep_files, predicate_filters
    from headwater.delta.tables import DeltaTable

    n, files = args.rows, args.files
    keys = max(10, n // 100)
    data = spark.range(n).select(
        "id",
        F.pmod(F.xxhash64("id", F.lit(1)), F.lit(keys)).alias("a"),
        F.pmod(F.xxhash64("id", F.lit(2)), F.lit(keys)).alias("b"),
        F.concat(F.lit("payload-"), F.col("id").cast("string")).alias("s"),
    )
    plain, clustered, zordered = (str(run_dir / t) for t in ("plain", "clustered", "zordered"))
    data.repartition(files).write.format("delta").save(plain)
    data.repartition(files).write.format("delta").save(zordered)
    DeltaTable.create(spark).location(clustered).addColumns(data.schema).clusterBy("a").execute()
    data.repartition(files).write.format("delta").mode("append").save(clustered)
    table_bytes = sum(f.size for f in DeltaLog(plain).snapshot().files)
    spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(table_bytes // files + 1))
    layout_s = {}
    started = time.perf_counter()
    spark.sql(f"OPTIMIZE delta.`{clustered}`").collect()
    layout_s["clustered OPTIMIZE"] = time.perf_counter() - started
    started = time.perf_counter()
    DeltaTable.forPath(spark, zordered).optimize().executeZOrderBy("a", "b").collect()
    layout_s["z-order OPTIMIZE"] = time.perf_counter() - started
    spark.conf.unset("spark.databricks.delta.optimize.maxFileSize")

    values = [(i * 7919 + 13) % keys for i in range(args.points)]

    def files_read(path: str, predicate: str) -> int:
        snap = DeltaLog(path).snapshot()
        return len(keep_files(snap, predicate_filters(predicate, snap.schema)))

    def spark_query(path: str, col: str, v: int) -> tuple[float, int]:
        started = time.perf_counter()
        count = spark.read.format("delta").load(path).where(F.col(col) == v).count()
        return time.perf_counter() - started, count

    def rs_query(path: str, col: str, v: int) -> tuple[float, int]:
        started = time.perf_counter()
        dataset = RsTable(path).to_pyarrow_dataset()
        count = dataset.count_rows(filter=pc.field(col) == v)
        return time.perf_counter() - started, count

    def measure(path: str, col: str) -> dict:
        out: dict[str, list] = {"files": [], "spark": [], "rs": [], "counts": []}
        for v in values:
            out["files"].append(files_read(path, f"{col} = {v}"))
            best_spark, count = min(spark_query(path, col, v) for _ in range(args.repeat))
            best_rs, rs_count = min(rs_query(path, col, v) for _ in range(args.repeat))
            check(f"delta-rs count of {col} = {v} in {path}", rs_count == count, (rs_count, count))
            out["spark"].append(best_spark)
            out["rs"].append(best_rs)
            out["counts"].append(count)
        return out

    spark.read.format("delta").load(plain).where("a = -1").count()  # warm the JVM up
    cases = [("clustered", clustered, "a", "CLUSTER BY (a)")]
    cases += [("zordered", zordered, c, "ZORDER BY (a, b)") for c in ("a", "b")]
    baseline = {col: measure(plain, col) for col in ("a", "b")}
    total_files = {t: len(DeltaLog(p).snapshot().files) for t, p in
                   (("plain", plain), ("clustered", clustered), ("zordered", zordered))}  # fmt: skip
    results: dict[str, dict] = {}
    for tag, path, col, layout in cases:
        got = measure(path, col)
        base = baseline[col]
        check(f"{layout} counts of {col}", got["counts"] == base["counts"], got["counts"])
        ours, native = statistics.mean(got["spark"]), statistics.mean(base["spark"])
        results[f"{tag}_{col}"] = {
            "name": f"{col} = v, {layout}",
            "files_read": statistics.mean(got["files"]),
            "files_read_unclustered": statistics.mean(base["files"]),
            "files": total_files[tag],
            "ours_s": ours,
            "native_s": native,
            "ratio": ours / native,
            "rs_s": statistics.mean(got["rs"]),
            "rs_unclustered_s": statistics.mean(base["rs"]),
            "rs_ratio": statistics.mean(got["rs"]) / statistics.mean(base["rs"]),
            "target": TARGET,
            "meets_target": ours / native <= TARGET,
        }
    return {
        "rows": n,
        "files": total_files,
        "points": args.points,
        "table_bytes": table_bytes,
        "layout_s": layout_s,
        "results": results,
    }


def format_report(report: dict) -> str:
    env = report["environment"]
    lines = [
        *header_lines(env, ("pyspark", "pyarrow", "deltalake")),
        f"run:       {report['rows']:,} rows, {report['table_bytes'] / 2**20:.0f} MiB, files "
        + ", ".join(f"{k} {v}" for k, v in report["files"].items())
        + f"; {report['points']} point values per column, master {env['spark_master']}",
        "untimed:   " + ", ".join(f"{k} {v:.1f} s" for k, v in report["layout_s"].items()),
        "",
    ]
    table = [("point filter", "files read", "unclustered", "spark s", "unclust. s", "ratio",
              "delta-rs ratio", "target")]  # fmt: skip
    for r in report["results"].values():
        table.append(
            (
                r["name"],
                f"{r['files_read']:.1f} of {r['files']}",
                f"{r['files_read_unclustered']:.1f}",
                f"{r['ours_s']:.3f}",
                f"{r['native_s']:.3f}",
                f"{r['ratio']:.2f}",
                f"{r['rs_ratio']:.2f}",
                f"{r['target']:.2f}" + ("" if r["meets_target"] else "  (missed)"),
            )
        )
    lines += markdown_table(table, right_aligned=(1, 2, 3, 4, 5, 6, 7))
    lines.append(
        "files read = files whose log stats admit the value; ratio = laid out / unclustered"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None, spark=None) -> dict:
    """Run, print and return the report (``spark``: see ``_common.run_and_report``)."""
    return run_and_report(parse_args(argv), "bench-clustering", run, format_report, spark=spark)


if __name__ == "__main__":
    main()
