"""One pipeline update on each Delta engine, same data, one run: headwater's engine against
delta-spark, on pyspark 4.2 (the delta-spark tier's venv).

The update is the medallion demo's (``headwater demo``): JSON files land, Auto Loader ingests
them into bronze with a quarantine expectation, silver and gold follow (a streaming join and
a materialized view), plus an AUTO CDC flow (SCD1, each customer's latest order, from
bronze). Each engine runs in a process of its own (the two cannot share a JVM),
twice: the first update (tables created) and a second over one more landing of files
(incremental). The time is the update's own, as the pipeline reports it (``UpdateResult``),
not the JVM's start; both engines must agree on every table's row count. Each flow's
seconds are reported too; ``--profile DIR`` samples every thread's stack during each
update (``stack_sampler``: the flows run in threads) and writes where the thread-seconds
went, headwater's functions by inclusive time, to ``DIR/<engine>-<update>.txt``.

    .venv-delta-spark/bin/python bench/bench_engine_pipeline.py [--repeat N] [--profile DIR]
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import textwrap

from _common import (
    BENCH_DIR,
    header_lines,
    make_run_dir,
    markdown_table,
    parse_bench_args,
    remove_run_dir,
    write_report,
)

ENGINES = ("headwater", "delta-spark")

# The child: the demo's landing and pipeline, run twice; prints the two updates' seconds and
# the tables' counts as JSON.
CHILD = textwrap.dedent(
    """
    import json, random, sys, time
    from pathlib import Path
    import headwater
    from headwater import demo, pipelines
    engine, root, master, profile, bench = sys.argv[1:6]
    sys.path.insert(0, bench)
    from stack_sampler import Sampler
    root = Path(root)
    spark = headwater.session("bench-" + engine, master=master,
                              warehouse=str(root / "warehouse"), delta_engine=engine)
    seconds, flows = [], []
    for run_no in (1, 2):
        demo.land_files(root / "landing", run_no, random.Random(run_no))
        demo.write_pipeline(root / "pipeline", root / "landing")
        (root / "pipeline" / "transformations" / "latest.py").write_text(LATEST)
        sampler = Sampler() if profile else None
        if sampler:
            with sampler:
                result = pipelines.run(root / "pipeline", spark)
            text = sampler.report(only="headwater", limit=60)
            Path(profile, f"{engine}-{run_no}.txt").write_text(text + chr(10))
        else:
            result = pipelines.run(root / "pipeline", spark)
        assert result.ok, [r.name for r in result.failed()]
        seconds.append(result.seconds)
        flows.append({r.name: round(r.seconds, 2) for r in result.flows.values()})
    counts = {t: spark.table(t).count() for t in (*demo.TABLES, "silver.latest_by_customer")}
    found = {"seconds": seconds, "flows": flows, "counts": counts}
    print("RESULT " + json.dumps(found), flush=True)
    """
)
# The AUTO CDC flow added to the demo's pipeline: each customer's latest order (SCD1).
LATEST = textwrap.dedent(
    """
    from pyspark import pipelines as dp
    from pyspark.sql.functions import col

    dp.create_streaming_table("silver.latest_by_customer")
    dp.create_auto_cdc_flow(
        target="silver.latest_by_customer",
        source="bronze.orders",
        keys=["customer_id"],
        sequence_by=col("event_time"),
        except_column_list=["_rescued_data"],
    )
    """
)


def run_engine(engine: str, root: str, master: str, profile: str | None = None) -> dict:
    child = f"LATEST = {LATEST!r}\n{CHILD}"
    done = subprocess.run(
        [sys.executable, "-c", child, engine, root, master, profile or "", str(BENCH_DIR)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise RuntimeError(f"{engine}: the update did not finish:\n{done.stderr[-3000:]}")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default=None, help="write each update's profile here")
    args = parse_bench_args(parser, argv)
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
    run_dir = make_run_dir(args.workdir, "bench-engine-pipeline-")
    best: dict[str, dict] = {}
    try:
        for attempt in range(args.repeat):
            for engine in ENGINES if attempt % 2 == 0 else ENGINES[::-1]:
                where = str(run_dir / f"{engine}-{attempt}")
                found = run_engine(engine, where, args.master, args.profile)
                kept = best.get(engine)
                if kept is None or sum(found["seconds"]) < sum(kept["seconds"]):
                    best[engine] = found
    finally:
        remove_run_dir(run_dir, args.keep)
    if best["headwater"]["counts"] != best["delta-spark"]["counts"]:
        raise RuntimeError(f"the engines disagree: {best}")
    ours, theirs = best["headwater"]["seconds"], best["delta-spark"]["seconds"]
    rows = [
        [label, f"{a:.1f}", f"{b:.1f}", f"{a / b:.2f}"]
        for label, a, b in (
            ("first update (tables created)", ours[0], theirs[0]),
            ("second update (new files only)", ours[1], theirs[1]),
        )
    ]
    env = {
        "date_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "mem_total": f"{os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30:.1f} GiB",
        "python": platform.python_version(),
        "pyspark": importlib.metadata.version("pyspark"),
        "delta-spark": importlib.metadata.version("delta-spark"),
        "spark_master": args.master,
    }
    lines = header_lines(env, versions=("pyspark", "delta-spark")) + [""]
    lines += markdown_table(
        [["update", "headwater (s)", "delta-spark (s)", "ratio"], *rows], right_aligned=(1, 2, 3)
    )
    lines += ["", f"rows per table (same on both): {best['headwater']['counts']}", ""]
    flows = sorted(best["headwater"]["flows"][0])
    lines += markdown_table(
        [
            ["flow (s)", "headwater 1st", "delta-spark 1st", "headwater 2nd", "delta-spark 2nd"],
            *[
                [flow]
                + [f"{best[e]['flows'][n].get(flow, 0):.1f}" for n in (0, 1) for e in ENGINES]
                for flow in flows
            ],
        ],
        right_aligned=(1, 2, 3, 4),
    )
    report = {"env": env, "best": best}
    write_report(report, "\n".join(lines), args.json_out)
    return report


if __name__ == "__main__":
    main()
