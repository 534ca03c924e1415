"""Reading Delta tables of many small files: headwater against ``spark.read.parquet`` on the
same folder, in one run.

Streaming writers leave tables of thousands of small files, one or a few per commit. For
each size (``--files``, default 100, 2,000 and 20,000 files of ``--rows-per-file`` rows,
committed ``--files-per-commit`` at a time), two reads are timed from the call to the
result, planning included, ``--repeat`` times (best kept), ours vs native:

* **count**: ``spark.read.format("delta").load(t).count()`` vs ``spark.read.parquet(t).count()``;
* **filtered scan**: the same with ``where(id < 100)``, a selective filter.

Both read the same files (the table holds no removed files, so the folder is the table).
Every result is checked against the known row counts.

    .venv/bin/python bench/bench_read_scaling.py --repeat 3 --json results.json
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from _common import (
    best_of,
    check,
    header_lines,
    parse_bench_args,
    ratio_table,
    run_and_report,
)

TARGET = 1.2
READS = ("count", "filtered scan")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--files", default="100,2000,20000", help="table sizes, in files")
    p.add_argument("--rows-per-file", type=int, default=10)
    p.add_argument("--files-per-commit", type=int, default=10)
    args = parse_bench_args(p, argv, at_least_one=("--rows-per-file", "--files-per-commit"))
    args.sizes = [int(s) for s in str(args.files).split(",") if s.strip()]
    return args


def make_table(root: str, files: int, rows: int, per_commit: int) -> None:
    """A Delta table of ``files`` Parquet files of ``rows`` rows (ids 0.. in order), written
    with pyarrow and committed ``per_commit`` files at a time through headwater's commit path."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.types import DoubleType, LongType, StructField, StructType

    from headwater.delta.log.actions import AddFile, now_ms
    from headwater.delta.log.commit import Transaction
    from headwater.delta.log.delta_log import DeltaLog, Snapshot
    from headwater.delta.log.operations import Operation
    from headwater.delta.write.create import create_table

    schema = StructType([StructField("id", LongType()), StructField("v", DoubleType())])
    create_table(root, schema)
    dlog = DeltaLog(root)
    table = dlog.load()
    for start in range(0, files, per_commit):
        adds = []
        for i in range(start, min(files, start + per_commit)):
            name = f"part-{i:06d}.parquet"
            first = i * rows
            pq.write_table(
                pa.table(
                    {
                        "id": pa.array(range(first, first + rows), pa.int64()),
                        "v": pa.array([i / 7.0] * rows, pa.float64()),
                    }
                ),
                os.path.join(root, name),
            )
            stats = {
                "numRecords": rows,
                "minValues": {"id": first},
                "maxValues": {"id": first + rows - 1},
                "nullCount": {"id": 0, "v": 0},
            }
            size = os.path.getsize(os.path.join(root, name))
            adds.append(AddFile(name, {}, size, now_ms(), True, json.dumps(stats)))
        table.update_incremental()
        txn = Transaction(dlog, Snapshot(dlog.root, table.version(), table), Operation("WRITE"))
        txn.add_files(adds)
        txn.commit()


def run(spark, args: argparse.Namespace, run_dir: Path) -> dict:
    results: dict[str, dict] = {}
    for files in args.sizes:
        root = str(run_dir / f"t{files}")
        make_table(root, files, args.rows_per_file, args.files_per_commit)
        total = files * args.rows_per_file
        selected = min(100, total)
        for read in READS:

            def go(fmt: str, read: str = read, root: str = root) -> int:
                df = (
                    spark.read.format("delta").load(root)
                    if fmt == "delta"
                    else spark.read.parquet(root)
                )
                return (df.where("id < 100") if read == "filtered scan" else df).count()

            ours, native, runs, res = best_of(
                args.repeat, lambda i, go=go: go("delta"), lambda i, go=go: go("parquet")
            )
            expected = selected if read == "filtered scan" else total
            check(f"{read}, {files} files", res["ours"] == res["native"] == expected, res)
            ratio = ours / native
            results[f"{read}/{files}"] = {
                "name": f"{read}, {files:,} files",
                "ours_s": ours,
                "native_s": native,
                "ratio": ratio,
                "target": TARGET,
                "meets_target": ratio <= TARGET,
                "runs": runs,
            }
    return {
        "sizes": args.sizes,
        "rows_per_file": args.rows_per_file,
        "files_per_commit": args.files_per_commit,
        "repeat": args.repeat,
        "results": results,
    }


def format_report(report: dict) -> str:
    env = report["environment"]
    lines = [
        *header_lines(env),
        f"run:       {report['rows_per_file']} rows per file, "
        f"{report['files_per_commit']} files per commit, master {env['spark_master']}, "
        f"best of {report['repeat']}",
        "",
        *ratio_table(report["results"].values(), first="read"),
        "ratio = ours / native time, planning included; native = spark.read.parquet.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None, spark=None) -> dict:
    """Run, print and return the report (``spark``: see ``_common.run_and_report``)."""
    return run_and_report(parse_args(argv), "bench-read-scaling", run, format_report, spark=spark)


if __name__ == "__main__":
    main()
