"""A stream's whole life at small sizes: headwater's sources against Spark's own file sources.

Pipelines and tests start many short streams (``availableNow``: each update of each
streaming table starts one), so a stream's fixed cost is most of a small update's time.
headwater's ``delta`` and ``cloudFiles`` sources are Python data sources: Spark starts a
Python process for each stream (its ``python_streaming_source_runner``) and asks Python
workers to plan and read. Spark's ``parquet`` and ``json`` sources run in the JVM and are
the floor.

Measured, start to end of an ``availableNow`` stream into the ``noop`` sink, a new
checkpoint each time, over ``--files`` files of ``--rows`` rows in all:

* **delta** (ours) against ``parquet`` over the same table's data files (native);
* **cloudFiles** JSON (ours) against ``json`` over the same folder (native);
* the same two with the workers importing PySpark from Spark's zip, as they do without
  ``headwater.worker_site`` (``--no-zip`` skips them): what that module saves.

Every stream must read every row, so a fast wrong answer fails the run.

    .venv/bin/python bench/bench_stream_start.py --rows 100000 --files 10
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from _common import (
    best_of,
    check,
    header_lines,
    markdown_table,
    parse_bench_args,
    ratio_table,
    run_and_report,
    timed,
)

TARGET = 1.10


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=100_000, help="rows in all")
    p.add_argument("--files", type=int, default=10, help="files of the table and the folder")
    p.add_argument("--no-zip", action="store_true", help="skip the runs from Spark's zip")
    return parse_bench_args(p, argv, at_least_one=("--rows", "--files"))


def streamed_rows(spark, reader, checkpoint: Path) -> int:
    """Rows one ``availableNow`` stream of ``reader`` read into ``noop``."""
    query = (
        reader.writeStream.format("noop")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return sum(p["numInputRows"] for p in query.recentProgress)


@contextlib.contextmanager
def workers_from_spark_zip(spark) -> Iterator[None]:
    """Inside: the workers' path without headwater's ``worker_site`` folder; after: as it
    was. The sources are registered again each time, so their workers start with it."""
    from headwater.autoloader.source import CloudFilesDataSource
    from headwater.delta.read.source import DeltaDataSource

    def register() -> None:
        spark.dataSource.register(DeltaDataSource)
        spark.dataSource.register(CloudFilesDataSource)

    environment = spark.sparkContext.environment
    given = environment.get("PYTHONPATH", "")
    parts = [p for p in given.split(os.pathsep) if p and not p.endswith("worker_site")]
    environment["PYTHONPATH"] = os.pathsep.join(parts)
    register()
    try:
        yield
    finally:
        environment["PYTHONPATH"] = given
        register()


def run(spark, args: argparse.Namespace, run_dir: Path) -> dict:
    from pyspark.sql import functions as F

    n, files = args.rows, args.files
    table, landing = run_dir / "table", run_dir / "landing"
    data = spark.range(n).select("id", (F.col("id") % 97).alias("k")).repartition(files)
    data.write.format("delta").save(str(table))
    data.write.json(str(landing))
    runs = itertools.count()

    def side(make_reader: Callable[[], object]) -> Callable[[int], int]:
        return lambda _: streamed_rows(spark, make_reader(), run_dir / f"cp{next(runs)}")

    delta = side(lambda: spark.readStream.format("delta").load(str(table)))
    parquet = side(
        lambda: spark.readStream.schema("id long, k long").parquet(str(table)).select("id", "k")
    )
    options = {"cloudFiles.format": "json", "cloudFiles.schemaHints": "id bigint, k bigint"}
    schemas = itertools.count()

    def cloud_files():
        location = str(run_dir / f"schema{next(schemas)}")
        reader = spark.readStream.format("cloudFiles").options(**options)
        return reader.option("cloudFiles.schemaLocation", location).load(str(landing))

    auto_loader = side(cloud_files)
    json_files = side(lambda: spark.readStream.schema("id long, k long").json(str(landing)))

    measurements = [
        ("delta", "delta stream (ours) vs parquet (Spark's)", delta, parquet),
        ("cloudFiles", "cloudFiles JSON (ours) vs json (Spark's)", auto_loader, json_files),
    ]
    results: dict[str, dict] = {}
    for key, name, ours, native in measurements:
        ours(0), native(0)  # warm: the sources' daemons and first plans, untimed
        ours_s, native_s, times, rows = best_of(args.repeat, ours, native)
        check(f"{key} rows", rows == {"ours": n, "native": n}, rows)
        results[key] = {
            "name": name,
            "ours_s": ours_s,
            "native_s": native_s,
            "ratio": ours_s / native_s,
            "target": TARGET,
            "meets_target": ours_s / native_s <= TARGET,
            "times": times,
        }
    from_zip: dict[str, dict] = {}
    if not args.no_zip:
        with workers_from_spark_zip(spark):
            for key, _, ours, _ in measurements:
                ours(0)  # the daemons of the new path, untimed
                times, rows = [], set()
                for _ in range(args.repeat):
                    seconds, read = timed(lambda ours=ours: ours(0))
                    times.append(seconds)
                    rows.add(read)
                check(f"{key} rows, workers from the zip", rows == {n}, rows)
                from_zip[key] = {"zip_s": min(times), "times": times}
    return {"rows": n, "files": files, "results": results, "from_zip": from_zip}


def format_report(report: dict) -> str:
    env = report["environment"]
    lines = [
        *header_lines(env, ("pyspark", "pyarrow", "deltalake")),
        f"run:       {report['rows']:,} rows in {report['files']} files, availableNow into "
        f"noop, a new checkpoint per stream, master {env['spark_master']}",
        "",
    ]
    lines += ratio_table(report["results"].values(), first="stream, start to end")
    lines.append("ours = headwater's source; native = Spark's file source on the same files")
    if report["from_zip"]:
        table = [("ours, start to end", "workers from Spark's zip (s)", "as installed (s)")]
        for key, run in report["from_zip"].items():
            table.append((key, f"{run['zip_s']:.3f}", f"{report['results'][key]['ours_s']:.3f}"))
        lines += ["", *markdown_table(table)]
        lines.append("as installed = PySpark imported compiled (headwater.worker_site)")
    return "\n".join(lines)


def main(argv: list[str] | None = None, spark=None) -> dict:
    """Run, print and return the report (``spark``: see ``_common.run_and_report``)."""
    return run_and_report(parse_args(argv), "bench-stream-start", run, format_report, spark=spark)


if __name__ == "__main__":
    main()
