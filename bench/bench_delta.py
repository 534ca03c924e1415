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
import json
import math
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent

# measurement key -> (printed name, target ratio ours/native)
MEASUREMENTS = {
    "write": ("batch write", 1.25),
    "scan": ("full scan + aggregate", 1.1),
    "filtered_scan": ("filtered scan", 1.1),
    "streaming": ("streaming append", 1.25),
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=10_000_000, help="rows in the generated data")
    p.add_argument("--repeat", type=int, default=1, help="runs per measurement; best is kept")
    p.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    p.add_argument(
        "--workdir",
        default=None,
        help="where the run directory is created (default: bench/data/); "
        "the run directory is removed at the end unless --keep",
    )
    p.add_argument("--keep", action="store_true", help="keep the run directory")
    p.add_argument("--json", dest="json_out", default=None, help="also write results to this file")
    args = p.parse_args(argv)
    if args.rows < 1:
        p.error("--rows must be at least 1")
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    return args


# -- environment ---------------------------------------------------------------------------


def _mem_total() -> str:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    kib = int(line.split()[1])
                    return f"{kib / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def environment(spark) -> dict:
    import deltalake
    import pyspark

    return {
        "date_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "mem_total": _mem_total(),
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "deltalake": deltalake.__version__,
        "spark_master": spark.sparkContext.master,
    }


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


# -- timing ----------------------------------------------------------------------------------


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def best_of(repeat: int, ours: Callable[[int], object], native: Callable[[int], object]):
    """Run both sides ``repeat`` times (order alternating); best times and last results."""
    times: dict[str, list[float]] = {"ours": [], "native": []}
    results: dict[str, object] = {}
    for i in range(repeat):
        order = [("ours", ours), ("native", native)]
        if i % 2:
            order.reverse()
        for side, fn in order:
            seconds, results[side] = timed(lambda fn=fn, i=i: fn(i))
            times[side].append(seconds)
    return min(times["ours"]), min(times["native"]), times, results


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)


def _check(what: str, ok: bool, detail: object) -> None:
    if not ok:
        raise RuntimeError(f"benchmark result mismatch in {what}: {detail}")


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
    _check("source", sum(n for _, n in expected_agg.values()) == rows, "row count")

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
        _check(f"scan ({side})", ok, "aggregates differ from the source")
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
        _check(f"filtered scan ({side})", ok, (res[side], expected_filtered))
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
        _check("streaming", n_ours == rows and n_native == rows, (n_ours, n_native, rows))
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
        f"date:      {env['date_utc']}",
        f"machine:   {env['platform']}, {env['cpu_count']} CPUs, {env['mem_total']} RAM",
        f"versions:  pyspark {env['pyspark']}, deltalake {env['deltalake']}, "
        f"python {env['python']}",
        f"run:       {report['rows']:,} rows, master {env['spark_master']}, "
        f"best of {report['repeat']}, source {report['source_files']} files, "
        f"maxFilesPerTrigger {report['max_files_per_trigger']}",
        "",
    ]
    header = ("measurement", "ours (s)", "native (s)", "ratio", "target")
    table = [header]
    for key in MEASUREMENTS:
        r = report["results"][key]
        table.append(
            (
                r["name"],
                f"{r['ours_s']:.3f}",
                f"{r['native_s']:.3f}",
                f"{r['ratio']:.2f}",
                f"{r['target']:.2f}" + ("" if r["meets_target"] else "  (missed)"),
            )
        )
    widths = [max(len(row[c]) for row in table) for c in range(len(header))]

    def fmt_row(row) -> str:
        cells = [row[0].ljust(widths[0])] + [
            cell.rjust(widths[c]) if c < 4 else cell.ljust(widths[c])
            for c, cell in enumerate(row[1:], start=1)
        ]
        return "| " + " | ".join(cells) + " |"

    lines.append(fmt_row(table[0]))
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    lines.extend(fmt_row(row) for row in table[1:])
    s = report["results"]["streaming"]
    lines += [
        "",
        f"streaming throughput: ours {s['ours_rows_per_s']:,.0f} rows/s, "
        f"native {s['native_rows_per_s']:,.0f} rows/s "
        f"({s['micro_batches']} micro-batches)",
        "ratio = ours / native time; a measurement meets its target when ratio <= target.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    base = Path(args.workdir) if args.workdir else BENCH_DIR / "data"
    base.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="bench-delta-", dir=base)).resolve()

    import headwater

    spark = headwater.session(
        "headwater-bench", master=args.master, warehouse=str(run_dir / "warehouse")
    )
    try:
        report = run(spark, args, run_dir)
        report["environment"] = environment(spark)
    finally:
        spark.stop()
        if args.keep:
            print(f"kept {run_dir}", file=sys.stderr)
        else:
            shutil.rmtree(run_dir, ignore_errors=True)

    print(format_report(report), flush=True)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    return report


if __name__ == "__main__":
    main()
