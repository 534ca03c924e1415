"""headwater's COPY INTO against Spark's native batch load, in one run on the same files.

The source directory holds ``--files`` small JSON Lines files of ``--rows-per-file`` rows
each (the rows of ``bench_autoloader.py``: ``id`` long, ``ts`` ISO-8601 string, ``store``
string, ``amount`` double, ``nested`` object ``{a: int, b: string}``), written with numpy,
not Spark, so generation is in no timing. Three measurements, ours vs native, each run
``--repeat`` times (best time kept):

* **copy into, typed table**: ``copy_into(spark, "delta.`t`", src, "JSON")`` into an empty
  Delta table created with the schema, vs ``spark.read.json(src).write.parquet(out)``
  (Spark infers the schema: two passes over the files);
* **copy into, schemaless table**: into a table with no columns yet, with
  ``COPY_OPTIONS('mergeSchema'='true')`` (ours infers the schema too: two passes), vs the
  same native load;
* **rerun, no new files**: the typed-table COPY INTO run again; every file is in the load
  record, so nothing is read or written. Target: under 3 seconds. Its baseline is the
  native load run again (a plain Spark job has no record and reloads everything).

After every run the tables are read back; row counts and ``sum(id)`` must match the files,
so a fast wrong answer fails the run.

    .venv/bin/python bench/bench_copy_into.py --files 10000 --rows-per-file 20
"""

from __future__ import annotations

import argparse
from pathlib import Path

from _common import (
    best_of,
    check,
    markdown_table,
    parse_bench_args,
    run_and_report,
    timed,
)
from bench_autoloader import json_schema, land_json

RERUN_TARGET_S = 3.0

