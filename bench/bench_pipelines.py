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
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from _common import (
    BENCH_DIR,
    best_of,
    check,
    header_lines,
    markdown_table,
    parse_bench_args,
    run_in_session,
    timed,
    write_report,
)

TARGET = 1.1
# Every column hinted, so SDP's explicit schema is the same as Auto Loader's inferred one.
HINTS = (
    "id BIGINT, ts TIMESTAMP, customer_id INT, store STRING, qty INT, amount DOUBLE, status STRING"
)
STREAMING_FLOWS = (
    "bronze_orders",
    "silver_orders",
    "silver_returns",
    "ledger_sales",
    "ledger_refunds",
)
VIEWS = ("gold_daily_sales", "gold_customers", "gold_store_returns", "gold_ledger")
FLOWS = (*STREAMING_FLOWS, *VIEWS)
STREAMING_TABLES = ("bronze_orders", "silver_orders", "silver_returns", "ledger")
TABLES = (*STREAMING_TABLES, *VIEWS)
STORES = 50
CUSTOMERS = 10_000

# The pipeline's one source. ``{bronze}`` is the bronze reader: Auto Loader for ours, the
# plain json file source for SDP; the rest is the same text for both.
PIPELINE_SOURCE = '''\
"""Orders: bronze from the landing files, two silvers, a ledger fed by two flows, gold views."""

from pyspark import pipelines as dp
from pyspark.sql import functions as F

source = spark.conf.get("source_dir")


@dp.table(comment="orders as landed")
def bronze_orders():
    return {bronze}


@dp.table(comment="completed orders, with revenue, day and hour")
def silver_orders():
    return (
        spark.readStream.table("bronze_orders")
        .where("status = 'ok' AND amount > 0")
        .withColumn("revenue", F.col("amount") * F.col("qty"))
        .withColumn("day", F.to_date("ts"))
        .withColumn("hour", F.hour("ts"))
    )


@dp.table(comment="returned orders, with the refund")
def silver_returns():
    return (
        spark.readStream.table("bronze_orders")
        .where("status = 'returned'")
        .select("id", "ts", "customer_id", "store", (-F.col("amount") * F.col("qty")).alias("refund"))
    )


dp.create_streaming_table("ledger", comment="sales and refunds, one row each")


@dp.append_flow(target="ledger")
def ledger_sales():
    return spark.readStream.table("silver_orders").select(
        "id", "store", "day", F.col("revenue").alias("value"), F.lit("sale").alias("kind")
    )


@dp.append_flow(target="ledger")
def ledger_refunds():
    return spark.readStream.table("silver_returns").select(
        "id", "store", F.to_date("ts").alias("day"), F.col("refund").alias("value"),
        F.lit("refund").alias("kind"),
    )


@dp.materialized_view
def gold_daily_sales():
    return spark.read.table("silver_orders").groupBy("day", "store").agg(
        F.count("*").alias("orders"), F.sum("revenue").alias("revenue")
    )


@dp.materialized_view
def gold_customers():
    return spark.read.table("silver_orders").groupBy("customer_id").agg(
        F.count("*").alias("orders"), F.sum("revenue").alias("revenue"),
        F.min("ts").alias("first_order"), F.max("ts").alias("last_order"),
    )


@dp.materialized_view
def gold_store_returns():
    sales = spark.read.table("silver_orders").groupBy("store").agg(
        F.count("*").alias("orders"), F.sum("revenue").alias("revenue")
    )
    refunds = spark.read.table("silver_returns").groupBy("store").agg(
        F.count("*").alias("returns"), F.sum("refund").alias("refunded")
    )
    return sales.join(refunds, "store", "left").withColumn(
        "return_rate", F.col("returns") / F.col("orders")
    )


@dp.materialized_view
def gold_ledger():
    return spark.read.table("ledger").groupBy("store", "kind").agg(
        F.count("*").alias("entries"), F.sum("value").alias("total")
    )
'''

OURS_BRONZE = (
    'spark.readStream.format("cloudFiles").option("cloudFiles.format", "json")'
    f'.option("cloudFiles.schemaHints", "{HINTS}").load(source)'
)
SDP_BRONZE = f'spark.readStream.format("json").schema("{HINTS}").load(source)'


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


