"""Whole pipeline updates with an incremental materialized view against the same pipeline
refreshing it in full, after a 1% append and after a 1% UPDATE of a ``--rows``-row input.

What a user waits for is the whole update (``pipelines.run`` end to end, on a warm session
as ``run --watch`` keeps it): the graph's analysis, every flow, the event log. So each
step times two pipelines' whole updates in the same run, alternating their order:
``ours`` with the default refresh policy (headwater picks the technique) and ``full``,
the same pipeline with ``refresh_policy="full"`` on its view (a recompute on every update,
what Spark's own pipelines do).

The input, ``bench_src.facts`` (``id``, ``k`` = one of ``--groups`` groups, ``amount``), is
a Delta table written outside the pipelines, with the change data feed on (the feed is
how its in-place updates are taken back; without it they are derived from the files the
UPDATE removed and added). Built once, untimed.

* **1% appended** to the input. Each pipeline's view groups the input directly (``gold``
  over ``bench_src.facts``, a Delta table outside the pipeline: ``GROUP BY k`` with
  ``sum``, ``count(*)``, ``count(amount)``). Ours: ``GROUP_AGGREGATE`` (the appended
  files' rows aggregated and merged into the view's groups).
* **1% updated** in place in the input (``UPDATE ... WHERE id % 100 = 0``), the same
  view. Ours: ``GROUP_AGGREGATE`` (the updated rows' old images read from the feed and
  taken back from their groups, the new added).
* **1% appended through a streaming table** (no goal; the medallion shape, reported so
  that its fixed cost shows): ``silver``, a streaming table over the input, and ``gold``
  grouping ``silver``. Both sides pay the same stream, which dominates the update.

After each step both pipelines' views must hold the same rows and the techniques logged
must be the expected ones, so a fast wrong answer fails the run.

    .venv/bin/python bench/bench_view_updates.py --rows 4000000
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

import yaml
from _common import best_of, check, header_lines, parse_bench_args, ratio_table, run_and_report

TARGET = 0.30  # the goal: ours / full, each step with a view over the input

AGGREGATE = """
def aggregate(source):
    return spark.read.table(source).groupBy("k").agg(
        F.sum("amount").alias("total"), F.count("*").alias("n"),
        F.count("amount").alias("amounts"),
    )
