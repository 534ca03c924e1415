"""Delta and Auto Loader on a local S3 server (SeaweedFS), against Spark's own Parquet on
``s3a://`` over the same data in the same run. The session starts as a pip-only user's
asking for Hadoop's S3 connector does, ``headwater.session(s3_connector=True)`` (its jars
from the cache ``scripts/fetch-jars.sh s3a`` fills, else from Maven Central).

Measurements:
* **write**: N rows as a Delta table on ``s3a://`` and on ``s3://`` (pyarrow on the
  executors, each file written once in place) vs ``df.write.parquet("s3a://...")``.
* **scan**: an aggregate over every row of those tables vs the same over the Parquet folder;
  both schemes are scanned by Spark (``s3://`` served by the connector, ``fs.s3.impl``),
  and the LIST and HEAD requests of one such scan are counted.
* **pip-only scan**: the ``s3://`` table read as a pip-only install reads it (no connector
  for ``s3:``: the ``delta`` Python source, pyarrow on the executors), the same aggregate
  and a selective query (a filter, two columns), each vs the same query over the Parquet
  folder on ``s3a://``.
* **discovery**: one Auto Loader discovery with ``--objects`` files already tracked and
  ``--new`` new ones: incremental listing (keys after the last one, S3 ``StartAfter``) vs a
  full listing; LIST requests are counted as S3 pages them (1,000 keys a request).
* **file state**: Auto Loader's file state with ``--objects`` files tracked, kept on S3 (a
  log of changes, SQLite a local cache) vs on local disk (SQLite alone): the median cost
  of one micro-batch's changes (``--new`` files recorded, then committed) over 100
  micro-batches, and the rebuild of a lost cache from the log's snapshot.

    python bench/bench_s3.py --rows 5000000 --objects 100000 --new 100
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _common import (
    BENCH_DIR,
    bench_session,
    best_of,
    check,
    environment,
    header_lines,
    make_run_dir,
    parse_bench_args,
    ratio_table,
    remove_run_dir,
    timed,
    write_report,
)

sys.path.insert(0, str(BENCH_DIR.parent))  # the S3 server and connector helpers of the tests

from tests.s3.seaweedfs import seaweedfs  # noqa: E402

TARGETS = {"write": 1.5, "scan": 1.2, "pip_scan": 1.5, "discovery": 0.2}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=5_000_000)
    p.add_argument("--objects", type=int, default=100_000, help="files tracked before")
    p.add_argument("--new", type=int, default=100, help="files that land after")
    args = parse_bench_args(p, argv, at_least_one=("--rows", "--objects", "--new"))
    run_dir = make_run_dir(args.workdir, "bench-s3-")
    # A session of its own, always: Hadoop's S3 connector must be on the classpath when the
    # JVM starts, so the smoke test runs this one as a subprocess.
    try:
        with seaweedfs() as server:
            conf = server.spark_conf()
            with bench_session(args, "bench-s3", run_dir, conf=conf, s3_connector=True) as spark:
                report = run(spark, args, run_dir, f"{server.bucket}/bench")
                report["environment"] = environment(spark)
    finally:
        remove_run_dir(run_dir, args.keep)
    results = report["results"].values()
    lines = [*header_lines(report["environment"]), f"rows: {args.rows:,}", ""]
    lines += ratio_table(results, first="measurement (ours vs Spark on s3a)")
    d = report["discovery"]
    lines += [
        "",
        "scan + aggregate, LIST and HEAD requests: "
        + ", ".join(f"{side} {n}" for side, n in report["scan_requests"].items()),
        f"discovery with {d['tracked']:,} files tracked, {d['new']} new: incremental "
        f"{d['incremental_s']:.3f} s ({d['incremental_requests']} LIST requests), full "
        f"{d['full_s']:.3f} s ({d['full_requests']} LIST requests)",
        f"file state with {report['file_state']['tracked']:,} files, per micro-batch of "
        f"{d['new']} files: on S3 {report['file_state']['s3_batch_s'] * 1000:.1f} ms, local "
        f"{report['file_state']['local_batch_s'] * 1000:.1f} ms; rebuilding a lost cache "
        f"from S3 {report['file_state']['rebuild_s']:.2f} s",
    ]
    write_report(report, "\n".join(lines), args.json_out)


def run(spark, args: argparse.Namespace, run_dir: Path, prefix: str) -> dict:
    from headwater.delta.files import io_choice

    data = spark.range(args.rows).selectExpr(
        "id", "id % 97 AS k", "CAST(id * 7 % 1000 AS DOUBLE) AS v", "uuid() AS s"
    )
    data = data.cache()
    data.count()
    results: dict[str, dict] = {}
    counter = iter(range(1_000_000))

    def write_delta(scheme: str):
        def go(_i: int) -> str:
            path = f"{scheme}://{prefix}/delta-{scheme}-{next(counter)}"
            data.write.format("delta").save(path)
            return path

        return go

    def write_parquet(_i: int) -> str:
        path = f"s3a://{prefix}/parquet-{next(counter)}"
        data.write.parquet(path)
        return path

    tables: dict[str, str] = {}
    for scheme in ("s3a", "s3"):
        ours, native, times, last = best_of(args.repeat, write_delta(scheme), write_parquet)
        tables[scheme], tables["parquet"] = str(last["ours"]), str(last["native"])
        results[f"write_{scheme}"] = _result(f"write Delta on {scheme}://", ours, native, "write")

    def total(df) -> tuple:
        return tuple(df.selectExpr("count(*)", "sum(k)", "sum(v)").first())

    for scheme in ("s3a", "s3"):
        ours, native, _, last = best_of(
            args.repeat,
            lambda _i, s=scheme: total(spark.read.format("delta").load(tables[s])),
            lambda _i: total(spark.read.parquet(tables["parquet"])),
        )
        check(f"scan {scheme}", last["ours"] == last["native"], last)
        results[f"scan_{scheme}"] = _result(f"scan Delta on {scheme}://", ours, native, "scan")
    results.update(_pip_only_scans(spark, args, tables, total))
    requests = {
        side: _s3a_requests(spark, path, lambda p=path, f=load: total(f(p)))
        for side, path, load in (
            ("Delta on s3a://", tables["s3a"], spark.read.format("delta").load),
            ("Delta on s3://", tables["s3"], spark.read.format("delta").load),
            ("Parquet on s3a://", tables["parquet"], spark.read.parquet),
        )
        # No Hadoop filesystem for s3:// (fs.s3.impl names another): pyarrow reads it.
        if io_choice.spark_has_filesystem(spark, path)
    }
    discovery = _discovery(f"s3://{prefix}/landing", args, run_dir)
    results["discovery"] = _result(
        "Auto Loader discovery (incremental vs full)",
        discovery["incremental_s"],
        discovery["full_s"],
        "discovery",
    )
    state = _file_state(f"s3://{prefix}/state", args, run_dir)
    return {
        "rows": args.rows,
        "results": results,
        "scan_requests": requests,
        "discovery": discovery,
        "file_state": state,
    }


def _pip_only_scans(spark, args: argparse.Namespace, tables: dict[str, str], total) -> dict:
    """The ``s3://`` table scanned without the connector for ``s3:`` (a pip-only install's
    path), against Spark's Parquet scan on ``s3a://``; the binding is restored after."""
    from headwater.delta.files import io_choice

    def selective(df) -> tuple:
        return tuple(df.where("k = 5").selectExpr("count(*)", "sum(id)", "sum(v)").first())

    results = {}
    io_choice.unbind_s3(spark)
    try:
        check("pip-only path", not io_choice.spark_has_filesystem(spark, tables["s3"]), "s3")
        for key, query in (("aggregate", total), ("selective", selective)):
            ours, native, _, last = best_of(
                args.repeat,
                lambda _i, q=query: q(spark.read.format("delta").load(tables["s3"])),
                lambda _i, q=query: q(spark.read.parquet(tables["parquet"])),
            )
            check(f"pip-only {key}", last["ours"] == last["native"], last)
            name = f"scan Delta on s3:// pip-only, {key}"
            results[f"pip_scan_{key}"] = _result(name, ours, native, "pip_scan")
    finally:
        io_choice.bind_s3_to_connector(spark)
    return results