# measurement key -> (printed name, baseline)
MEASUREMENTS = {
    "typed": ("copy into, typed table", "`spark.read.json` (infers) + `.write.parquet`"),
    "schemaless": (
        "copy into, schemaless table",
        "`spark.read.json` (infers) + `.write.parquet`",
    ),
    "rerun": ("rerun, no new files", "the native load again (no load record)"),
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--files", type=int, default=10000, help="source files")
    p.add_argument("--rows-per-file", type=int, default=20, help="rows in each source file")
    return parse_bench_args(p, argv, at_least_one=("--files", "--rows-per-file"))


def run(spark, args: argparse.Namespace, run_dir: Path) -> dict:
    from pyspark.sql import functions as F

    from headwater.copyinto import copy_into, create_schemaless_table
    from headwater.delta.tables import DeltaTable

    files, per_file = args.files, args.rows_per_file
    rows = files * per_file
    src = run_dir / "source"
    src.mkdir(parents=True)
    gen_s, sizes = timed(lambda: [land_json(src, i, per_file) for i in range(files)])

    def path(name: str) -> str:
        return str(run_dir / name)

    def typed_table(name: str) -> str:
        DeltaTable.create(spark).location(path(name)).addColumns(json_schema()).execute()
        return f"delta.`{path(name)}`"

    def ours(target: str, **kw) -> dict:
        return copy_into(spark, target, str(src), "JSON", **kw).collect()[0].asDict()

    def native(name: str) -> None:
        spark.read.json(str(src)).write.mode("overwrite").parquet(path(name))

    def summary(df) -> tuple[int, int]:
        r = df.agg(F.count(F.lit(1)).alias("n"), F.sum("id").alias("s")).collect()[0]
        return int(r["n"]), int(r["s"] or 0)

    expected = (rows, rows * (rows - 1) // 2)

    def check_pair(what: str, ours_path: str, native_path: str) -> None:
        got = summary(spark.read.format("delta").load(ours_path))
        base = summary(spark.read.parquet(native_path))
        check(what, got == base == expected, {"ours": got, "native": base, "expected": expected})

    # Warm-up: JVM, Python workers, both writers, on a few files of their own.
    warm = run_dir / "warm"
    warm.mkdir()
    for i in range(4):
        land_json(warm, i, 5)
    warm_s, _ = timed(
        lambda: (
            copy_into(spark, typed_table("warm-ours"), str(warm), "JSON").collect(),
            spark.read.json(str(warm)).write.mode("overwrite").parquet(path("warm-native")),
        )
    )

    results: dict[str, dict] = {}

    def record(key: str, ours_s: float, native_s: float, all_times: dict, **extra) -> None:
        name, baseline = MEASUREMENTS[key]
        results[key] = {
            "name": name,
            "ours_s": ours_s,
            "native_s": native_s,
            "ratio": ours_s / native_s,
            "baseline": baseline,
            "runs": all_times,
            **extra,
        }

    # 1. typed table (the table's schema is the read schema: one pass over the files)
    targets = {}
    ours_s, native_s, times, res = best_of(
        args.repeat,
        lambda i: ours(targets[i]),
        lambda i: native(f"native-{i}"),
        prepare=lambda i: targets.__setitem__(i, typed_table(f"typed-{i}")),
    )
    for i in range(args.repeat):
        check_pair(f"typed (run {i})", path(f"typed-{i}"), path(f"native-{i}"))
    check("typed result", res["ours"]["num_inserted_rows"] == rows, res["ours"])
    record("typed", ours_s, native_s, times, **_rates(rows, ours_s, native_s))

    # 2. schemaless table (inferred schema, mergeSchema)
    def schemaless(i: int) -> str:
        create_schemaless_table(spark, f"bench.schemaless_{i}", path(f"schemaless-{i}"))
        return f"bench.schemaless_{i}"

    ours_s, native_s, times, res = best_of(
        args.repeat,
        lambda i: ours(schemaless(i), copy_options={"mergeSchema": "true"}),
        lambda i: native(f"native-s-{i}"),
    )
    for i in range(args.repeat):
        check_pair(f"schemaless (run {i})", path(f"schemaless-{i}"), path(f"native-s-{i}"))
    inferred = spark.read.format("delta").load(path("schemaless-0")).schema.simpleString()
    record("schemaless", ours_s, native_s, times, **_rates(rows, ours_s, native_s), schema=inferred)

    # 3. rerun with nothing new, on the first typed table
    ours_s, native_s, times, res = best_of(
        args.repeat, lambda i: ours(targets[0]), lambda i: native("native-0")
    )
    check("rerun loads nothing", res["ours"]["num_inserted_rows"] == 0, res["ours"])
    check_pair("rerun", path("typed-0"), path("native-0"))
    record(
        "rerun",
        ours_s,
        native_s,
        times,
        target_s=RERUN_TARGET_S,
        meets_target=ours_s < RERUN_TARGET_S,
    )

    return {
        "files": files,
        "rows_per_file": per_file,
        "rows": rows,
        "repeat": args.repeat,
        "source_bytes": sum(sizes),
        "generate_s": gen_s,
        "warmup_s": warm_s,
        "results": results,
    }


def _rates(rows: int, ours_s: float, native_s: float) -> dict:
    return {"ours_rows_per_s": rows / ours_s, "native_rows_per_s": rows / native_s}


def format_report(report: dict) -> str:
    env = report["environment"]
    lines = [
        f"date:      {env['date_utc']}",
        f"machine:   {env['platform']}, {env['cpu_count']} CPUs, {env['mem_total']} RAM",
        f"versions:  pyspark {env['pyspark']}, pyarrow {env['pyarrow']}, "
        f"deltalake {env['deltalake']}, python {env['python']}",
        f"run:       {report['files']:,} JSON files x {report['rows_per_file']:,} rows = "
        f"{report['rows']:,} rows ({report['source_bytes'] / 1024 / 1024:.1f} MiB), "
        f"master {env['spark_master']}, best of {report['repeat']}",
        "",
    ]
    table = [("measurement", "ours (s)", "native (s)", "ratio", "baseline")]
    for key in MEASUREMENTS:
        r = report["results"][key]
        table.append(
            (
                r["name"],
                f"{r['ours_s']:.3f}",
                f"{r['native_s']:.3f}",
                f"{r['ratio']:.2f}",
                r["baseline"],
            )
        )
    lines.extend(markdown_table(table))
    lines.append("")
    for key in ("typed", "schemaless"):
        r = report["results"][key]
        lines.append(
            f"{r['name']} throughput: ours {r['ours_rows_per_s']:,.0f} rows/s, "
            f"native {r['native_rows_per_s']:,.0f} rows/s"
        )
    rerun = report["results"]["rerun"]
    verdict = "met" if rerun["meets_target"] else "MISSED"
    lines.append(
        f"rerun with no new files: {rerun['ours_s']:.3f} s (target < {RERUN_TARGET_S:.0f} s: {verdict})"
    )
    lines.append("ratio = ours / native time (lower is better).")
    return "\n".join(lines)


def main(argv: list[str] | None = None, spark=None) -> dict:
    """Run, print and return the report (``spark``: see ``_common.run_and_report``)."""
    return run_and_report(parse_args(argv), "bench-copy-into", run, format_report, spark=spark)


if __name__ == "__main__":
    main()