"""

STREAM_PIPELINE = textwrap.dedent(
    """
    import dlt
    from pyspark.sql import functions as F
    {aggregate}

    @dlt.table
    def silver():
        return spark.readStream.table("bench_src.facts")


    @dlt.table({policy})
    def gold():
        return aggregate("silver")
    """
)

VIEW_PIPELINE = textwrap.dedent(
    """
    import dlt
    from pyspark.sql import functions as F
    {aggregate}

    @dlt.table({policy})
    def gold():
        return aggregate("bench_src.facts")
    """
)

SIDES = {"ours": "", "full": 'refresh_policy="full"'}
EXPECTED = {"ours": "GROUP_AGGREGATE", "full": "FULL_RECOMPUTE"}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=4_000_000, help="rows in the input")
    p.add_argument("--groups", type=int, default=1000, help="groups in the view")
    p.add_argument("--profile", action="store_true", help="print where ours' update went")
    return parse_bench_args(p, argv, at_least_one=("--rows", "--groups"))


def write_pipeline(run_dir: Path, name: str, template: str, policy: str) -> Path:
    """A pipeline folder ``name`` (its datasets in database ``bench_<name>``)."""
    root = run_dir / name
    (root / "transformations").mkdir(parents=True)
    text = template.replace("{aggregate}", AGGREGATE).replace("{policy}", policy)
    (root / "transformations" / "views.py").write_text(text)
    spec = {"name": name, "storage": str(root / "storage"), "database": f"bench_{name}"}
    (root / "spark-pipeline.yml").write_text(yaml.safe_dump(spec))
    return root


def run(spark, args: argparse.Namespace, run_dir: Path) -> dict:
    from pyspark.sql import functions as F

    from headwater import pipelines

    n, groups = args.rows, args.groups
    step_rows = max(n // 100, 1)
    spark.sql("CREATE DATABASE IF NOT EXISTS bench_src")

    def facts(start: int, count: int):
        return spark.range(start, start + count).select(
            "id", (F.col("id") % groups).alias("k"), (F.col("id") * 7 % 1000).alias("amount")
        )

    spark.sql(
        "CREATE TABLE bench_src.facts (id BIGINT, k BIGINT, amount BIGINT) USING delta "
        "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')"
    )
    facts(0, n).write.format("delta").mode("append").saveAsTable("bench_src.facts")
    profiles: dict[str, str] = {}

    def update(root: Path, side: str, key: str, expected: dict[str, object]) -> None:
        """One whole update of a pipeline, checked: it completed, and each flow in
        ``expected`` ran that technique (a view) or wrote that many rows (a stream)."""
        if args.profile and side == "ours":
            from stack_sampler import Sampler

            with Sampler() as sampler:
                result = pipelines.run(root, spark)
            profiles[key] = sampler.report(only="headwater")
        else:
            result = pipelines.run(root, spark)
        check(f"{key} ({side})", result.ok, [str(r.error) for r in result.failed()])
        for name, want in expected.items():
            flow = result.flows[name]
            got = flow.technique if isinstance(want, str) else flow.num_output_rows
            check(f"{key} ({side}): {name}", got == want, f"{got}, not {want}")

    def same_views(key: str, databases: list[str]) -> None:
        ours, full = (spark.table(f"{db}.gold") for db in databases)
        wrong = ours.exceptAll(full).count() + full.exceptAll(ours).count()
        check(f"{key}: the views equal", wrong == 0, f"{wrong} rows differ")

    def measure(key: str, name: str, template: str, change, expected, target=TARGET) -> dict:
        roots = {
            side: write_pipeline(run_dir, f"vu_{key}_{side}", template, policy)
            for side, policy in SIDES.items()
        }
        for root in roots.values():  # the initial load and the first refresh, untimed
            check(f"{key}: first update", pipelines.run(root, spark).ok, root)

        def side(which: str):
            return lambda i: update(roots[which], which, key, expected(which))

        ours_s, full_s, times, _ = best_of(args.repeat, side("ours"), side("full"), change)
        same_views(key, [f"bench_{r.name}" for r in roots.values()])
        ratio = ours_s / full_s
        return {
            "name": name,
            "ours_s": ours_s,
            "native_s": full_s,
            "ratio": ratio,
            "target": target,
            "meets_target": target is None or ratio <= target,
            "times": times,
        }

    appended = {"n": n}

    def append(i: int) -> None:
        facts(appended["n"], step_rows).write.format("delta").mode("append").saveAsTable(
            "bench_src.facts"
        )
        appended["n"] += step_rows

    def update_in_place(i: int) -> None:
        spark.sql(f"UPDATE bench_src.facts SET amount = amount + 1 WHERE id % 100 = {i % 100}")

    results = {
        "append": measure(
            "append",
            f"1% appended ({step_rows:,} rows to {n:,})",
            VIEW_PIPELINE,
            append,
            lambda side: {"gold": EXPECTED[side]},
        ),
        "update": measure(
            "update",
            f"1% updated in place ({step_rows:,} of {n:,} rows)",
            VIEW_PIPELINE,
            update_in_place,
            lambda side: {"gold": EXPECTED[side]},
        ),
        "append_stream": measure(
            "append_stream",
            f"1% appended through a streaming table ({step_rows:,} rows)",
            STREAM_PIPELINE,
            append,
            lambda side: {"silver": step_rows, "gold": EXPECTED[side]},
            target=None,
        ),
    }
    return {"rows": n, "groups": groups, "results": results, "profiles": profiles}


def format_report(report: dict) -> str:
    env = report["environment"]
    lines = [
        *header_lines(env, ("pyspark", "pyarrow", "deltalake")),
        f"run:       {report['rows']:,} input rows in {report['groups']:,} groups, "
        f"master {env['spark_master']}, whole updates on a warm session",
        "",
        *ratio_table(report["results"].values()),
        "ours = the whole update, the view refreshed incrementally; native = the same "
        "pipeline with refresh_policy='full'",
    ]
    for key, text in report["profiles"].items():
        lines += ["", f"where ours' update went ({key}, thread-seconds):", text]
    return "\n".join(lines)


def main(argv: list[str] | None = None, spark=None) -> dict:
    """Run, print and return the report (``spark``: see ``_common.run_and_report``)."""
    return run_and_report(parse_args(argv), "bench-view-updates", run, format_report, spark=spark)


if __name__ == "__main__":
    main()