# -- landing files ---------------------------------------------------------------------------


def mixed(ids, salt: int):
    """A splitmix64-style hash of ``ids`` (uint64, wrapping): each column drawn from its own
    salt, so status, store and customer are not tied to each other through ``id``, as plain
    ``id * k % n`` columns are (every return then fell in stores that had no sale, and the
    join of the two silvers matched nothing)."""
    import numpy as np

    x = (ids.astype(np.uint64) + np.uint64(salt)) * np.uint64(0x9E3779B97F4A7C15)
    x ^= x >> np.uint64(31)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(29)
    return x


def file_columns(index: int, rows_per_file: int) -> dict:
    """The orders of landing file ``index`` (ids ``index * rows_per_file`` onwards): about
    80% ``ok``, 10% ``returned``, 10% ``cancelled``, spread over 30 days, 50 stores and
    10,000 customers, deterministic so both sides and the checks see the same rows."""
    import numpy as np

    ids = np.arange(index * rows_per_file, (index + 1) * rows_per_file, dtype=np.int64)
    start = np.datetime64("2024-01-01T00:00:00", "ms")
    ts = np.datetime_as_string(
        start + ((ids * 1_237) % (30 * 86_400_000)).astype("timedelta64[ms]"),
        unit="ms",
        timezone="UTC",
    )
    kind = mixed(ids, 1) % np.uint64(10)
    status = np.where(kind == 0, "returned", np.where(kind == 1, "cancelled", "ok"))
    stores = (mixed(ids, 2) % np.uint64(STORES)).astype(np.int64)
    return {
        "id": ids,
        "ts": ts,
        "customer_id": (mixed(ids, 3) % np.uint64(CUSTOMERS)).astype(np.int64),
        "store": np.char.add("store-", np.char.zfill(stores.astype(str), 2)),
        "qty": (1 + mixed(ids, 4) % np.uint64(5)).astype(np.int64),
        "amount": (mixed(ids, 5) % np.uint64(100_000)).astype(np.int64) / 100.0,
        "status": status,
    }


def land_file(directory: Path, index: int, rows_per_file: int) -> dict[str, int]:
    """Write landing file ``index`` (under a hidden name first, so no source sees half a
    file); what its rows add to each streaming table's count."""
    c = file_columns(index, rows_per_file)
    columns = [c[k].tolist() for k in ("id", "ts", "customer_id", "store", "qty", "amount")]
    lines = [
        f'{{"id":{i},"ts":"{t}","customer_id":{cu},"store":"{s}","qty":{q},'
        f'"amount":{a!r},"status":"{st}"}}\n'
        for i, t, cu, s, q, a, st in zip(*columns, c["status"].tolist(), strict=True)
    ]
    path = directory / f"part-{index:06d}.json"
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_text("".join(lines))
    os.replace(tmp, path)
    sales = int(((c["status"] == "ok") & (c["amount"] > 0)).sum())
    returns = int((c["status"] == "returned").sum())
    return {
        "bronze_orders": rows_per_file,
        "silver_orders": sales,
        "silver_returns": returns,
        "ledger": sales + returns,
    }


def land(directory: Path, first: int, count: int, rows_per_file: int) -> dict[str, int]:
    """Files ``first .. first + count - 1``; their rows per streaming table."""
    directory.mkdir(parents=True, exist_ok=True)
    total = dict.fromkeys(STREAMING_TABLES, 0)
    for i in range(first, first + count):
        for table, n in land_file(directory, i, rows_per_file).items():
            total[table] += n
    return total


def write_project(
    root: Path,
    name: str,
    landing: Path,
    source: str,
    database: str | None = None,
    conf: dict[str, str] | None = None,
) -> Path:
    """A pipeline project: ``spark-pipeline.yml`` and ``transformations/orders.py``. The
    storage is a ``file://`` URI, which SDP requires and headwater accepts; ``conf`` goes
    into the spec's ``configuration`` beside ``source_dir``."""
    import yaml

    (root / "transformations").mkdir(parents=True)
    (root / "transformations" / "orders.py").write_text(source)
    data = {
        "name": name,
        "storage": f"file://{root / 'storage'}",
        **({"database": database} if database else {}),
        "configuration": {"source_dir": str(landing), **(conf or {})},
        "libraries": [{"glob": {"include": "transformations/**"}}],
    }
    (root / "spark-pipeline.yml").write_text(yaml.safe_dump(data, sort_keys=False))
    return root