def _s3a_requests(spark, path: str, fn) -> int:
    """The LIST and HEAD requests Hadoop's S3 connector sends for ``path``'s scheme and
    bucket while ``fn`` runs (the driver's and, in ``local`` mode, the executors': one JVM,
    one filesystem instance per scheme and bucket)."""
    jvm = spark._jvm
    fs = jvm.org.apache.hadoop.fs.FileSystem.get(
        jvm.java.net.URI(path), spark._jsc.hadoopConfiguration()
    )

    def count() -> int:
        counters = fs.getIOStatistics().counters()
        return sum(counters.get(k) for k in ("object_list_request", "object_metadata_request"))

    before = count()
    fn()
    return count() - before


def _result(name: str, ours: float, native: float, kind: str) -> dict:
    return {
        "name": name,
        "ours_s": ours,
        "native_s": native,
        "ratio": ours / native,
        "target": TARGETS[kind],
        "meets_target": ours / native <= TARGETS[kind],
    }


def _discovery(folder: str, args: argparse.Namespace, run_dir: Path) -> dict:
    from headwater import storage
    from headwater.autoloader.options import CloudFilesOptions
    from headwater.autoloader.source import CloudFilesStreamReader

    def land(names: list[str]) -> None:
        with ThreadPoolExecutor(32) as pool:
            list(pool.map(lambda n: storage.write_bytes(f"{folder}/{n}", b'{"a":1}\n'), names))

    # Dated, numbered names: the layout incremental listing is for.
    land([f"2026/11/{i // 10_000:02d}/{i:08d}.json" for i in range(args.objects)])

    def reader(mode: str) -> CloudFilesStreamReader:
        opts = {
            "cloudFiles.format": "json",
            "cloudFiles.schemaLocation": str(run_dir / f"state-{mode}"),
            "cloudFiles.useIncrementalListing": mode,
        }
        return CloudFilesStreamReader(folder, CloudFilesOptions.parse(opts, True), None)

    full, incremental = reader("false"), reader("true")
    for r in (full, incremental):
        check("first listing", r.discover() == args.objects, args.objects)
    base = args.objects
    land([f"2026/11/99/{base + i:08d}.json" for i in range(args.new)])
    time.sleep(0.1)
    full_s, found_full = timed(full.discover)
    incremental_s, found_inc = timed(incremental.discover)
    check("new files", found_full == found_inc == args.new, (found_full, found_inc))
    after = incremental.state.last_path()
    listed_inc = args.new  # keys after the last one seen before: the new files only
    check(
        "incremental start", after == f"{folder}/2026/11/99/{base + args.new - 1:08d}.json", after
    )
    return {
        "tracked": args.objects,
        "new": args.new,
        "full_s": full_s,
        "incremental_s": incremental_s,
        "full_requests": math.ceil((args.objects + args.new) / 1000),
        "incremental_requests": max(1, math.ceil(listed_inc / 1000)),
    }


