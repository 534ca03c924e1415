"""The fixed cost of a pipeline update that finds nothing new, on a warm session.

One pipeline of five datasets (``--rows`` rows in a source Delta table): ``bronze``, a
streaming table from that table; ``big``, a temporary view filtering it; ``totals`` and
``big_totals``, materialized views grouping ``bronze`` and ``big``; ``latest``, an AUTO
CDC target keyed from ``bronze``. After a first update (untimed), each no-change update
is timed whole (``pipelines.run`` in the same session, as ``run --watch`` does), best of
``--repeat``; every view must be a NO_OP and nothing may be written.

Spark's own pipelines (``spark-pipelines``, a Spark Connect server) keep no session
between runs, so they have no warm no-change update to compare with here: not measured.

    .venv/bin/python bench/bench_update_fixed_cost.py --rows 100000
"""

from __future__ import annotations

import argparse
import textwrap
import time
from pathlib import Path

import yaml
from _common import check, header_lines, parse_bench_args, run_and_report

GOAL_S = 0.5

PIPELINE = textwrap.dedent(
    """
    from pyspark import pipelines as dp
    from pyspark.sql import functions as F


    @dp.table
    def bronze():
        return spark.readStream.table("bench_src.fixed_cost")


    @dp.temporary_view
    def big():
        return spark.read.table("bronze").where("amount > 500")


    @dp.materialized_view
    def totals():
        return spark.read.table("bronze").groupBy("k").agg(F.sum("amount").alias("total"))


    @dp.materialized_view
    def big_totals():
        return spark.read.table("big").groupBy("k").agg(F.count("*").alias("n"))


    dp.create_streaming_table("latest")
    dp.create_auto_cdc_flow(target="latest", source="bronze", keys=["k"], sequence_by="id")
    """
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=100_000, help="rows in the source table")
    return parse_bench_args(p, argv, at_least_one=("--rows",), repeat=5)


def run(spark, args: argparse.Namespace, run_dir: Path) -> dict:
    from headwater import pipelines

    spark.sql("CREATE DATABASE IF NOT EXISTS bench_src")
    spark.range(args.rows).selectExpr(
        "id", "id % 100 AS k", "id * 7 % 1000 AS amount"
    ).write.format("delta").mode("overwrite").saveAsTable("bench_src.fixed_cost")
    root = run_dir / "fixed-cost"
    (root / "transformations").mkdir(parents=True)
    (root / "transformations" / "p.py").write_text(PIPELINE)
    spec = {"name": "fixed_cost", "storage": str(root / "storage"), "database": "bench_fc"}
    (root / "spark-pipeline.yml").write_text(yaml.safe_dump(spec))
    first = pipelines.run(root, spark)
    check("first update", first.ok, [str(r.error) for r in first.failed()])
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        result = pipelines.run(root, spark)
        times.append(time.perf_counter() - start)
        check("no-change update", result.ok, [str(r.error) for r in result.failed()])
        techniques = {n: r.technique for n, r in result.flows.items() if r.technique}
        check("views are NO_OP", set(techniques.values()) == {"NO_OP"}, techniques)
        written = {n: r.num_output_rows for n, r in result.flows.items() if r.num_output_rows}
        check("nothing written", not written, written)
    return {"rows": args.rows, "seconds": times, "best_s": min(times), "goal_s": GOAL_S}


def format_report(report: dict) -> str:
    env = report["environment"]
    return "\n".join(
        [
            *header_lines(env, ("pyspark", "pyarrow", "deltalake")),
            f"run:       5 datasets over {report['rows']:,} rows, master {env['spark_master']}",
            f"no-change update, warm: best {report['best_s']:.3f} s of "
            + ", ".join(f"{s:.3f}" for s in report["seconds"])
            + f" (goal < {report['goal_s']} s)",
        ]
    )


def main(argv: list[str] | None = None, spark=None) -> dict:
    """Run, print and return the report (``spark``: see ``_common.run_and_report``)."""
    return run_and_report(
        parse_args(argv), "bench-update-fixed-cost", run, format_report, spark=spark
    )


if __name__ == "__main__":
    main()
