"""AUTO CDC flows (SCD type 1 and 2) against a hand-written ``foreachBatch`` MERGE.

A change feed (a Delta table: ``id, v1, v2, op, seq``) first holds ``--target-rows``
inserts, applied untimed by both sides (the initial load). Then ``--events`` change events
are appended (10% deletes, 20% out of order: their sequence value is older than events
before them, some older than what the target already holds) and measured: each side
streams them (``availableNow``) into its target.

* **ours**: a pipeline with ``create_auto_cdc_flow(..., stored_as_scd_type=N)`` (SCD2
  tracks ``v1, v2``; ``seq`` is updated in place); the flow's seconds in the update.
* **native**: a Structured Streaming query whose ``foreachBatch`` deduplicates each batch
  to the newest event per key and runs one MERGE with ``DeltaTable`` (headwater's, no
  jars), as users write it: SCD1 updates when the event is newer and deletes; SCD2 closes
  the open version and inserts the new one (the classic staged-union MERGE). It keeps no
  tombstones and places no late event into history, so it does less than ours.

The SCD1 target is checked against an independent aggregate over all events (newest per
key, kept unless it is a delete), and the SCD2 target's open versions against the same
rows, so a fast wrong answer fails the run.

    .venv/bin/python bench/bench_auto_cdc.py --target-rows 10000000 --events 1000000
"""

from __future__ import annotations

import argparse
import textwrap
import time
from pathlib import Path

import yaml
from _common import check, header_lines, parse_bench_args, ratio_table, run_and_report

TARGET = 1.10


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--target-rows", type=int, default=10_000_000, help="keys loaded first")
    p.add_argument("--events", type=int, default=1_000_000, help="change events measured")
    p.add_argument(
        "--scd", type=int, choices=(1, 2), action="append",
        help="the SCD type measured (repeat for both; default both)",
    )  # fmt: skip
    return parse_bench_args(p, argv, at_least_one=("--target-rows", "--events"))


def pipeline_source(changes: str, scd: int) -> str:
    return textwrap.dedent(
        f"""
        from pyspark import pipelines as dp

        dp.create_streaming_table("target")
        dp.create_auto_cdc_flow(
            target="target", source="{changes}", keys=["id"], sequence_by="seq",
            apply_as_deletes="op = 'D'", except_column_list=["op"], stored_as_scd_type={scd},
            {"track_history_except_column_list=['seq']," if scd == 2 else ""}
        )
        """
    )