# -- the hand-written flows ------------------------------------------------------------------


def hand_update(spark, db: str, checkpoints: Path, landing: Path) -> dict[str, float]:
    """The pipeline's flows as a user writes them without a runner: one query at a time in
    dependency order, each awaited. Seconds per flow, reader built to query ended."""
    from pyspark.sql import functions as F

    seconds: dict[str, float] = {}

    def stream(flow: str, target: str, build: Callable[[], Any]) -> None:
        start = time.perf_counter()
        query = (
            build()
            .writeStream.format("delta")
            .option("checkpointLocation", str(checkpoints / flow))
            .trigger(availableNow=True)
            .toTable(f"{db}.{target}")
        )
        query.awaitTermination()
        if query.exception() is not None:
            raise RuntimeError(f"hand-written flow {flow} failed: {query.exception()}")
        seconds[flow] = time.perf_counter() - start

    def view(name: str, build: Callable[[], Any]) -> None:
        start = time.perf_counter()
        build().write.format("delta").mode("overwrite").saveAsTable(f"{db}.{name}")
        seconds[name] = time.perf_counter() - start

    def table(name: str):
        return spark.read.table(f"{db}.{name}")

    def table_stream(name: str):
        return spark.readStream.table(f"{db}.{name}")

    stream(
        "bronze_orders",
        "bronze_orders",
        lambda: (
            spark.readStream.format("cloudFiles")
            .option("cloudFiles.format", "json")
            .option("cloudFiles.schemaLocation", str(checkpoints / "bronze_orders" / "schema"))
            .option("cloudFiles.schemaHints", HINTS)
            .load(str(landing))
        ),
    )
    stream(
        "silver_orders",
        "silver_orders",
        lambda: (
            table_stream("bronze_orders")
            .where("status = 'ok' AND amount > 0")
            .withColumn("revenue", F.col("amount") * F.col("qty"))
            .withColumn("day", F.to_date("ts"))
            .withColumn("hour", F.hour("ts"))
        ),
    )
    stream(
        "silver_returns",
        "silver_returns",
        lambda: (
            table_stream("bronze_orders")
            .where("status = 'returned'")
            .select(
                "id",
                "ts",
                "customer_id",
                "store",
                (-F.col("amount") * F.col("qty")).alias("refund"),
            )
        ),
    )
    stream(
        "ledger_sales",
        "ledger",
        lambda: table_stream("silver_orders").select(
            "id", "store", "day", F.col("revenue").alias("value"), F.lit("sale").alias("kind")
        ),
    )
    stream(
        "ledger_refunds",
        "ledger",
        lambda: table_stream("silver_returns").select(
            "id",
            "store",
            F.to_date("ts").alias("day"),
            F.col("refund").alias("value"),
            F.lit("refund").alias("kind"),
        ),
    )
    view(
        "gold_daily_sales",
        lambda: (
            table("silver_orders")
            .groupBy("day", "store")
            .agg(F.count("*").alias("orders"), F.sum("revenue").alias("revenue"))
        ),
    )
    view(
        "gold_customers",
        lambda: (
            table("silver_orders")
            .groupBy("customer_id")
            .agg(
                F.count("*").alias("orders"),
                F.sum("revenue").alias("revenue"),
                F.min("ts").alias("first_order"),
                F.max("ts").alias("last_order"),
            )
        ),
    )

    def store_returns():
        sales = (
            table("silver_orders")
            .groupBy("store")
            .agg(F.count("*").alias("orders"), F.sum("revenue").alias("revenue"))
        )
        refunds = (
            table("silver_returns")
            .groupBy("store")
            .agg(F.count("*").alias("returns"), F.sum("refund").alias("refunded"))
        )
        return sales.join(refunds, "store", "left").withColumn(
            "return_rate", F.col("returns") / F.col("orders")
        )

    view("gold_store_returns", store_returns)
    view(
        "gold_ledger",
        lambda: (
            table("ledger")
            .groupBy("store", "kind")
            .agg(F.count("*").alias("entries"), F.sum("value").alias("total"))
        ),
    )
    return seconds


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


