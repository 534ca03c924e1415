"""headwater's MERGE, UPDATE and DELETE against delta-rs's own, in one run on the same tables.

A target table of ``--rows`` orders (``id`` long, ``cust`` int, ``qty`` int, ``price``
double, ``amount`` double, ``status`` string, ``note`` string, ``d`` date) is written once
per layout with headwater (``partitioned``: by ``d``, ``--partitions`` days; and
``unpartitioned``), then every measurement starts from two identical copies of it
(``shutil.copytree``), one for each side. Measurements, ours vs delta-rs, each run
``--repeat`` times on fresh copies (best time kept):

* **merge**: ``--source-rows`` source rows, 10% updates of existing keys (drawn from the
  newest ``--updates-from`` fraction of the table, as late changes to recent orders are)
  and 90% inserts of new keys (new days). Ours::

      DeltaTable.forPath(spark, p).alias("t").merge(src.alias("s"), "t.id = s.id")
          .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()

  with ``src = spark.read.parquet(source_dir)``; delta-rs::

      deltalake.DeltaTable(p).merge(source=arrow_table, predicate="t.id = s.id",
          source_alias="s", target_alias="t")
          .when_matched_update_all().when_not_matched_insert_all().execute()

  on the same rows, held in memory as an Arrow table (its default ``streamed_exec=True``);
  delta-rs with ``streamed_exec=False`` (which lets it prune target files by the source's
  key range) is timed as well and reported beside it;
* **update 1% (id range)** / **update 1% (scattered)**: ``update(condition, set)`` vs
  delta-rs ``update(predicate=..., updates=...)``, on a contiguous 1% ``id`` range (a file
  or two) and on 1% of customers (rows in every file);
* **delete 1% (id range)** / **delete 1% (scattered)**: ``delete(condition)`` vs delta-rs
  ``delete(predicate)``, same two shapes.

Every operation first runs once on a tiny table, both sides, untimed (JVM warm-up). The
ratio is ours/delta-rs wall time (lower is better); the merge target is 1.0. CPU seconds
(this process, where delta-rs runs, plus the Spark JVM) are reported beside it, as they
are steadier than wall time on a machine shared with other work.

After every pair both tables are read back, and their row count and checksum (sum of
``xxhash64`` over all columns) must equal each other and the answer plain Spark computes
from the original rows (for the merge: the original rows without the updated keys, plus
the source), so a fast wrong answer fails the run. Files rewritten are the files
removed/added between the two versions of each table.

``--profile`` times the phases of our DML (the Spark jobs it runs, the file write, the
commit) by wrapping them from outside, without changing what runs. Use ``--repeat 2`` for
figures of a warm JVM: the first full-size MERGE of a process also pays several seconds of
JIT compilation that the tiny warm-up does not trigger.

    .venv/bin/python bench/bench_merge.py --rows 10000000 --source-rows 1000000 --profile
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from _common import (
    best_of,
    check,
    markdown_table,
    parse_bench_args,
    run_and_report,
    timed,
)
from _merge_data import (
    COLUMNS,
    checksum,
    delta_rs_rows,
    dml_operations,
    expected_after,
    file_set,
    generate_source,
    generate_target,
    write_source,
)
from _merge_profile import CpuClock, phase_timer

# "-dv": our table has deletion vectors enabled (delta.enableDeletionVectors = true), so our
# DML marks changed rows in vectors instead of rewriting files; delta-rs, which cannot write
# such tables, runs on the plain table with the same rows.
LAYOUTS = ("partitioned", "unpartitioned", "partitioned-dv", "unpartitioned-dv")
DEFAULT_LAYOUTS = ("partitioned", "unpartitioned", "partitioned-dv")
MERGE_TARGET = 1.0

# operation key -> printed name (the layout is appended)
OPERATIONS = {
    "merge": "merge",
    "update_range": "update 1% (id range)",
    "update_scattered": "update 1% (scattered)",
    "delete_range": "delete 1% (id range)",
    "delete_scattered": "delete 1% (scattered)",
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=10_000_000, help="rows in the target table")
    p.add_argument(
        "--source-rows", type=int, default=1_000_000, help="MERGE source rows (10%% updates)"
    )
    p.add_argument("--partitions", type=int, default=16, help="days (d partitions) in the target")
    p.add_argument(
        "--updates-from",
        type=float,
        default=0.125,
        help="updated keys are drawn from this newest fraction of the target (1.0: anywhere)",
    )
    p.add_argument(
        "--layouts",
        default=",".join(DEFAULT_LAYOUTS),
        help=f"comma-separated subset of {', '.join(LAYOUTS)} (default {', '.join(DEFAULT_LAYOUTS)})",
    )
    p.add_argument(
        "--ops",
        default=",".join(OPERATIONS),
        help=f"comma-separated subset of {', '.join(OPERATIONS)} (default all)",
    )
    p.add_argument("--profile", action="store_true", help="time the phases of our DML")
    args = parse_bench_args(p, argv, at_least_one=("--rows", "--source-rows", "--partitions"))
    args.layouts = [s.strip() for s in args.layouts.split(",") if s.strip()]
    if not args.layouts or set(args.layouts) - set(LAYOUTS):
        p.error(f"--layouts takes a comma-separated subset of {', '.join(LAYOUTS)}")
    args.ops = [s.strip() for s in args.ops.split(",") if s.strip()]
    if not args.ops or set(args.ops) - set(OPERATIONS):
        p.error(f"--ops takes a comma-separated subset of {', '.join(OPERATIONS)}")
    if not 0 < args.updates_from <= 1:
        p.error("--updates-from must be in (0, 1]")
    if args.source_rows // 10 > int(args.rows * args.updates_from):
        p.error("--source-rows / 10 updated keys do not fit in --updates-from of --rows")
    if args.rows < 100:
        p.error("--rows must be at least 100")
    return args


# -- the run ---------------------------------------------------------------------------------


@dataclass
class Bench:
    """What every measurement of one run shares."""

    spark: object
    args: argparse.Namespace | None
    run_dir: Path
    source_dir: str  # the MERGE source as Parquet (ours)
    arrow_src: object  # the same rows as an Arrow table (delta-rs)
    dml_ops: dict[str, tuple[str, dict[str, str] | None]]
    cpu: CpuClock

    def ours(self, key: str, path: str) -> None:
        """Our operation ``key`` on the table at ``path``, through delta-spark's API."""
        from headwater.delta.tables import DeltaTable

        table = DeltaTable.forPath(self.spark, path)
        if key == "merge":
            src = self.spark.read.parquet(self.source_dir)
            (
                table.alias("t")
                .merge(src.alias("s"), "t.id = s.id")
                .whenMatchedUpdateAll()
                .whenNotMatchedInsertAll()
                .execute()
            )
            return
        predicate, sets = self.dml_ops[key]
        if sets is None:
            table.delete(predicate)
        else:
            table.update(predicate, set=sets)

    def native(self, key: str, path: str, streamed: bool = True) -> dict:
        """delta-rs's operation ``key`` on the table at ``path``; its metrics."""
        import deltalake

        table = deltalake.DeltaTable(path)
        if key == "merge":
            kw = {} if streamed else {"streamed_exec": False}
            return (
                table.merge(
                    source=self.arrow_src,
                    predicate="t.id = s.id",
                    source_alias="s",
                    target_alias="t",
                    **kw,
                )
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute()
            )
        predicate, sets = self.dml_ops[key]
        if sets is None:
            return table.delete(predicate)
        return table.update(predicate=predicate, updates=sets)

    def verify(self, what: str, path: str, expected: tuple[int, int]) -> None:
        got = checksum(self.spark.read.format("delta").load(path))
        check(what, got == expected, (got, expected))
        check(f"{what} via delta-rs", delta_rs_rows(path) == expected[0], "row count")