def run(spark, args: argparse.Namespace, run_dir: Path) -> dict:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from headwater import api, pipelines
    from headwater.delta.tables import DeltaTable

    n, e = args.target_rows, args.events
    spark.sql("CREATE DATABASE IF NOT EXISTS bench_src")
    changes = "bench_src.changes"
    initial = spark.range(n).select(
        "id",
        (F.col("id") % 1000).alias("v1"),
        F.concat(F.lit("x"), F.col("id") % 97).alias("v2"),
        F.lit("U").alias("op"),
        F.lit(1).cast("long").alias("seq"),
    )
    initial.write.format("delta").mode("overwrite").saveAsTable(changes)
    # Keys spread over 105% of the target (some new); sequence 100 * (i + 2), late events
    # 20% of the time, moved back by up to a tenth of the feed (ending in 11 or 13, so
    # never equal to an on-time value or to the initial load's 1).
    h = F.xxhash64(F.col("id"), F.lit(7))
    late = (F.abs(h) % 5) == 0
    back = (F.abs(F.xxhash64(F.col("id"), F.lit(3))) % max(e // 10, 1)) * 100
    events = spark.range(e).select(
        (F.abs(F.xxhash64(F.col("id"), F.lit(1))) % (n + n // 20)).alias("id"),
        (F.abs(h) % 1000).alias("v1"),
        F.concat(F.lit("y"), F.abs(h) % 89).alias("v2"),
        F.when(F.abs(F.xxhash64(F.col("id"), F.lit(2))) % 10 == 0, "D").otherwise("U").alias("op"),
        (
            F.when(late, (F.col("id") + 2) * 100 - back + 11 + F.col("id") % 2 * 2).otherwise(
                (F.col("id") + 2) * 100
            )
        ).alias("seq"),
    )

    def new_pipeline(tag: str, scd: int) -> Path:
        root = run_dir / tag
        (root / "transformations").mkdir(parents=True)
        (root / "transformations" / "cdc.py").write_text(pipeline_source(changes, scd))
        spec = {"name": tag, "storage": str(root / "storage"), "database": f"bench_{tag}"}
        (root / "spark-pipeline.yml").write_text(yaml.safe_dump(spec))
        return root

    def ours(root: Path) -> float:
        result = pipelines.run(root, spark)
        check(f"{root.name} update", result.ok, [str(r.error) for r in result.failed()])
        return result.flows["target"].seconds

    def newest(batch):
        w = Window.partitionBy("id").orderBy(F.col("seq").desc())
        return batch.withColumn("rn", F.row_number().over(w)).filter("rn = 1").drop("rn")

    def scd1_batch(path: str):
        def batch(df, batch_id):
            DeltaTable.forPath(spark, path).alias("t").merge(
                newest(df).alias("s"), "t.id = s.id"
            ).whenMatchedDelete("s.op = 'D' AND s.seq > t.seq").whenMatchedUpdate(
                "s.op = 'U' AND s.seq > t.seq", {"v1": "s.v1", "v2": "s.v2", "seq": "s.seq"}
            ).whenNotMatchedInsert(
                "s.op = 'U'", {"id": "s.id", "v1": "s.v1", "v2": "s.v2", "seq": "s.seq"}
            ).execute()

        return batch

    def scd2_batch(path: str):
        def batch(df, batch_id):
            table = DeltaTable.forPath(spark, path)
            latest = newest(df)
            current = table.toDF().where("__END_AT IS NULL")
            changed = (
                latest.alias("s")
                .join(current.alias("t"), "id")
                .where("s.op = 'U' AND s.seq > t.__START_AT AND (s.v1 <> t.v1 OR s.v2 <> t.v2)")
                .select("s.*")
            )
            staged = latest.withColumn("mk", F.col("id")).unionByName(
                changed.withColumn("mk", F.lit(None).cast("long"))
            )
            table.alias("t").merge(
                staged.alias("s"), "t.id = s.mk AND t.__END_AT IS NULL"
            ).whenMatchedUpdate(
                "s.seq > t.__START_AT AND (s.op = 'D' OR s.v1 <> t.v1 OR s.v2 <> t.v2)",
                {"__END_AT": "s.seq"},
            ).whenNotMatchedInsert(
                "s.op = 'U'",
                {"id": "s.id", "v1": "s.v1", "v2": "s.v2", "seq": "s.seq",
                 "__START_AT": "s.seq", "__END_AT": "CAST(NULL AS BIGINT)"},
            ).execute()  # fmt: skip

        return batch

    def native(tag: str, scd: int) -> float:
        path = str(run_dir / tag / "table")
        if not api.for_path(spark, path).exists():
            schema = "id bigint, v1 bigint, v2 string, seq bigint"
            if scd == 2:
                schema += ", __START_AT bigint, __END_AT bigint"
            empty = spark.createDataFrame([], schema)
            empty.write.format("delta").save(path)
        fn = scd1_batch(path) if scd == 1 else scd2_batch(path)
        started = time.monotonic()
        query = api.start_foreach_batch(
            spark.readStream.table(changes),
            fn,
            str(run_dir / tag / "checkpoint"),
            trigger={"availableNow": True},
        )
        query.awaitTermination()
        return time.monotonic() - started

    types = sorted(set(args.scd or (1, 2)))
    roots = {scd: new_pipeline(f"scd{scd}", scd) for scd in types}
    load: dict[str, float] = {}
    for scd in types:  # the initial load, untimed in the ratio
        load[f"ours_scd{scd}"] = ours(roots[scd])
        load[f"native_scd{scd}"] = native(f"hand{scd}", scd)
    events.write.format("delta").mode("append").saveAsTable(changes)

    results: dict[str, dict] = {}
    for scd in types:
        order = [
            ("ours", lambda scd=scd: ours(roots[scd])),
            ("native", lambda scd=scd: native(f"hand{scd}", scd)),
        ]
        if scd == 2:
            order.reverse()
        times = {side: fn() for side, fn in order}
        ratio = times["ours"] / times["native"]
        results[f"scd{scd}"] = {
            "name": f"{e:,} events into {n:,} keys, SCD type {scd}",
            "ours_s": times["ours"],
            "native_s": times["native"],
            "ratio": ratio,
            "target": TARGET,
            "meets_target": ratio <= TARGET,
        }

    feed = spark.table(changes)
    w = Window.partitionBy("id").orderBy(F.col("seq").desc())
    last = feed.withColumn("rn", F.row_number().over(w)).filter("rn = 1 AND op = 'U'")
    expected = last.select("id", "v1", "v2")
    checked = {}
    if 1 in types:
        checked["SCD1"] = spark.table("bench_scd1.target").select("id", "v1", "v2")
    if 2 in types:
        open_versions = spark.table("bench_scd2.target").where("__END_AT IS NULL")
        checked["SCD2 open versions"] = open_versions.select("id", "v1", "v2")
    for what, got in checked.items():
        wrong = got.exceptAll(expected).count() + expected.exceptAll(got).count()
        check(f"{what} rows", wrong == 0, f"{wrong} rows differ from the newest events")
    return {
        "target_rows": n,
        "events": e,
        "initial_load_s": load,
        "scd2_versions": spark.table("bench_scd2.target").count() if 2 in types else None,
        "expected_rows": expected.count(),
        "results": results,
    }


def format_report(report: dict) -> str:
    env = report["environment"]
    load = ", ".join(f"{k} {v:.1f} s" for k, v in report["initial_load_s"].items())
    lines = [
        *header_lines(env, ("pyspark", "pyarrow", "deltalake")),
        f"run:       {report['target_rows']:,} keys loaded, then {report['events']:,} events "
        f"(10% deletes, 20% late), master {env['spark_master']}",
        f"untimed:   initial load {load}",
        f"checked:   {report['expected_rows']:,} live keys"
        + (f"; SCD2 holds {report['scd2_versions']:,} versions" if report["scd2_versions"] else ""),
        "",
    ]
    lines += ratio_table(report["results"].values())
    lines.append("ours = the AUTO CDC flow's seconds in the update; native = foreachBatch MERGE")
    return "\n".join(lines)


def main(argv: list[str] | None = None, spark=None) -> dict:
    """Run, print and return the report (``spark``: see ``_common.run_and_report``)."""
    return run_and_report(parse_args(argv), "bench-auto-cdc", run, format_report, spark=spark)


if __name__ == "__main__":
    main()
