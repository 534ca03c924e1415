"""A silver flow with five expectations against the same flow with the hand-written filter.

The bronze Delta table holds ``--rows`` rows (``id``, ``amount``, ``qty``, ``store``,
``email``; some rows break each rule), written once, untimed. Measured, each ``--repeat``
times (best kept), from a fresh checkpoint and an empty target each time:

Both sides are timed from the start of the stream to its end (row checks excluded).

* **5 expectations vs hand-written filter**: a pipeline whose streaming table ``silver``
  reads bronze with ``@dp.expect`` x2 (warn), ``@dp.expect_or_drop`` x2 and
  ``@dp.expect_or_fail`` x1 (never broken), counting every rule's passed and failed records
  as it writes; against a Structured Streaming query (``availableNow``) with the two drop
  rules as a ``where`` into a headwater Delta table, counting nothing. Ours is the silver
  flow's time in the update (loading and graph analysis are in the pipelines benchmark).
* **5 expectations vs none**: the same pipeline flow with and without its expectations,
  the cost of checking and counting alone.

The rows written and every expectation's counts are checked against an independent
aggregate over bronze, so a fast wrong answer fails the run.

    .venv/bin/python bench/bench_expectations.py --rows 5000000 --repeat 2
"""

from __future__ import annotations

import argparse
import textwrap
import time
from pathlib import Path

import yaml
from _common import (
    best_of,
    check,
    header_lines,
    parse_bench_args,
    ratio_table,
    run_and_report,
    timed,
)

TARGET = 1.10
RULES = {  # name: (action, constraint)
    "has_store": ("expect", "store IS NOT NULL"),
    "valid_email": ("expect", "email LIKE '%@%'"),
    "positive_amount": ("expect_or_drop", "amount > 0"),
    "sane_qty": ("expect_or_drop", "qty BETWEEN 0 AND 1000"),
    "has_id": ("expect_or_fail", "id IS NOT NULL"),
}
HAND_FILTER = "coalesce(amount > 0, true) AND coalesce(qty BETWEEN 0 AND 1000, true)"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=5_000_000, help="rows in bronze")
    p.add_argument("--no-warmup", action="store_true", help="skip the warm-up runs")
    return parse_bench_args(p, argv, at_least_one=("--rows",))


def pipeline_source(bronze: str, with_rules: bool) -> str:
    decorators = "".join(
        f'@dp.{action}("{name}", "{constraint}")\n'
        for name, (action, constraint) in RULES.items()
        if with_rules
    )
    return textwrap.dedent(
        f"""
        from pyspark import pipelines as dp


        @dp.table
        {{decorators}}def silver():
            return spark.readStream.table("{bronze}")
        """
    ).replace("{decorators}", decorators)


