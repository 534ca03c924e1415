"""Small-file ingest: Auto Loader against Spark's file source on one-record JSON files, in
one run on the same landing folder.

``--files`` files of one JSON record each (``id`` long, ``ts`` string, ``store`` string,
``amount`` double, ``nested`` ``{a: int, b: string}``), written with plain Python (no
timing). Both streams run ``trigger(availableNow=True)`` with the schema given and
``maxFilesPerTrigger`` = ``--files-per-trigger``, timed from building the reader to
``awaitTermination()``: ours (``cloudFiles`` json into the ``delta`` sink) against Spark's
(``spark.readStream.schema(s).json`` into its ``parquet`` file sink), best of
``--repeat``, each run on a fresh checkpoint and output. Both outputs are read back and must
hold every record once. Reported as files per hour (2 cores unless ``--master`` says
otherwise) and the ratio of times ours/native.

    .venv/bin/python bench/bench_autoloader_small_files.py --files 20000 --json out.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from _common import (
    best_of,
    check,
    header_lines,
    markdown_table,
    parse_bench_args,
    run_and_report,
)

SCHEMA = "id long, ts string, store string, amount double, nested struct<a: int, b: string>"
TARGET_FILES_PER_HOUR = 6_000_000  # the target on 2 cores


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=20_000, help="one-record JSON files")
    p.add_argument("--files-per-trigger", type=int, default=10_000, help="maxFilesPerTrigger")
    return parse_bench_args(p, argv, at_least_one=("files", "files_per_trigger"))


def land(folder: Path, files: int) -> None:
    folder.mkdir(parents=True)
    for i in range(files):
        record = {
            "id": i,
            "ts": f"2026-11-29T10:{i % 60:02d}:00",
            "store": f"s{i % 7}",
            "amount": i * 0.5,
            "nested": {"a": i % 100, "b": "x"},
        }
        (folder / f"{i:08d}.json").write_text(json.dumps(record) + "\n")


def run(spark, args: argparse.Namespace, run_dir: Path) -> dict:
    landing = run_dir / "landing"
    land(landing, args.files)
    per_trigger = str(args.files_per_trigger)

    def ours(i: int | str, source: Path = landing) -> str:
        out, ckpt = run_dir / f"ours{i}", run_dir / f"ours{i}_ck"
        (
            spark.readStream.format("cloudFiles")
            .option("cloudFiles.format", "json")
            .option("cloudFiles.maxFilesPerTrigger", per_trigger)
            .schema(SCHEMA)
            .load(str(source))
            .writeStream.format("delta")
            .option("checkpointLocation", str(ckpt))
            .trigger(availableNow=True)
            .start(str(out))
            .awaitTermination()
        )
        return "delta:" + str(out)

    def native(i: int | str, source: Path = landing) -> str:
        out, ckpt = run_dir / f"native{i}", run_dir / f"native{i}_ck"
        (
            spark.readStream.schema(SCHEMA)
            .option("maxFilesPerTrigger", per_trigger)
            .json(str(source))
            .writeStream.format("parquet")
            .option("checkpointLocation", str(ckpt))
            .trigger(availableNow=True)
            .start(str(out))
            .awaitTermination()
        )
        return "parquet:" + str(out)

    # Warm-up (JVM, Python workers, both sinks) on a few files, not timed.
    warm = run_dir / "warm"
    land(warm, 10)
    ours("warm", warm)
    native("warm", warm)
    ours_s, native_s, times, outputs = best_of(args.repeat, ours, native)
    expected = args.files * (args.files - 1) // 2
    for side, spec in outputs.items():
        fmt, path = str(spec).split(":", 1)
        row = spark.read.format(fmt).load(path).selectExpr("count(*) n", "sum(id) s").first()
        check(f"{side} rows", (row.n, row.s) == (args.files, expected), tuple(row))
    hour = 3600 * args.files
    result = {
        "name": f"{args.files:,} one-record JSON files",
        "ours_s": ours_s,
        "native_s": native_s,
        "ratio": ours_s / native_s,
        "target": TARGET_FILES_PER_HOUR,
        "ours_files_per_hour": hour / ours_s,
        "native_files_per_hour": hour / native_s,
        "meets_target": hour / ours_s >= TARGET_FILES_PER_HOUR,
        "times": times,
    }
    return {
        "files": args.files,
        "files_per_trigger": args.files_per_trigger,
        "repeat": args.repeat,
        "results": {"small_files": result},
    }


def format_report(report: dict) -> str:
    env = report["environment"]
    r = report["results"]["small_files"]
    table = [("measurement", "ours (s)", "native (s)", "ratio")]
    table.append((r["name"], f"{r['ours_s']:.3f}", f"{r['native_s']:.3f}", f"{r['ratio']:.2f}"))
    lines = [
        *header_lines(env, ("pyspark", "pyarrow", "deltalake")),
        f"run:       {report['files']:,} files, maxFilesPerTrigger "
        f"{report['files_per_trigger']:,}, availableNow, master {env['spark_master']}, "
        f"best of {report['repeat']}",
        "",
        *markdown_table(table),
        "",
        f"files/hour: ours {r['ours_files_per_hour'] / 1e6:.2f}M, native "
        f"{r['native_files_per_hour'] / 1e6:.2f}M (target {r['target'] / 1e6:.0f}M"
        + ("" if r["meets_target"] else ", missed")
        + ")",
        "ratio = ours / native time (lower is better).",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None, spark=None) -> dict:
    """Run, print and return the report (``spark``: see ``_common.run_and_report``)."""
    return run_and_report(
        parse_args(argv), "bench-autoloader-small-files", run, format_report, spark=spark
    )


if __name__ == "__main__":
    main()
