"""Database change data capture end to end: PostgreSQL -> Debezium on Kafka Connect ->
Kafka -> a pipeline applying AUTO CDC (SCD1 and SCD2) into Delta, the recipe of
docs/cdc.md, against plain Spark Structured Streaming draining the same topic.

The chain of ``tests/cdc/chain.py`` (PostgreSQL 15 in a temporary folder, Debezium's
PostgreSQL connector on Kafka Connect standalone, the KRaft broker) and one Spark session
with Spark's Kafka connector (pyspark 4.2, the cdc tier). Two measurements:

* **latency**: a continuous update of the pipeline (``--trigger`` interval); ``--samples``
  single-row inserts committed one at a time, each once the previous one is visible (plus
  a random pause of up to 0.3 s); the time from the commit's return to the first listing
  of the SCD1 target's ``_delta_log`` entry whose file holds the row. p50 / p99 / max.
* **throughput**: ``--changes`` row changes (half inserts, then an update of each row;
  transactions of 50,000 rows) committed while the connector runs. Debezium's production
  is timed from the first commit to the topic holding every event; then, from the full
  backlog, one triggered update of the pipeline (the changes table, SCD1 and SCD2, each
  flow's seconds) and, in the same run, plain Spark draining the topic into its Parquet
  file sink (``from_json`` of the envelope, no AUTO CDC) and headwater.debezium's decoding
  into the same sink (no AUTO CDC). Each output is checked (rows, keys, versions).

Run from the repository root with the kafka tier's virtual environment (the cdc jars and
PostgreSQL as ``scripts/tier.sh cdc`` installs them)::

    PYTHONPATH=$PWD/src .venv-kafka/bin/python bench/bench_cdc.py --changes 200000
    PYTHONPATH=$PWD/src .venv-kafka/bin/python bench/bench_cdc.py --smoke
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import uuid
from pathlib import Path

from _common import (
    bench_session,
    environment,
    header_lines,
    make_run_dir,
    markdown_table,
    parse_bench_args,
    remove_run_dir,
    write_report,
)

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import _cdc_work as work  # noqa: E402

from tests.cdc.test_cdc_chain import PIPELINE, project  # noqa: E402

SMOKE = {"changes": 200, "samples": 3, "repeat": 1}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--changes", type=int, default=1_000_000, help="row changes (throughput)")
    p.add_argument("--samples", type=int, default=50, help="latency: single-row commits")
    p.add_argument("--trigger", default="200 milliseconds", help="latency: the continuous trigger")
    p.add_argument("--smoke", action="store_true", help="tiny sizes: a quick check")
    args = parse_bench_args(p, argv, at_least_one=("--changes", "--samples"), repeat=1)
    if args.smoke:
        for key, value in SMOKE.items():
            setattr(args, key, value)
    if args.changes % 2:
        p.error("--changes must be even (an insert and an update per row)")
    return args


def log(text: str) -> None:
    print(f"  [cdc] {text}", file=sys.stderr, flush=True)


def latency(spark, chain, args: argparse.Namespace, run_dir: Path) -> dict:
    name = f"lat_{uuid.uuid4().hex[:6]}"
    root = project(run_dir / name, name, chain.broker.bootstrap, chain.topic("lat"), PIPELINE)
    found = work.latency_run(spark, chain.postgres, "lat", root, name, args.samples, args.trigger)
    log(f"latency: p50 {found['p50_ms']:.0f} ms, p99 {found['p99_ms']:.0f} ms")
    return found


def throughput(spark, chain, args: argparse.Namespace, run_dir: Path) -> dict:
    keys = args.changes // 2
    topic = chain.topic("bulk")
    began = work.bulk_changes(chain.postgres, "bulk", keys)
    written = time.time()
    produced = work.wait_offset(chain.broker, topic, args.changes, timeout=3600)
    log(f"{args.changes:,} changes: written in {written - began:.1f} s, "
        f"on the topic after {produced - began:.1f} s")  # fmt: skip
    applies, plain, decoded = [], [], []
    for i in range(args.repeat):
        name = f"bulk_{i}_{uuid.uuid4().hex[:6]}"
        root = project(run_dir / name, name, chain.broker.bootstrap, topic, PIPELINE)
        t0 = time.perf_counter()
        result = work.run_update(spark, root)
        seconds = time.perf_counter() - t0
        current = spark.table(f"{name}.accounts").count()
        versions = spark.table(f"{name}.accounts_history").count()
        if current != keys or versions != 2 * keys:
            raise RuntimeError(f"SCD1 holds {current} rows (want {keys}), SCD2 {versions} "
                               f"versions (want {2 * keys})")  # fmt: skip
        flows = {flow.name: flow.seconds for flow in result.flows.values()}
        applies.append({"seconds": seconds, "flows": flows})
        log(
            f"pipeline update: {seconds:.1f} s ({', '.join(f'{k} {v:.1f}' for k, v in flows.items())})"
        )
        for decode, runs in (("plain", plain), ("debezium", decoded)):
            out = run_dir / f"{decode}-{i}"
            run = work.drain_to_parquet(spark, chain.broker.bootstrap, topic, decode, out)
            if run["rows"] != args.changes:
                raise RuntimeError(f"the {decode} baseline wrote {run['rows']} rows")
            runs.append(run)
            log(f"{decode} -> Parquet: {run['seconds']:.1f} s")
    return {
        "write_s": written - began,
        "produce_s": produced - began,
        "apply": min(applies, key=lambda r: r["seconds"]),
        "plain_s": min(r["seconds"] for r in plain),
        "debezium_s": min(r["seconds"] for r in decoded),
    }


def format_report(report: dict) -> str:
    args, env, lat, tp = (
        report["arguments"],
        report["environment"],
        report["latency"],
        report["throughput"],
    )
    changes = args["changes"]
    apply_s = tp["apply"]["seconds"]
    rate = {"produce": changes / tp["produce_s"], "apply": changes / apply_s}
    bottleneck = (
        "the pipeline's apply" if rate["apply"] < rate["produce"] else "Debezium's production"
    )
    lines = [
        *header_lines(env, ("pyspark",)),
        f"chain:     {report['chain']}",
        f"run:       {env['spark_master']}; best of {args['repeat']}",
        "",
        f"latency, database commit -> row visible in the SCD1 target (continuous update, "
        f"{lat['trigger']} trigger, {lat['samples']} single-row commits):",
        *markdown_table(
            [
                ("p50 (ms)", "p99 (ms)", "max (ms)", "min (ms)"),
                (
                    f"{lat['p50_ms']:.0f}",
                    f"{lat['p99_ms']:.0f}",
                    f"{lat['max_ms']:.0f}",
                    f"{lat['min_ms']:.0f}",
                ),
            ],
            right_aligned=(0, 1, 2, 3),
        ),  # fmt: skip
        "",
        f"throughput, {changes:,} row changes ({changes // 2:,} inserts, then an update of "
        "each row):",
    ]
    table = [("stage", "seconds", "changes/s", "vs plain Spark")]
    rows = [
        ("PostgreSQL writes (commits)", tp["write_s"], None),
        ("Debezium: first commit -> all on the topic", tp["produce_s"], None),
        ("pipeline update: changes table + SCD1 + SCD2", apply_s, tp["plain_s"]),
        ("  baseline: plain Spark, from_json -> Parquet", tp["plain_s"], tp["plain_s"]),
        ("  baseline: headwater.debezium -> Parquet", tp["debezium_s"], tp["plain_s"]),
    ]
    for label, seconds, base in rows:
        table.append((label, f"{seconds:.1f}", f"{changes / seconds:,.0f}",
                      "" if base is None else f"{seconds / base:.2f}"))  # fmt: skip
    lines += markdown_table(table, right_aligned=(1, 2, 3))
    flows = ", ".join(f"{k} {v:.1f} s" for k, v in tp["apply"]["flows"].items())
    lines += [
        "",
        f"pipeline flows: {flows}",
        f"bottleneck: {bottleneck} ({rate['produce']:,.0f} changes/s produced, "
        f"{rate['apply']:,.0f} applied); ratio (pipeline / plain Spark time): "
        f"{apply_s / tp['plain_s']:.2f}",
    ]
    return "\n".join(lines)


class Chain:
    """The running components: the broker, PostgreSQL, Kafka Connect with one connector
    over the latency and the bulk tables."""

    def __init__(self, broker, postgres, connect, name: str) -> None:
        self.broker, self.postgres, self.connect, self.name = broker, postgres, connect, name

    def topic(self, table: str) -> str:
        return f"{self.name}.public.{table}"


@contextlib.contextmanager
def started(args: argparse.Namespace, run_dir: Path, broker, postgres, classpath, spark):
    """The given components and session, or ones started here (stopped at the end); the
    latency and bulk tables, and a connector over them, made here (dropped at the end)."""
    from tests.cdc.chain import connector_config, kafka_connect, postgres_server
    from tests.jars import tier_jars
    from tests.kafka.broker import kafka_broker

    name = f"bench{uuid.uuid4().hex[:6]}"
    with contextlib.ExitStack() as stack:
        if broker is None:
            broker = stack.enter_context(kafka_broker(":".join(tier_jars("kafka-broker"))))
        if postgres is None:
            postgres = stack.enter_context(postgres_server())
        conf = {"spark.jars": ",".join(tier_jars("kafka")), "spark.ui.enabled": "false",
                "spark.sql.session.timeZone": "UTC"}  # fmt: skip
        spark = stack.enter_context(bench_session(args, "bench-cdc", run_dir, spark, conf))
        postgres.execute(work.TABLE.format("lat"), work.TABLE.format("bulk"),
                         "INSERT INTO lat VALUES (0, 'first', 0, now())")  # fmt: skip
        stack.callback(postgres.execute, "DROP TABLE lat", "DROP TABLE bulk")
        config = connector_config(name, postgres, ["public.lat", "public.bulk"])
        classpath = classpath or ":".join(tier_jars("cdc"))
        connect = stack.enter_context(kafka_connect(classpath, broker.bootstrap, {name: config}))
        chain = Chain(broker, postgres, connect, name)
        work.wait_offset(broker, chain.topic("lat"), 1, timeout=120)
        yield chain, spark


def main(
    argv: list[str] | None = None, broker=None, postgres=None, classpath=None, spark=None
) -> dict:
    """``broker``, ``postgres``, ``classpath`` (Connect's jars), ``spark``: running ones
    (the tier's smoke test passes its own); else started here."""
    args = parse_args(argv)
    run_dir = make_run_dir(args.workdir, "bench-cdc-")
    try:
        with started(args, run_dir, broker, postgres, classpath, spark) as (chain, session):
            report = {
                "latency": latency(session, chain, args, run_dir),
                "throughput": throughput(session, chain, args, run_dir),
                "environment": environment(session, ("pyspark",)),
                "chain": "PostgreSQL "
                + chain.postgres.rows("SHOW server_version")[0][0].split()[0]
                + ", Debezium's PostgreSQL connector on Kafka Connect standalone, "
                "one KRaft broker, topics of one partition",
            }
    finally:
        remove_run_dir(run_dir, args.keep)
    report["arguments"] = vars(args)
    write_report(report, format_report(report), args.json_out)
    return report


if __name__ == "__main__":
    main()