def run(spark, args: argparse.Namespace, run_dir: Path) -> dict:
    from pyspark.sql import functions as F

    from headwater import api, pipelines

    rows = args.rows
    spark.sql("CREATE DATABASE IF NOT EXISTS bench_src")
    bronze = "bench_src.bronze"
    source = (
        spark.range(rows)
        .withColumn("amount", F.when(F.col("id") % 50 == 0, -1.0).otherwise(F.col("id") % 997 + 0.5))
        .withColumn("qty", F.when(F.col("id") % 97 == 0, 5000).otherwise(F.col("id") % 40))
        .withColumn("store", F.when(F.col("id") % 40 == 0, None).otherwise(F.concat(F.lit("s"), F.col("id") % 13)))
        .withColumn(
            "email",
            F.when(F.col("id") % 33 == 0, F.lit("nobody")).otherwise(F.concat(F.col("id"), F.lit("@x.io"))),
        )
    )  # fmt: skip
    write_s, _ = timed(lambda: source.write.format("delta").mode("overwrite").saveAsTable(bronze))

    table = spark.table(bronze)
    expected_failed = {
        name: table.where(f"NOT coalesce({constraint}, true)").count()
        for name, (_, constraint) in RULES.items()
    }
    expected_rows = table.where(HAND_FILTER).count()

    def new_pipeline(tag: str, with_rules: bool) -> Path:
        root = run_dir / tag
        (root / "transformations").mkdir(parents=True)
        (root / "transformations" / "silver.py").write_text(pipeline_source(bronze, with_rules))
        spec = {"name": tag, "storage": str(root / "storage"), "database": f"bench_{tag}"}
        (root / "spark-pipeline.yml").write_text(yaml.safe_dump(spec))
        return root

    flow_seconds: dict[str, float] = {}
    quality: dict[str, dict] = {}

    def ours(tag: str, with_rules: bool) -> None:
        result = pipelines.run(new_pipeline(tag, with_rules), spark)
        check(f"{tag} update", result.ok, [str(r.error) for r in result.failed()])
        flow = result.flows["silver"]
        flow_seconds[tag] = flow.seconds
        if with_rules:
            quality[tag] = flow.data_quality or {}
        written = spark.table(f"bench_{tag}.silver").count()
        check(f"{tag} rows", written == (expected_rows if with_rules else rows), written)

    def hand(tag: str) -> None:
        out = api.table(spark, f"bench_src.{tag}")
        started = time.monotonic()
        df = spark.readStream.table(bronze).where(HAND_FILTER)
        query = out.start_stream(
            df, checkpoint=str(run_dir / tag / "checkpoint"), trigger={"availableNow": True}
        )
        query.awaitTermination()
        flow_seconds[tag] = time.monotonic() - started
        written = spark.table(f"bench_src.{tag}").count()
        check(f"{tag} rows", written == expected_rows, written)

    # Warm-up: both paths once (JVM, Python workers, the pipeline's first load).
    warm_s = 0.0
    if not args.no_warmup:
        warm_s, _ = timed(lambda: (ours("warm_rules", True), hand("warm_hand")))

    results: dict[str, dict] = {}

    def measured(name: str, ours_tag: str, base_tag: str) -> dict:
        """The best flow times of both sides (runs ``<tag>_<i>``) and their ratio."""
        runs = {
            side: [flow_seconds[f"{tag}_{i}"] for i in range(args.repeat)]
            for side, tag in (("ours", ours_tag), ("native", base_tag))
        }
        ours_s, base_s = min(runs["ours"]), min(runs["native"])
        ratio = ours_s / base_s
        return {
            "name": name,
            "ours_s": ours_s,
            "native_s": base_s,
            "ratio": ratio,
            "target": TARGET,
            "meets_target": ratio <= TARGET,
            "runs": runs,
        }

    # 1. five expectations vs the hand-written filter
    def ours_rules(i: int) -> None:
        ours(f"rules_{i}", True)

    best_of(args.repeat, ours_rules, lambda i: hand(f"hand_{i}"))
    for i in range(args.repeat):
        counts = {e["name"]: e["failed_records"] for e in quality[f"rules_{i}"]["expectations"]}
        check(f"expectation counts (run {i})", counts == expected_failed, counts)
        dropped = quality[f"rules_{i}"]["dropped_records"]
        check(f"dropped (run {i})", dropped == rows - expected_rows, dropped)
    results["hand"] = measured("5 expectations vs hand-written filter", "rules", "hand")

    # 2. the same flow with and without its expectations
    best_of(args.repeat, lambda i: ours(f"again_{i}", True), lambda i: ours(f"plain_{i}", False))
    results["none"] = measured("5 expectations vs none (ours)", "again", "plain")
    return {
        "rows": rows,
        "repeat": args.repeat,
        "bronze_write_s": write_s,
        "warmup_s": warm_s,
        "expected_failed": expected_failed,
        "expected_rows": expected_rows,
        "results": results,
    }


def format_report(report: dict) -> str:
    env = report["environment"]
    lines = [
        *header_lines(env, ("pyspark", "pyarrow", "deltalake")),
        f"run:       bronze of {report['rows']:,} rows, master {env['spark_master']}, "
        f"best of {report['repeat']}",
        f"untimed:   bronze written in {report['bronze_write_s']:.1f} s, "
        f"warm-up {report['warmup_s']:.1f} s",
        "rules:     " + ", ".join(f"{n} ({a})" for n, (a, _) in RULES.items()),
        "failed:    " + ", ".join(f"{n} {c:,}" for n, c in report["expected_failed"].items()),
        "",
    ]
    lines += ratio_table(report["results"].values())
    lines.append("ours = the silver flow's seconds in the update; native = the baseline named")
    return "\n".join(lines)


def main(argv: list[str] | None = None, spark=None) -> dict:
    """Run, print and return the report (``spark``: see ``_common.run_and_report``)."""
    return run_and_report(parse_args(argv), "bench-expectations", run, format_report, spark=spark)


if __name__ == "__main__":
    main()
