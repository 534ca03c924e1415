"""A declarative pipeline run by ``headwater.pipelines.run`` against the same flows written
by hand as Structured Streaming queries, in one run on the same landing files.

Declarative pipelines are worth having only if the runner costs little over what a user
would write by hand; this measures that cost on a multi-flow graph. The landing directory
holds ``--files`` JSON Lines files of ``--rows-per-file`` orders each (``id``, ``ts``,
``customer_id``, ``store``, ``qty``, ``amount``, ``status``), written with numpy, not
Spark, so generation is in no timing. The pipeline (``pyspark.pipelines`` style, 8
datasets, 9 flows):

* ``bronze_orders``: streaming table, Auto Loader (``cloudFiles``) json with schema hints;
* ``silver_orders``: streaming table from bronze, completed orders plus ``revenue``,
  ``day``, ``hour``; ``silver_returns``: streaming table from bronze, returned orders;
* ``ledger``: one streaming table fed by two append flows (``ledger_sales`` from
  ``silver_orders``, ``ledger_refunds`` from ``silver_returns``);
* materialized views ``gold_daily_sales`` (day x store), ``gold_customers`` (per
  customer), ``gold_store_returns`` (the two silvers aggregated per store and joined) and
  ``gold_ledger`` (store x kind).

Each is run three ways, each timed from the call to the end, ``--repeat`` times (best kept):

* **ours**: the project written to the run directory (``spark-pipeline.yml`` and one
  Python source), ``headwater.pipelines.run(dir, spark)``;
* **hand-written**: the same flows as plain queries into headwater's Delta tables,
  ``readStream...writeStream.format("delta").trigger(availableNow=True).toTable(...)`` in
  dependency order, each awaited; views as ``write.format("delta").mode("overwrite")
  .saveAsTable(...)``. This is the native baseline: ratio = ours / hand-written, target
  1.1 (the runner's whole cost: loading, graph analysis, table set-up, event log);
* **SDP** (only with ``--sdp``): Spark's own runner, ``spark-pipelines run``, as a
  subprocess in an environment of its own (``--sdp-env``, default ``<workdir>/sdp-venv``,
  created with ``pyspark[pipelines]`` of this pyspark's version when missing, since SDP
  needs Spark Connect's packages that headwater does not). SDP has no Auto Loader, so its
  bronze reads ``readStream.format("json").schema(...)``; it writes Parquet tables, not
  Delta. Timed from "Creating dataflow graph" to "Run is COMPLETED" in its log, which
  leaves out its JVM and Spark Connect server start (reported beside). Its row counts
  are compared with ours; a difference is reported (``SDP WRONG``), not fatal, since it
  is SDP's answer. Where the environment cannot be had, the report says why and the rest
  runs.

Three updates: the **first** on an empty pipeline; a **second with no new data** (every
stream finds nothing, every view is recomputed: the runner's fixed cost, per flow); a
**third after ``--incremental-pct`` % more files** land. For ours the report splits the
update into its phases (from the event log's timestamps) and lists each flow's seconds
(``result.flows[name].seconds``; independent flows run at the same time, up to
``--max-concurrent-flows``, the hand-written queries one after the other). After every
update the row count and the columns of every table must be equal between ours and
hand-written, and the streaming tables' counts must equal those known from the generated data, so a fast wrong
answer fails the run.

    .venv/bin/python bench/bench_pipelines.py --files 200 --rows-per-file 5000 --sdp
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from _common import (
    best_of,
    check,
    header_lines,
    markdown_table,
    parse_bench_args,
    run_and_report,
    timed,
)
from _pipelines_hand import hand_update
from _pipelines_sdp import sdp_first_update
from _pipelines_workload import (
    FLOWS,
    OURS_BRONZE,
    PIPELINE_SOURCE,
    STREAMING_FLOWS,
    TABLES,
    VIEWS,
    check_tables,
    land,
    write_project,
)

TARGET = 1.1


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--files", type=int, default=200, help="landing files of the first update")
    p.add_argument("--rows-per-file", type=int, default=5000, help="rows in each landing file")
    p.add_argument(
        "--incremental-pct",
        type=float,
        default=10.0,
        help="files landed before the third update, in %% of --files (at least 1 file)",
    )
    p.add_argument(
        "--max-concurrent-flows",
        type=int,
        default=None,
        help="ours: flows run at once (default: headwater's own default)",
    )
    p.add_argument(
        "--no-warmup",
        dest="warmup",
        action="store_false",
        help="skip the untimed warm-up (for smoke tests: the first pair then runs cold)",
    )
    p.add_argument("--sdp", action="store_true", help="also run Spark's spark-pipelines")
    p.add_argument(
        "--sdp-env",
        default=None,
        help="SDP's virtualenv (default <workdir>/sdp-venv, kept across runs; created when "
        "missing)",
    )
    p.add_argument(
        "--sdp-timeout", type=float, default=1800.0, help="seconds before SDP is given up"
    )
    return parse_bench_args(p, argv, at_least_one=("--files", "--rows-per-file"))


# -- ours ------------------------------------------------------------------------------------


def phases(result, started: datetime, ended: datetime) -> dict[str, float]:
    """Where an update's time went, from its events' timestamps: loading the sources (to
    ``create_update``), analysing the graph (to ``SETTING_UP_TABLES``), creating tables (to
    ``RUNNING``), the flows (to the final state), then writing the event log."""
    marks = {"start": started}
    for e in result.events:
        if e.event_type == "create_update":
            marks["loaded"] = e.timestamp
        elif e.event_type == "update_progress":
            state = e.details.get("state")
            if state in ("SETTING_UP_TABLES", "RUNNING"):
                marks[state] = e.timestamp
            elif state in ("COMPLETED", "FAILED", "CANCELED"):
                marks["flows_done"] = e.timestamp
    marks["end"] = ended
    order = [
        ("load definitions", "start", "loaded"),
        ("analyse graph", "loaded", "SETTING_UP_TABLES"),
        ("set up tables", "SETTING_UP_TABLES", "RUNNING"),
        ("flows", "RUNNING", "flows_done"),
        ("event log", "flows_done", "end"),
    ]
    return {
        name: (marks[b] - marks[a]).total_seconds()
        for name, a, b in order
        if a in marks and b in marks
    }


# -- the run ---------------------------------------------------------------------------------


def run(spark, args: argparse.Namespace, run_dir: Path) -> dict:
    from headwater import pipelines

    files, per_file = args.files, args.rows_per_file
    new_files = max(1, round(files * args.incremental_pct / 100))
    landing = run_dir / "landing"
    gen_s, expected = timed(lambda: land(landing, 0, files, per_file))
    landing_bytes = sum(p.stat().st_size for p in landing.iterdir())
    options = {}
    if args.max_concurrent_flows is not None:
        options["max_concurrent_flows"] = args.max_concurrent_flows
    ours_source = PIPELINE_SOURCE.format(bronze=OURS_BRONZE)

    def ours_update(project: Path):
        started = datetime.now(timezone.utc)
        result = pipelines.run(project, spark, **options)
        ended = datetime.now(timezone.utc)
        failed = [(r.name, repr(r.error)) for r in result.failed()]
        check(f"pipeline update of {project.name}", result.ok, failed or result.state)
        return {
            "flows": {name: result.flows[name].seconds for name in FLOWS},
            "rows": {name: result.flows[name].num_output_rows for name in FLOWS},
            "phases": phases(result, started, ended),
            "seconds": result.seconds,
        }

    def new_pipeline(tag: str, source_landing: Path) -> tuple[Path, str, str, Path]:
        """A fresh project for ours and a fresh database + checkpoints for hand-written."""
        ours_db, hand_db = f"ours_{tag}", f"hand_{tag}"
        project = write_project(
            run_dir / f"ours-{tag}", f"bench_{tag}", source_landing, ours_source, database=ours_db
        )
        return project, ours_db, hand_db, run_dir / f"hand-{tag}"

    # Warm-up on a separate small directory: JVM, Python workers, Auto Loader and the Delta
    # sink for both sides alike, before anything is timed.
    warm_s = 0.0
    if args.warmup:
        warm_landing = run_dir / "warmup-landing"
        warm_expected = land(warm_landing, 0, 2, 20)
        project, ours_db, hand_db, checkpoints = new_pipeline("warmup", warm_landing)
        warm_s, _ = timed(
            lambda: (
                ours_update(project),
                hand_update(spark, hand_db, checkpoints, warm_landing),
                check_tables("warm-up", spark, ours_db, hand_db, warm_expected),
            )
        )

    checks_s = [0.0]

    def check_tables_timed(*check_args) -> dict:
        seconds, counts = timed(lambda: check_tables(*check_args))
        checks_s[0] += seconds
        return counts

    results: dict[str, dict] = {}
    per_flow: dict[str, dict] = {}
    ours_phases: dict[str, dict] = {}

    def measure(key: str, name: str, tags: Callable[[int], str], prepare=None) -> None:
        ours_runs: list[dict] = []
        hand_runs: list[dict[str, float]] = []

        def ours(i: int) -> None:
            ours_runs.append(ours_update(run_dir / f"ours-{tags(i)}"))

        def hand(i: int) -> None:
            tag = tags(i)
            hand_runs.append(hand_update(spark, f"hand_{tag}", run_dir / f"hand-{tag}", landing))

        ours_s, hand_s, runs, _ = best_of(args.repeat, ours, hand, prepare)
        best_ours = ours_runs[runs["ours"].index(ours_s)]
        best_hand = hand_runs[runs["native"].index(hand_s)]
        ratio = ours_s / hand_s
        results[key] = {
            "name": name,
            "ours_s": ours_s,
            "native_s": hand_s,
            "ratio": ratio,
            "target": TARGET,
            "meets_target": ratio <= TARGET,
            "baseline": "the same flows written by hand, run one after the other",
            "runs": runs,
        }
        per_flow[key] = {"ours": best_ours["flows"], "hand": best_hand}
        ours_phases[key] = best_ours["phases"]
        results[key]["ours_flow_rows"] = best_ours["rows"]

    # 1. first update, a fresh pipeline (and fresh hand-written tables) per repeat
    for i in range(args.repeat):
        new_pipeline(str(i), landing)
    measure("first", "first update", str)
    counts: dict[str, dict] = {}
    for i in range(args.repeat):
        counts["first"] = check_tables_timed(
            f"first update (run {i})", spark, f"ours_{i}", f"hand_{i}", expected
        )

    # SDP's first update, on the same landing files (before more of them land)
    sdp = sdp_first_update(spark, args, run_dir, landing, counts["first"])
    if "run_s" in sdp:
        ours_s = results["first"]["ours_s"]
        results["sdp"] = {
            "name": "first update vs SDP",
            "ours_s": ours_s,
            "native_s": sdp["run_s"],
            "ratio": ours_s / sdp["run_s"],
            "target": None,
            "meets_target": None,
            "baseline": "`spark-pipelines run` (Parquet tables, json file source), "
            "graph creation to run completed",
            "runs": {"sdp": sdp["runs"]},
        }

    # 2. second update, nothing new: the runner's fixed cost
    measure("rerun", "second update, no new data", lambda i: "0")
    check_tables_timed("second update", spark, "ours_0", "hand_0", expected)

    # 3. third update after more files land (untimed, before each pair)
    landed = [files]

    def land_more(i: int) -> None:
        for table, n in land(landing, landed[0], new_files, per_file).items():
            expected[table] += n
        landed[0] += new_files

    pct = f"{args.incremental_pct:g}"
    measure("incremental", f"third update, {pct}% new files", lambda i: "0", prepare=land_more)
    counts["incremental"] = check_tables_timed("third update", spark, "ours_0", "hand_0", expected)

    return {
        "files": files,
        "rows_per_file": per_file,
        "rows": files * per_file,
        "new_files": new_files,
        "incremental_pct": args.incremental_pct,
        "repeat": args.repeat,
        "max_concurrent_flows": args.max_concurrent_flows,
        "landing_bytes": landing_bytes,
        "generate_s": gen_s,
        "warmup_s": warm_s,
        "checks_s": checks_s[0],
        "row_counts": counts,
        "results": results,
        "per_flow": per_flow,
        "ours_phases": ours_phases,
        "sdp": sdp,
    }


# -- report ----------------------------------------------------------------------------------


def format_report(report: dict) -> str:
    env = report["environment"]
    lines = [
        *header_lines(env, ("pyspark", "pyarrow", "deltalake")),
        f"run:       {report['files']:,} files x {report['rows_per_file']:,} rows = "
        f"{report['rows']:,} rows ({report['landing_bytes'] / 1024 / 1024:.1f} MiB of JSON), "
        f"+{report['new_files']} files before the third update, master "
        f"{env['spark_master']}, best of {report['repeat']}",
        f"untimed:   landing files written in {report['generate_s']:.1f} s, warm-up "
        f"{report['warmup_s']:.1f} s, table checks {report['checks_s']:.1f} s",
        f"pipeline:  {len(TABLES)} datasets, {len(FLOWS)} flows "
        f"({len(STREAMING_FLOWS)} streams, {len(VIEWS)} materialized views)",
        "",
    ]
    table = [("measurement", "ours (s)", "baseline (s)", "ratio", "target", "baseline")]
    for r in report["results"].values():
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
    lines.append(
        "ratio = ours / baseline time; a measurement meets its target when ratio <= target."
    )
    sdp = report["sdp"]
    if "skipped" in sdp:
        lines.append(f"SDP: skipped: {sdp['skipped']}")
    else:
        lines.append(
            f"SDP: run {sdp['run_s']:.3f} s after {sdp['startup_s']:.1f} s of start-up "
            f"(JVMs, Spark Connect server); {sdp['total_s']:.1f} s in all; {sdp['environment']}"
        )
        for table, m in sdp["mismatches"].items():
            lines.append(
                f"SDP WRONG: {table} holds {m['sdp']:,} rows, ours {m['ours']:,} "
                f"(its Parquet files on disk: {m['sdp_files_on_disk']:,} rows)"
            )
    lines.append("")

    keys = list(report["per_flow"])
    names = {k: report["results"][k]["name"] for k in keys}
    header = ["flow (s)"]
    for k in keys:
        header += [f"{names[k]}: ours", "hand"]
    flow_table = [tuple(header)]
    for flow in FLOWS:
        row = [flow]
        for k in keys:
            row += [
                f"{report['per_flow'][k]['ours'][flow]:.3f}",
                f"{report['per_flow'][k]['hand'][flow]:.3f}",
            ]
        flow_table.append(tuple(row))
    lines.extend(markdown_table(flow_table, right_aligned=range(1, len(header))))
    at_once = report["max_concurrent_flows"]
    if at_once != 1:
        most = f"{at_once} at most" if at_once else "headwater's default number at most"
        lines.append(
            f"ours runs independent flows at the same time ({most}), so its flows' seconds "
            "add up to more than its update."
        )
    lines.append("")
    for k in keys:
        parts = " + ".join(f"{p} {s:.2f}" for p, s in report["ours_phases"][k].items())
        lines.append(f"ours, {names[k]}: {report['results'][k]['ours_s']:.2f} s = {parts}")
    return "\n".join(lines)


def main(argv: list[str] | None = None, spark=None) -> dict:
    """Run, print and return the report (``spark``: see ``_common.run_and_report``)."""
    return run_and_report(parse_args(argv), "bench-pipelines", run, format_report, spark=spark)


if __name__ == "__main__":
    main()