class Copies:
    """Fresh copies of the base tables, one per side and run (``bases``: side -> base;
    sides not named copy ``native``'s)."""

    def __init__(self, bases: dict[str, str], run_dir: Path, tag: str) -> None:
        self.bases, self.run_dir, self.tag = bases, run_dir, tag
        self.paths: dict[str, str] = {}

    def fresh(self, i: int, sides: tuple[str, ...] = ("ours", "native")) -> None:
        for side in sides:
            if side in self.paths:
                shutil.rmtree(self.paths[side], ignore_errors=True)
            self.paths[side] = str(self.run_dir / f"{self.tag}-{side}-{i}")
            shutil.copytree(self.bases.get(side, self.bases["native"]), self.paths[side])

    def remove(self) -> None:
        for path in self.paths.values():
            shutil.rmtree(path, ignore_errors=True)


def measure(
    b: Bench,
    key: str,
    layout: str,
    bases: dict[str, str],
    ref,
    base_files: dict[str, set[str]],
    n_ins: int,
) -> dict:
    """One operation, ours vs delta-rs on fresh copies of their bases, checked; its result."""
    args, rows = b.args, b.args.rows
    predicate, sets = b.dml_ops.get(key, (None, None))
    name = f"{OPERATIONS[key]}, {layout}"
    copies = Copies(bases, b.run_dir, f"{key}-{layout}")
    profiles: list[list[tuple[str, float]]] = []
    cpu: dict[str, list[float]] = {"ours": [], "native": []}

    def with_cpu(side: str, fn: Callable[[], object]) -> object:
        start = b.cpu.now()
        value = fn()
        if start is not None:
            cpu[side].append(b.cpu.now() - start)
        return value

    def run_ours(i: int) -> None:
        if not args.profile:
            with_cpu("ours", lambda: b.ours(key, copies.paths["ours"]))
            return
        profile: list[tuple[str, float]] = []
        with phase_timer(profile):
            seconds, _ = timed(lambda: with_cpu("ours", lambda: b.ours(key, copies.paths["ours"])))
        profiles.append([*profile, ("total", seconds)])

    try:
        ours_s, native_s, all_times, res = best_of(
            args.repeat,
            run_ours,
            lambda i: with_cpu("native", lambda: b.native(key, copies.paths["native"])),
            prepare=copies.fresh,
        )
        expected = checksum(expected_after(b.spark, key, ref, b.source_dir, predicate, sets))
        if key == "merge":
            check("merge reference", expected[0] == rows + n_ins, (expected, rows, n_ins))
        elif sets is None:
            check(f"{key} reference", 0 < rows - expected[0] <= rows // 50, expected)
        else:
            check(f"{key} reference", expected[0] == rows, expected)
        files: dict[str, dict[str, int]] = {}
        for side in ("ours", "native"):
            b.verify(f"{name} ({side})", copies.paths[side], expected)
            after = file_set(copies.paths[side])
            before = base_files[side]
            files[side] = {"removed": len(before - after), "added": len(after - before)}

        extra: dict[str, object] = {}
        if key == "merge":
            # delta-rs without streamed_exec: it may prune target files by source stats.
            nostream: list[float] = []
            metrics: dict = {}
            for i in range(args.repeat):
                copies.fresh(i, sides=("native_nostream",))
                seconds, metrics = timed(
                    lambda: b.native("merge", copies.paths["native_nostream"], streamed=False)
                )
                nostream.append(seconds)
            b.verify(
                f"{name} (delta-rs streamed_exec=False)", copies.paths["native_nostream"], expected
            )
            extra = {
                "native_nostream_s": min(nostream),
                "ratio_nostream": ours_s / min(nostream),
                "native_nostream_runs": nostream,
                "native_nostream_metrics": _plain(metrics),
            }
    finally:
        copies.remove()

    ratio = ours_s / native_s if native_s > 0 else float("inf")
    target = MERGE_TARGET if key == "merge" else None
    return {
        "name": name,
        "operation": key,
        "layout": layout,
        "predicate": predicate or "t.id = s.id",
        "ours_s": ours_s,
        "native_s": native_s,
        "ratio": ratio,
        "target": target,
        "meets_target": None if target is None else ratio <= target,
        "runs": all_times,
        "ours_cpu_s": min(cpu["ours"]) if cpu["ours"] else None,
        "native_cpu_s": min(cpu["native"]) if cpu["native"] else None,
        "cpu_runs": cpu,
        "rows_after": expected[0],
        "files": files,
        "native_metrics": _plain(res["native"]),
        "profile": profiles[-1] if profiles else None,
        **extra,
    }


def warm_up(spark, run_dir: Path, cpu: CpuClock) -> None:
    """Every operation once, both sides, on a tiny table (untimed), so class loading and the
    first plans of each kind are not measured (JIT of the hot loops at full size still is,
    in the first run: see --repeat)."""
    rows, partitions = 2_000, 4
    arrow_src, _, _ = generate_source(rows, 200, partitions, 1.0)
    source = str(run_dir / "warmup-source")
    write_source(arrow_src, Path(source))
    b = Bench(spark, None, run_dir, source, arrow_src, dml_operations(rows), cpu)
    base = str(run_dir / "warmup-base")
    generate_target(spark, rows, partitions).write.format("delta").partitionBy("d").save(base)
    for key in OPERATIONS:
        for side, fn in (("ours", b.ours), ("native", b.native)):
            path = str(run_dir / f"warmup-{key}-{side}")
            shutil.copytree(base, path)
            fn(key, path)
            shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(base, ignore_errors=True)


def create_with_vectors(spark, path: str, partitioned: bool) -> None:
    """An empty target table with deletion vectors enabled, as users create one."""
    from headwater.delta.tables import DeltaTable

    schema = generate_target(spark, 100, 1).schema
    builder = DeltaTable.create(spark).location(path).addColumns(schema)
    if partitioned:
        builder = builder.partitionedBy("d")
    builder.property("delta.enableDeletionVectors", "true").execute()


def run(spark, args: argparse.Namespace, run_dir: Path) -> dict:
    rows, partitions = args.rows, args.partitions
    cpu = CpuClock(spark)
    warm_up(spark, run_dir, cpu)
    source_dir = run_dir / "source"
    arrow_src, n_upd, n_ins = generate_source(rows, args.source_rows, partitions, args.updates_from)
    write_source(arrow_src, source_dir)
    b = Bench(spark, args, run_dir, str(source_dir), arrow_src, dml_operations(rows), cpu)

    results: dict[str, dict] = {}
    layouts: dict[str, dict] = {}
    for layout in args.layouts:
        parted = layout.startswith("partitioned")
        base = str(run_dir / f"base-{layout}")
        writer = generate_target(spark, rows, partitions).write.format("delta")
        if parted:
            writer = writer.partitionBy("d")
        gen_s, _ = timed(lambda writer=writer, base=base: writer.save(base))
        bases = {"native": base, "ours": base}
        if layout.endswith("-dv"):
            bases["ours"] = str(run_dir / f"base-{layout}-ours")
            create_with_vectors(spark, bases["ours"], parted)
            writer.mode("append").save(bases["ours"])
        base_files = {side: file_set(path) for side, path in bases.items()}
        # The reference: the base table's files read as plain Parquet (no Delta log involved).
        ref = spark.read.parquet(base).select(*COLUMNS)
        base_sum = checksum(ref)
        check(f"base ({layout})", base_sum[0] == rows, (base_sum, rows))
        check(f"base via delta-rs ({layout})", delta_rs_rows(base) == rows, "row count")
        layouts[layout] = {"files": len(base_files["native"]), "generate_s": gen_s}
        for key in (k for k in OPERATIONS if k in args.ops):
            results[f"{key}_{layout}"] = measure(b, key, layout, bases, ref, base_files, n_ins)
        for path in set(bases.values()):
            shutil.rmtree(path, ignore_errors=True)

    return {
        "rows": rows,
        "source_rows": args.source_rows,
        "source_updates": n_upd,
        "source_inserts": n_ins,
        "partitions": partitions,
        "updates_from": args.updates_from,
        "repeat": args.repeat,
        "layouts": layouts,
        "results": results,
    }


def _plain(metrics: object) -> dict:
    """delta-rs's metrics dict with JSON-friendly values."""
    if not isinstance(metrics, dict):
        return {}
    return {
        k: v if isinstance(v, (int, float, str, bool)) or v is None else str(v)
        for k, v in metrics.items()
    }


# -- report ----------------------------------------------------------------------------------


def format_report(report: dict) -> str:
    env = report["environment"]
    layouts = ", ".join(f"{k} {v['files']} files" for k, v in report["layouts"].items())
    lines = [
        f"date:      {env['date_utc']}",
        f"machine:   {env['platform']}, {env['cpu_count']} CPUs, {env['mem_total']} RAM",
        f"versions:  pyspark {env['pyspark']}, deltalake {env['deltalake']}, "
        f"python {env['python']}",
        f"run:       target {report['rows']:,} rows ({report['partitions']} days; {layouts}), "
        f"source {report['source_rows']:,} rows ({report['source_updates']:,} updates from "
        f"the newest {report['updates_from']:.1%}, {report['source_inserts']:,} inserts), "
        f"master {env['spark_master']}, best of {report['repeat']}",
        "",
    ]
    header = (
        "measurement",
        "ours (s)",
        "delta-rs (s)",
        "ratio",
        "target",
        "CPU s ours / delta-rs",
        "CPU ratio",
        "files -/+ ours",
        "files -/+ delta-rs",
    )
    table = [header]
    for r in report["results"].values():
        target = "-" if r["target"] is None else f"{r['target']:.2f}"
        if r["meets_target"] is False:
            target += "  (missed)"
        f = r["files"]
        cpu_ours, cpu_native = r["ours_cpu_s"], r["native_cpu_s"]
        has_cpu = cpu_ours is not None and cpu_native
        table.append(
            (
                r["name"],
                f"{r['ours_s']:.3f}",
                f"{r['native_s']:.3f}",
                f"{r['ratio']:.2f}",
                target,
                f"{cpu_ours:.1f} / {cpu_native:.1f}" if has_cpu else "-",
                f"{cpu_ours / cpu_native:.2f}" if has_cpu else "-",
                f"{f['ours']['removed']}/{f['ours']['added']}",
                f"{f['native']['removed']}/{f['native']['added']}",
            )
        )
    lines.extend(markdown_table(table, right_aligned=(1, 2, 3, 5, 6, 7, 8)))
    lines.append("")
    for r in report["results"].values():
        if "native_nostream_s" in r:
            lines.append(
                f"{r['name']}: delta-rs with streamed_exec=False {r['native_nostream_s']:.3f} s "
                f"(ratio {r['ratio_nostream']:.2f}); delta-rs scan/rewrite ms: default "
                f"{_scan_rewrite(r['native_metrics'])}, streamed_exec=False "
                f"{_scan_rewrite(r['native_nostream_metrics'])}"
            )
    lines += [
        "ratio = ours / delta-rs wall time; CPU = CPU seconds of this process and the Spark JVM",
        "during the operation; files -/+ = files removed / added by the operation.",
    ]
    for r in report["results"].values():
        if r["profile"]:
            lines += ["", f"profile of ours, {r['name']}:"]
            lines += [f"  {seconds:8.3f} s  {what}" for what, seconds in r["profile"]]
    return "\n".join(lines)


def _scan_rewrite(metrics: dict) -> str:
    return f"{metrics.get('scan_time_ms', '?')}/{metrics.get('rewrite_time_ms', '?')}"


def main(argv: list[str] | None = None, spark=None) -> dict:
    """Run, print and return the report (``spark``: see ``_common.run_and_report``)."""
    return run_and_report(parse_args(argv), "bench-merge", run, format_report, spark=spark)


if __name__ == "__main__":
    main()