# -- SDP -------------------------------------------------------------------------------------


def sdp_environment(args: argparse.Namespace) -> tuple[Path | None, str]:
    """SDP's virtualenv, created when missing (``pyspark[pipelines]`` of this pyspark's
    version, from the package index); ``(None, why)`` when it cannot be had."""
    import pyspark

    base = Path(args.workdir) if args.workdir else BENCH_DIR / "data"
    env = Path(args.sdp_env) if args.sdp_env else base / "sdp-venv"
    python = env / "bin" / "python"
    version = pyspark.__version__
    if not python.exists():
        print(f"creating SDP's environment in {env} (pyspark[pipelines]=={version})", flush=True)
        try:
            subprocess.run(
                [sys.executable, "-m", "venv", str(env)],
                check=True,
                capture_output=True,
                text=True,
            )
            subprocess.run(
                [
                    str(python),
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    f"pyspark[pipelines]=={version}",
                    "pandas<3",  # pyspark 4.x warns under pandas 3
                ],
                check=True,
                capture_output=True,
                text=True,
                timeout=900,
            )
        except subprocess.CalledProcessError as e:
            shutil.rmtree(env, ignore_errors=True)
            return None, f"installing into {env} failed: {(e.stderr or '').strip()[-600:]}"
        except subprocess.TimeoutExpired:
            shutil.rmtree(env, ignore_errors=True)
            return None, f"installing into {env} took over 900 s"
    probe = subprocess.run(
        [
            str(python),
            "-c",
            "import grpc, grpc_status, google.rpc.status_pb2, zstandard, yaml, pandas, pyarrow\n"
            "import pyspark, pyspark.sql.connect.session\n"
            "print(pyspark.__version__)",
        ],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        return None, f"{python} cannot import SDP's packages: {probe.stderr.strip()[-600:]}"
    if probe.stdout.strip() != version:
        return None, f"{env} has pyspark {probe.stdout.strip()}, not {version}"
    if not (env / "bin" / "spark-pipelines").exists():
        return None, f"{env}/bin/spark-pipelines is missing"
    return env, f"{env} (pyspark {version})"


def sdp_conf(spark) -> dict[str, str]:
    """The settings of headwater's session that SDP's spec may carry: runtime SQL confs
    only, since SDP also applies them to every flow, where a static conf is an error."""
    keys = ("spark.sql.shuffle.partitions", "spark.sql.session.timeZone")
    return {key: str(spark.conf.get(key)) for key in keys}


def run_sdp(env: Path, project: Path, master: str, timeout: float) -> dict[str, float]:
    """``spark-pipelines run`` on ``project`` (its tables land in ``project/spark-warehouse``);
    the seconds from its "Creating dataflow graph" log line to "Run is COMPLETED" (the run
    proper), and in all (JVMs and Connect server started, session stopped).

    The Connect server is the client's local one (``--remote local[N]``: the same master as
    ours; ``--master`` is refused, and ``--conf`` does not reach that server). Its JVM gets
    headwater's driver settings (memory, GC, no console progress) through
    ``PYSPARK_SUBMIT_ARGS``, the SQL confs come from the spec (:func:`sdp_conf`), so the
    two differ in runner only."""
    python = str(env / "bin" / "python")
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SPARK_HOME", "PYTHONPATH", "VIRTUAL_ENV", "SPARK_REMOTE")
    }
    environ.update(
        PYSPARK_PYTHON=python,
        PYSPARK_DRIVER_PYTHON=python,
        PYTHONUNBUFFERED="1",
        PATH=f"{env / 'bin'}{os.pathsep}{environ.get('PATH', '')}",
        PYSPARK_SUBMIT_ARGS="--driver-memory 2g --conf spark.ui.enabled=false "
        "--conf spark.ui.showConsoleProgress=false "
        "--conf spark.driver.extraJavaOptions=-XX:+UseParallelGC pyspark-shell",
    )
    command = [
        str(env / "bin" / "spark-pipelines"),
        "run",
        "--spec",
        "spark-pipeline.yml",
        "--remote",
        master,
    ]
    stderr_path = project / "sdp-stderr.log"
    marks: dict[str, float] = {}
    lines: list[str] = []
    start = time.perf_counter()
    with open(stderr_path, "w") as stderr:
        proc = subprocess.Popen(
            command,
            cwd=project,
            env=environ,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        watchdog = threading.Timer(timeout, proc.kill)
        watchdog.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line)
                if "Creating dataflow graph" in line:
                    marks.setdefault("graph", time.perf_counter())
                elif "Run is COMPLETED" in line:
                    marks.setdefault("completed", time.perf_counter())
            returncode = proc.wait()
        finally:
            watchdog.cancel()
    total = time.perf_counter() - start
    if returncode != 0 or "graph" not in marks or "completed" not in marks:
        tail = "".join(lines[-15:]) + stderr_path.read_text()[-1500:]
        raise RuntimeError(f"spark-pipelines run failed (exit {returncode}):\n{tail}")
    return {
        "run_s": marks["completed"] - marks["graph"],
        "startup_s": marks["graph"] - start,
        "total_s": total,
    }