def _file_state(location: str, args: argparse.Namespace, run_dir: Path) -> dict:
    import os
    import shutil
    import statistics

    from headwater.autoloader import state_log
    from headwater.autoloader.state import FileState

    os.environ[state_log.CACHE_ENV] = str(run_dir / "state-cache")

    def micro_batches(state: FileState) -> float:
        state.record(((f"t/{i:08d}", 9, i) for i in range(args.objects)), False)
        times = []
        for b in range(100):
            first = args.objects + b * args.new
            files = [(f"n/{i:08d}", 9, i) for i in range(first, first + args.new)]
            start = time.perf_counter()
            state.record(files, False)
            state.mark_committed(state.max_seq())
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    on_s3, local = FileState(location), FileState(str(run_dir / "state-local"))
    s3_batch, local_batch = micro_batches(on_s3), micro_batches(local)
    expected = on_s3.rows()
    on_s3.close()
    local.close()
    shutil.rmtree(run_dir / "state-cache")
    rebuild_s, rebuilt = timed(lambda: FileState(location))
    check("rebuilt state", rebuilt.rows() == expected, len(expected))
    rebuilt.close()
    return {
        "tracked": args.objects,
        "s3_batch_s": s3_batch,
        "local_batch_s": local_batch,
        "rebuild_s": rebuild_s,
    }


if __name__ == "__main__":
    main()
