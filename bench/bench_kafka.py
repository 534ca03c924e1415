"""Kafka into headwater's Delta tables against Kafka into Spark's own Parquet file sink:
same broker, same topic and messages, same Spark session, same run.

A real single-node broker (``tests/kafka/broker.py``, KRaft from the cached jars) and one
Spark session with Spark's Kafka connector (pyspark 4.2, the kafka tier). Two measurements:

* **throughput**: ``--messages`` JSON messages produced up front to a topic of
  ``--partitions`` partitions, then drained by ``spark.readStream.format("kafka")`` with
  ``trigger(availableNow=True)`` (``--batches`` micro-batches through
  ``maxOffsetsPerTrigger``), values decoded with ``from_json``, once into a headwater Delta
  table and once into ``format("parquet")``, each with its own checkpoint; ``--repeat``
  rounds, the order alternating; each output must hold every message once (rows and
  distinct ids). Time is ``start()`` to the query's end; the median is compared (ratio =
  headwater / Parquet time; goal <= 1.1) and the best is shown too.
* **latency**: a running stream with a ``--trigger`` processing-time trigger (500 ms) from a
  fresh topic into each sink; once it has committed a few warm-up messages, a producer
  sends ``--rate`` messages a second for ``--seconds``, each stamped with its produce time;
  a reader lists the sink's log (Delta's ``_delta_log``, the file sink's
  ``_spark_metadata``) every 10 ms, and each message's latency is from its stamp to the
  first listing of the log entry that made it visible. p50 / p99 / max over every message.
  The producer goes on (unmeasured) until the last measured message is visible, so the
  stream's end does not weigh on the figures (``_kafka_work.SteadyProducer``). The batch
  is broken down by Spark's own ``durationMs`` parts, median over the batches.

Unless ``--smoke``, both sinks first drain a small topic untimed (JVM warm-up).

Run from the repository root with the kafka tier's virtual environment::

    .venv-kafka/bin/python bench/bench_kafka.py
    .venv-kafka/bin/python bench/bench_kafka.py --smoke
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
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
    ratio_table,
    remove_run_dir,
    write_report,
)

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import _kafka_work as work  # noqa: E402

GOAL = 1.1
REPEAT = 3
SMOKE = {"messages": 2_000, "repeat": 1, "seconds": 2.0, "rate": 200}
WARM_UP_MESSAGES = 20_000
NAMES = {"delta": "headwater Delta", "parquet": "Spark Parquet sink"}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--messages", type=int, default=1_000_000, help="messages drained (throughput)")
    p.add_argument("--partitions", type=int, default=4, help="the topics' partitions")
    p.add_argument("--batches", type=int, default=4, help="micro-batches per drain")
    p.add_argument("--seconds", type=float, default=30.0, help="latency: seconds of producing")
    p.add_argument("--rate", type=int, default=1_000, help="latency: messages a second")
    p.add_argument("--trigger", default="500 milliseconds", help="latency: processing time")
    p.add_argument("--smoke", action="store_true", help="tiny sizes, no warm-up: a quick check")
    args = parse_bench_args(
        p, argv, at_least_one=("--messages", "--partitions", "--batches"), repeat=REPEAT
    )
    if args.smoke:
        for key, value in SMOKE.items():
            setattr(args, key, value)
    if args.seconds <= 0 or args.rate < 1:
        p.error("--seconds must be positive and --rate at least 1")
    return args


def new_topic(broker, partitions: int, prefix: str) -> str:
    return broker.create_topic(f"{prefix}_{uuid.uuid4().hex[:10]}", partitions=partitions)


def throughput(
    spark, broker, args: argparse.Namespace, run_dir: Path, tag: str, messages: int, repeat: int
) -> dict:
    """``messages`` produced to a new topic, then drained ``repeat`` times into each sink
    (order alternating, fresh output and checkpoint each time); each output checked."""  # fmt: skip
    topic = new_topic(broker, args.partitions, f"bench_{tag}")
    began = time.perf_counter()
    work.produce(broker, topic, args.partitions, range(messages))
    produced_s = time.perf_counter() - began
    per_trigger = -(-messages // args.batches)
    runs: dict[str, list[dict]] = {sink: [] for sink in work.SINKS}
    for i in range(repeat):
        order = work.SINKS if i % 2 == 0 else work.SINKS[::-1]
        for sink in order:
            out = run_dir / f"{tag}-{sink}-{i}"
            run = work.drain(spark, broker.bootstrap, topic, sink, out, per_trigger)
            rows, ids = work.count(spark, sink, out)
            if rows != messages or ids != messages:
                raise RuntimeError(
                    f"{NAMES[sink]} holds {rows} rows, {ids} ids; {messages} were produced"
                )
            runs[sink].append(run)
            print(f"  [{tag} {i + 1}/{repeat}] {NAMES[sink]}: {run['seconds']:.2f} s, "
                  f"{run['batches']} batches", file=sys.stderr, flush=True)  # fmt: skip
    return {"topic": topic, "produced_s": produced_s, "runs": runs}


def summarise(result: dict, messages: int) -> dict:
    """Median and best seconds per sink, messages a second (median), the ratios."""
    sides = {}
    for sink, runs in result["runs"].items():
        seconds = [r["seconds"] for r in runs]
        median = statistics.median(seconds)
        sides[sink] = {
            "median_s": median,
            "best_s": min(seconds),
            "all_s": seconds,
            "per_second": messages / median,
            "batches": runs[-1]["batches"],
        }
    ours, native = sides["delta"], sides["parquet"]
    ratio = ours["median_s"] / native["median_s"]
    return {
        "sides": sides,
        "ratio": ratio,
        "ratio_best": ours["best_s"] / native["best_s"],
        "meets_goal": ratio <= GOAL,
    }


def measure(spark, broker, args: argparse.Namespace, run_dir: Path) -> dict:
    if not args.smoke:
        throughput(spark, broker, args, run_dir, "warm-up", WARM_UP_MESSAGES, 1)
    result = throughput(spark, broker, args, run_dir, "run", args.messages, args.repeat)
    latency = {}
    for sink in work.SINKS:
        topic = new_topic(broker, args.partitions, f"latency_{sink}")
        latency[sink] = work.latency_run(
            spark, broker, topic, args.partitions, sink, run_dir / f"latency-{sink}",
            args.rate, args.seconds, args.trigger,
        )  # fmt: skip
        found = latency[sink]
        print(f"  [latency] {NAMES[sink]}: p50 {found['p50_ms']:.0f} ms, "
              f"p99 {found['p99_ms']:.0f} ms", file=sys.stderr, flush=True)  # fmt: skip
    return {
        "throughput": result,
        "summary": summarise(result, args.messages),
        "latency": latency,
    }


def format_report(report: dict) -> str:
    args, env = report["arguments"], report["environment"]
    summary, latency = report["summary"], report["latency"]
    lines = [
        *header_lines(env, ("pyspark",)),
        f"broker:    {report['broker']}",
        f"run:       {args['messages']:,} JSON messages, {args['partitions']} partitions, "
        f"{args['batches']} micro-batches per drain (availableNow); {args['repeat']} rounds, "
        f"order alternating, median compared; {env['spark_master']}"
        + ("" if args["smoke"] else "; after an untimed warm-up drain"),
        "",
    ]
    ours, native = summary["sides"]["delta"], summary["sides"]["parquet"]
    lines += ratio_table(
        [
            {
                "name": "Kafka -> sink, availableNow (median)",
                "ours_s": ours["median_s"],
                "native_s": native["median_s"],
                "ratio": summary["ratio"],
                "target": GOAL,
                "meets_target": summary["meets_goal"],
            },
            {
                "name": "Kafka -> sink, availableNow (best)",
                "ours_s": ours["best_s"],
                "native_s": native["best_s"],
                "ratio": summary["ratio_best"],
                "target": GOAL,
                "meets_target": summary["ratio_best"] <= GOAL,
            },
        ]
    )
    lines += [
        "",
        f"throughput: headwater Delta {ours['per_second']:,.0f} msg/s, "
        f"Spark Parquet sink {native['per_second']:,.0f} msg/s (median); "
        f"ratio (headwater / parquet time): {summary['ratio']:.2f}, goal <= {GOAL}: "
        + ("met" if summary["meets_goal"] else "missed"),
        "",
        f"latency, produce -> visible ({args['trigger']} trigger, {args['rate']:,} msg/s "
        f"for {args['seconds']:g} s):",
    ]
    table = [("sink", "messages", "p50 (ms)", "p99 (ms)", "max (ms)", "log entries", "batch (ms)")]
    for sink, found in latency.items():
        table.append(
            (
                NAMES[sink],
                f"{found['messages']:,}",
                f"{found['p50_ms']:.0f}",
                f"{found['p99_ms']:.0f}",
                f"{found['max_ms']:.0f}",
                str(found["entries"]),
                f"{found['batch_ms']:.0f}",
            )
        )
    lines += markdown_table(table, right_aligned=(1, 2, 3, 4, 5, 6))
    lines += [
        "",
        "the batch, median of each part Spark times (ms; batch p99 is the whole batch's):",
    ]
    phases = [("sink", *work.PHASES, "batch p99")]
    for sink, found in latency.items():
        timed = found.get("phases_ms", {})
        phases.append(
            (
                NAMES[sink],
                *(f"{timed.get(phase, 0):.0f}" for phase in work.PHASES),
                f"{found.get('batch_p99_ms', 0):.0f}",
            )
        )
    lines += markdown_table(phases, right_aligned=tuple(range(1, len(work.PHASES) + 2)))
    return "\n".join(lines)


@contextlib.contextmanager
def started(args: argparse.Namespace, run_dir: Path, broker, spark):
    """The given broker and session, or ones started here (and stopped at the end); a given
    session is put back as it was (``bench_session``)."""
    from tests.jars import tier_jars
    from tests.kafka.broker import kafka_broker

    with contextlib.ExitStack() as stack:
        if broker is None:
            broker = stack.enter_context(kafka_broker(":".join(tier_jars("kafka-broker"))))
        conf = {"spark.jars": ",".join(tier_jars("kafka")), "spark.ui.enabled": "false"}
        spark = stack.enter_context(bench_session(args, "bench-kafka", run_dir, spark, conf))
        yield broker, spark


def main(argv: list[str] | None = None, broker=None, spark=None) -> dict:
    """``broker``, ``spark``: a running broker and a session with the connector (the
    tier's smoke test passes its own, so the check starts no JVM); else started here."""
    args = parse_args(argv)
    run_dir = make_run_dir(args.workdir, "bench-kafka-")
    try:
        with started(args, run_dir, broker, spark) as (running, session):
            report = measure(session, running, args, run_dir)
            report["environment"] = environment(session, ("pyspark",))
            jars = [Path(j).name for j in running.classpath.split(":")]
            kafka = next((j[:-4] for j in jars if j.startswith("kafka_2.13-")), "kafka")
            report["broker"] = f"{kafka}, one KRaft node (broker and controller), 127.0.0.1"
    finally:
        remove_run_dir(run_dir, args.keep)
    report["arguments"] = vars(args)
    write_report(report, format_report(report), args.json_out)
    return report


if __name__ == "__main__":
    main()