def sdp_first_update(
    spark, args: argparse.Namespace, run_dir: Path, landing: Path, ours_counts: dict
) -> dict:
    """SDP's first update on the landing files, ``--repeat`` times on fresh projects (best
    kept), when ``--sdp`` asks and its environment can be had; otherwise why not.

    SDP's row counts are compared with ours but a difference does not fail the run (it is
    SDP's answer, not ours): it is reported, with the rows the table's Parquet files hold
    on disk when read without the file sink's log (``_spark_metadata``)."""
    if not args.sdp:
        return {"skipped": "not requested (--sdp)"}
    env, why = sdp_environment(args)
    if env is None:
        print(f"SDP skipped: {why}", file=sys.stderr, flush=True)
        return {"skipped": why}
    timings, mismatches = [], {}
    for i in range(args.repeat):
        project = write_project(
            run_dir / f"sdp-{i}",
            f"bench_sdp_{i}",
            landing,
            PIPELINE_SOURCE.format(bronze=SDP_BRONZE),
            conf=sdp_conf(spark),
        )
        timings.append(run_sdp(env, project, args.master, args.sdp_timeout))
        warehouse = project / "spark-warehouse"
        for name in TABLES:
            got = spark.read.parquet(str(warehouse / name)).count()
            if got != ours_counts[name]:
                on_disk = spark.read.parquet(str(warehouse / name / "*.parquet")).count()
                mismatches[f"{name} (run {i})"] = {
                    "sdp": got,
                    "ours": ours_counts[name],
                    "sdp_files_on_disk": on_disk,
                }
    if mismatches:
        print(f"SDP's row counts differ from ours: {mismatches}", file=sys.stderr, flush=True)
    best = min(timings, key=lambda t: t["run_s"])
    return {"environment": why, **best, "runs": timings, "mismatches": mismatches}


# -- checks ----------------------------------------------------------------------------------


def table_shapes(spark, db: str) -> dict[str, tuple[int, tuple[str, ...]]]:
    """Each table's row count and column names."""
    shapes = {}
    for name in TABLES:
        df = spark.read.table(f"{db}.{name}")
        shapes[name] = (df.count(), tuple(df.columns))
    return shapes


def check_tables(what: str, spark, ours_db: str, hand_db: str, expected: dict) -> dict:
    """Ours and hand-written hold the same tables, row counts and columns; the streaming
    tables hold the rows the landing files make. Returns the row counts."""
    ours, hand = table_shapes(spark, ours_db), table_shapes(spark, hand_db)
    for name in TABLES:
        check(f"{what}, {name}", ours[name] == hand[name], {"ours": ours[name], "hand": hand[name]})
    for name, n in expected.items():
        check(f"{what}, {name} vs landing", ours[name][0] == n, {"ours": ours[name][0], "want": n})
    return {name: ours[name][0] for name in TABLES}


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


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    report = run_in_session(
        args,
        "headwater-bench-pipelines",
        "bench-pipelines-",
        run,
        versions=("pyspark", "pyarrow", "deltalake"),
    )
    write_report(report, format_report(report), args.json_out)
    return report


if __name__ == "__main__":
    main()
