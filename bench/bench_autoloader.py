"""headwater's Auto Loader (``cloudFiles``) against Spark's own file source, in one run on the
same landing files.

The landing directory holds ``--files`` JSON Lines files of ``--rows-per-file`` rows each
(``id`` long, ``ts`` ISO-8601 string, ``store`` string, ``amount`` double, ``nested``
object ``{a: int, b: string}``) and the same rows as CSV files with a header (``nested``
flattened to ``nested_a``, ``nested_b``). They are written with numpy/pyarrow, not Spark, so
generation is in no timing. Five measurements, each run ``--repeat`` times (best time kept),
ours vs native, every query ``trigger(availableNow=True)`` timed from building the reader to
``awaitTermination()``:

* **json ingest**: ``cloudFiles`` json with the schema given by ``.schema(...)`` (no
  inference) into the ``delta`` sink vs ``spark.readStream.schema(s).json(landing)`` into
  Spark's ``parquet`` file sink, both ``maxFilesPerTrigger`` = files / 4;
* **json ingest, inferred schema**: ``cloudFiles`` json with ``cloudFiles.inferColumnTypes``
  and no ``.schema`` (the stream infers and stores the schema) vs a *batch*
  ``spark.read.json(landing)`` (Spark infers the schema) written with ``.write.parquet``;
* **csv ingest**: as json ingest, on the CSV files (header, schema given on both sides);
* **rerun, no new files**: the json ingest query started again on its checkpoint with
  nothing new, ours vs Spark's file source on its own checkpoint;
* **discovery of 1 new file among F**: one more file lands after the ingest; the same query
  runs again and picks up just that file, which shows the per-trigger cost of a directory
  whose F files were all seen before.

The ratio is ours/native time (lower is better); a measurement with a target meets it when
the ratio is at most the target. After every pair both outputs are read back
(``spark.read.format("delta").load`` and ``spark.read.parquet``) and their row counts,
``sum(id)`` and non-null ``ts`` counts must match each other and the landing files, so a fast
wrong answer fails the run.

    .venv/bin/python bench/bench_autoloader.py --files 2000 --rows-per-file 500 --json out.json
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from pathlib import Path

from _common import (
    best_of,
    check,
    markdown_table,
    parse_bench_args,
    run_and_report,
    timed,
)

# measurement key -> (printed name, target ratio ours/native or None, baseline)
# "F" in a name is replaced by the number of landing files.
MEASUREMENTS = {
    "json": (
        "json ingest",
        1.25,
        "`readStream.schema(s).json` → Spark's `parquet` file sink",
    ),
    "json_inferred": (
        "json ingest, inferred schema",
        None,
        "batch: `spark.read.json` (infers the schema) + `.write.parquet`",
    ),
    "csv": (
        "csv ingest",
        1.25,
        "`readStream.schema(s).csv` (header) → Spark's `parquet` file sink",
    ),
    "rerun": (
        "rerun, no new files",
        None,
        "Spark's file source rerun on its checkpoint",
    ),
    "discovery": (
        "discovery of 1 new file among F",
        None,
        "Spark's file source, same checkpoint, 1 new file",
    ),
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--files", type=int, default=2000, help="landing files per format")
    p.add_argument("--rows-per-file", type=int, default=500, help="rows in each landing file")
    return parse_bench_args(p, argv, at_least_one=("--files", "--rows-per-file"))


# -- landing files ---------------------------------------------------------------------------


def json_schema():
    from pyspark.sql.types import (
        DoubleType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    nested = StructType([StructField("a", IntegerType()), StructField("b", StringType())])
    return StructType(
        [
            StructField("id", LongType()),
            StructField("ts", TimestampType()),
            StructField("store", StringType()),
            StructField("amount", DoubleType()),
            StructField("nested", nested),
        ]
    )


def csv_schema():
    from pyspark.sql.types import (
        DoubleType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    return StructType(
        [
            StructField("id", LongType()),
            StructField("ts", TimestampType()),
            StructField("store", StringType()),
            StructField("amount", DoubleType()),
            StructField("nested_a", IntegerType()),
            StructField("nested_b", StringType()),
        ]
    )


def file_columns(index: int, rows_per_file: int) -> dict:
    """The rows of landing file ``index``: ids ``index * rows_per_file`` onwards."""
    import numpy as np

    ids = np.arange(index * rows_per_file, (index + 1) * rows_per_file, dtype=np.int64)
    start = np.datetime64("2024-01-01T00:00:00", "ms")
    ts = np.datetime_as_string(
        start + ((ids * 1_237) % 31_536_000_000).astype("timedelta64[ms]"),
        unit="ms",
        timezone="UTC",
    )
    return {
        "id": ids,
        "ts": ts,
        "store": np.char.add("store-", np.char.zfill(((ids * 7919) % 250).astype(str), 3)),
        "amount": ((ids * 2_654_435_761) % 100_000) / 100.0,
        "nested_a": (ids % 1000).astype(np.int32),
        "nested_b": np.char.add("b", (ids % 7).astype(str)),
    }


def _land(path: Path, write: Callable[[Path], None]) -> int:
    """Write ``path`` under a hidden name first, so no source ever sees half a file."""
    tmp = path.with_name("." + path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)
    return path.stat().st_size


def land_json(directory: Path, index: int, rows_per_file: int) -> int:
    c = file_columns(index, rows_per_file)
    lines = [
        f'{{"id":{i},"ts":"{t}","store":"{s}","amount":{a!r},"nested":{{"a":{na},"b":"{nb}"}}}}\n'
        for i, t, s, a, na, nb in zip(
            c["id"].tolist(),
            c["ts"].tolist(),
            c["store"].tolist(),
            c["amount"].tolist(),
            c["nested_a"].tolist(),
            c["nested_b"].tolist(),
            strict=True,
        )
    ]

    def write(p: Path) -> None:
        p.write_text("".join(lines))

    return _land(directory / f"part-{index:06d}.json", write)


def land_csv(directory: Path, index: int, rows_per_file: int) -> int:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    c = file_columns(index, rows_per_file)
    table = pa.table(
        {
            "id": pa.array(c["id"]),
            "ts": pa.array(c["ts"].tolist(), pa.string()),
            "store": pa.array(c["store"].tolist(), pa.string()),
            "amount": pa.array(c["amount"]),
            "nested_a": pa.array(c["nested_a"]),
            "nested_b": pa.array(c["nested_b"].tolist(), pa.string()),
        }
    )
    options = pacsv.WriteOptions(include_header=True, quoting_style="none")
    return _land(
        directory / f"part-{index:06d}.csv",
        lambda p: pacsv.write_csv(table, str(p), write_options=options),
    )


def land_all(root: Path, files: int, rows_per_file: int) -> dict[str, int]:
    """Both landing directories; their sizes in bytes."""
    sizes = {"json": 0, "csv": 0}
    for fmt, land in (("json", land_json), ("csv", land_csv)):
        directory = root / fmt
        directory.mkdir(parents=True, exist_ok=True)
        for i in range(files):
            sizes[fmt] += land(directory, i, rows_per_file)
    return sizes


# -- streaming queries -----------------------------------------------------------------------


def _batches(query) -> int:
    """Micro-batches of a finished query that read rows."""
    n = 0
    for p in query.recentProgress:
        rows = p["numInputRows"] if isinstance(p, dict) else getattr(p, "numInputRows", 0)
        n += 1 if rows else 0
    return n


# -- the run ---------------------------------------------------------------------------------


def run(spark, args: argparse.Namespace, run_dir: Path) -> dict:
    from pyspark.sql import functions as F

    files, per_file = args.files, args.rows_per_file
    rows = files * per_file
    per_trigger = math.ceil(files / 4)  # four micro-batches (fewer below 4 files)
    landing = run_dir / "landing"

    gen_s, sizes = timed(lambda: land_all(landing, files, per_file))
    json_dir, csv_dir = str(landing / "json"), str(landing / "csv")
    jschema, cschema = json_schema(), csv_schema()

    def path(name: str) -> str:
        return str(run_dir / name)

    # -- the queries: ours (cloudFiles -> delta) and native (file source -> parquet sink)

    def finish(query) -> int:
        query.awaitTermination()
        if query.exception() is not None:
            raise RuntimeError(f"stream {query.name or query.id} failed: {query.exception()}")
        return _batches(query)

    def ours_stream(fmt: str, src: str, name: str, schema=None, **options) -> int:
        reader = (
            spark.readStream.format("cloudFiles")
            .option("cloudFiles.format", fmt)
            .option("cloudFiles.schemaLocation", path(f"ck-{name}"))
            .option("cloudFiles.maxFilesPerTrigger", per_trigger)
        )
        for key, value in options.items():
            reader = reader.option(key, value)
        if schema is not None:
            reader = reader.schema(schema)
        query = (
            reader.load(src)
            .writeStream.format("delta")
            .option("checkpointLocation", path(f"ck-{name}"))
            .trigger(availableNow=True)
            .start(path(f"out-{name}"))
        )
        return finish(query)

    def native_stream(fmt: str, src: str, name: str, schema, **options) -> int:
        reader = spark.readStream.schema(schema).option("maxFilesPerTrigger", per_trigger)
        for key, value in options.items():
            reader = reader.option(key, value)
        query = (
            reader.format(fmt)
            .load(src)
            .writeStream.format("parquet")
            .option("checkpointLocation", path(f"ck-{name}"))
            .trigger(availableNow=True)
            .start(path(f"out-{name}"))
        )
        return finish(query)

    def summary(df) -> tuple[int, int, int]:
        """(rows, sum(id), non-null ts): a timestamp parsed on one side only shows."""
        r = df.agg(
            F.count(F.lit(1)).alias("n"), F.sum("id").alias("s"), F.count("ts").alias("t")
        ).collect()[0]
        return int(r["n"]), int(r["s"] or 0), int(r["t"])

    def check_pair(what: str, ours_name: str, native_name: str, n_rows: int) -> None:
        got_ours = summary(spark.read.format("delta").load(path(f"out-{ours_name}")))
        got_native = summary(spark.read.parquet(path(f"out-{native_name}")))
        expected = (n_rows, n_rows * (n_rows - 1) // 2, n_rows)  # ids 0 .. n_rows - 1
        ok = got_ours == got_native == expected
        detail = {"ours": got_ours, "native": got_native, "expected": expected}
        check(what, ok, {**detail, "fields": "(rows, sum(id), count(ts))"})

    # Warm-up on a separate small directory: JVM, Python workers and both sinks, for both
    # sides alike, before anything is timed.
    warm_dir = run_dir / "warmup"
    warm_dir.mkdir()
    for i in range(2):
        land_json(warm_dir, i, 10)
    warm_s, _ = timed(
        lambda: (
            ours_stream("json", str(warm_dir), "warmup-ours", jschema),
            native_stream("json", str(warm_dir), "warmup-native", jschema),
            check_pair("warm-up", "warmup-ours", "warmup-native", 20),
        )
    )

    results: dict[str, dict] = {}

    def record(key: str, ours: float, native: float, all_times: dict, **extra) -> None:
        name, target, baseline = MEASUREMENTS[key]
        ratio = ours / native if native > 0 else float("inf")
        results[key] = {
            "name": name.replace("F", str(files)) if key == "discovery" else name,
            "ours_s": ours,
            "native_s": native,
            "ratio": ratio,
            "target": target,
            "meets_target": None if target is None else ratio <= target,
            "baseline": baseline,
            "runs": all_times,
            **extra,
        }

    def throughput(ours: float, native: float) -> dict:
        return {"ours_rows_per_s": rows / ours, "native_rows_per_s": rows / native}

    # 1. json ingest, schema given
    ours, native, all_times, res = best_of(
        args.repeat,
        lambda i: ours_stream("json", json_dir, f"json-ours-{i}", jschema),
        lambda i: native_stream("json", json_dir, f"json-native-{i}", jschema),
    )
    for i in range(args.repeat):
        check_pair(f"json ingest (run {i})", f"json-ours-{i}", f"json-native-{i}", rows)
    record(
        "json",
        ours,
        native,
        all_times,
        **throughput(ours, native),
        ours_batches=res["ours"],
        native_batches=res["native"],
    )

    # 2. json ingest, inferred schema: ours streams, the baseline is a batch read + write
    def native_batch_inferred(i: int) -> None:
        spark.read.json(json_dir).write.mode("overwrite").parquet(path(f"out-inferred-native-{i}"))

    ours, native, all_times, res = best_of(
        args.repeat,
        lambda i: ours_stream(
            "json", json_dir, f"inferred-ours-{i}", **{"cloudFiles.inferColumnTypes": "true"}
        ),
        native_batch_inferred,
    )
    for i in range(args.repeat):
        check_pair(
            f"json ingest, inferred schema (run {i})",
            f"inferred-ours-{i}",
            f"inferred-native-{i}",
            rows,
        )
    inferred = spark.read.format("delta").load(path("out-inferred-ours-0")).schema
    record(
        "json_inferred",
        ours,
        native,
        all_times,
        **throughput(ours, native),
        ours_schema=inferred.simpleString(),
        native_schema=spark.read.parquet(path("out-inferred-native-0")).schema.simpleString(),
    )

    # 3. csv ingest, schema given
    ours, native, all_times, res = best_of(
        args.repeat,
        lambda i: ours_stream("csv", csv_dir, f"csv-ours-{i}", cschema, header="true"),
        lambda i: native_stream("csv", csv_dir, f"csv-native-{i}", cschema, header="true"),
    )
    for i in range(args.repeat):
        check_pair(f"csv ingest (run {i})", f"csv-ours-{i}", f"csv-native-{i}", rows)
    record(
        "csv",
        ours,
        native,
        all_times,
        **throughput(ours, native),
        ours_batches=res["ours"],
        native_batches=res["native"],
    )

    # 4. rerun with nothing new, on the checkpoints of the first json ingest run
    ours, native, all_times, res = best_of(
        args.repeat,
        lambda i: ours_stream("json", json_dir, "json-ours-0", jschema),
        lambda i: native_stream("json", json_dir, "json-native-0", jschema),
    )
    check_pair("rerun, no new files", "json-ours-0", "json-native-0", rows)
    check("rerun, no new files", res["ours"] == res["native"] == 0, res)
    record("rerun", ours, native, all_times, ours_batches=res["ours"], native_batches=res["native"])

    # 5. one new file lands (untimed), then the same queries run again
    ours, native, all_times, res = best_of(
        args.repeat,
        lambda i: ours_stream("json", json_dir, "json-ours-0", jschema),
        lambda i: native_stream("json", json_dir, "json-native-0", jschema),
        prepare=lambda i: land_json(landing / "json", files + i, per_file),
    )
    check_pair(
        "discovery of 1 new file", "json-ours-0", "json-native-0", rows + args.repeat * per_file
    )
    check("discovery of 1 new file", res["ours"] == res["native"] == 1, res)
    record(
        "discovery",
        ours,
        native,
        all_times,
        seen_files=files,
        ours_batches=res["ours"],
        native_batches=res["native"],
    )

    return {
        "files": files,
        "rows_per_file": per_file,
        "rows": rows,
        "repeat": args.repeat,
        "max_files_per_trigger": per_trigger,
        "micro_batches": math.ceil(files / per_trigger),
        "landing_bytes": {**sizes, "total": sum(sizes.values())},
        "generate_s": gen_s,
        "warmup_s": warm_s,
        "results": results,
    }


# -- report ----------------------------------------------------------------------------------


def _mib(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MiB"


def format_report(report: dict) -> str:
    env = report["environment"]
    size = report["landing_bytes"]
    lines = [
        f"date:      {env['date_utc']}",
        f"machine:   {env['platform']}, {env['cpu_count']} CPUs, {env['mem_total']} RAM",
        f"versions:  pyspark {env['pyspark']}, pyarrow {env['pyarrow']}, "
        f"deltalake {env['deltalake']}, python {env['python']}",
        f"run:       {report['files']:,} files x {report['rows_per_file']:,} rows "
        f"= {report['rows']:,} rows per format, master {env['spark_master']}, "
        f"best of {report['repeat']}, maxFilesPerTrigger {report['max_files_per_trigger']} "
        f"({report['micro_batches']} micro-batches)",
        f"landing:   {size['total']:,} bytes in total (json {_mib(size['json'])}, "
        f"csv {_mib(size['csv'])}), generated in {report['generate_s']:.1f} s",
        "",
    ]
    header = ("measurement", "ours (s)", "native (s)", "ratio", "target", "baseline")
    table = [header]
    for key in MEASUREMENTS:
        r = report["results"][key]
        if r["target"] is None:
            target = "-"
        else:
            target = f"{r['target']:.2f}" + ("" if r["meets_target"] else "  (missed)")
        table.append(
            (
                r["name"],
                f"{r['ours_s']:.3f}",
                f"{r['native_s']:.3f}",
                f"{r['ratio']:.2f}",
                target,
                r["baseline"],
            )
        )
    lines.extend(markdown_table(table))
    lines.append("")
    for key in ("json", "json_inferred", "csv"):
        r = report["results"][key]
        lines.append(
            f"{r['name']} throughput: ours {r['ours_rows_per_s']:,.0f} rows/s, "
            f"native {r['native_rows_per_s']:,.0f} rows/s"
        )
    lines.append("ratio = ours / native time; a measurement meets its target when ratio <= target.")
    return "\n".join(lines)


def main(argv: list[str] | None = None, spark=None) -> dict:
    """Run, print and return the report (``spark``: see ``_common.run_and_report``)."""
    return run_and_report(parse_args(argv), "bench-autoloader", run, format_report, spark=spark)


if __name__ == "__main__":
    main()
