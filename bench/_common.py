"""Helpers shared by the benchmark scripts: options, environment, timing, report and run directory.

The scripts run as ``python bench/<script>.py``, so this directory is on ``sys.path`` and they
import it as ``from _common import ...``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import importlib
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

BENCH_DIR = Path(__file__).resolve().parent


# -- options ---------------------------------------------------------------------------------


def parse_bench_args(
    p: argparse.ArgumentParser,
    argv: list[str] | None,
    at_least_one: Sequence[str] = (),
    repeat: int = 3,
) -> argparse.Namespace:
    """Add the shared options (--repeat, --master, --workdir, --keep, --json) after the script's
    own, parse ``argv``, and require each flag in ``at_least_one``, then --repeat, to be >= 1.

    ``--repeat`` defaults to ``repeat`` (3): a single run's time carries the JIT, GC and the
    machine's other load, and the best of a few is what the figures compare. A quick check
    (the smoke tests) passes ``--repeat 1``."""
    p.add_argument(
        "--repeat",
        type=int,
        default=repeat,
        help=f"runs per measurement; best is kept (default {repeat})",
    )
    p.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    p.add_argument(
        "--workdir",
        default=None,
        help="where the run directory is created (default: bench/data/); "
        "the run directory is removed at the end unless --keep",
    )
    p.add_argument("--keep", action="store_true", help="keep the run directory")
    p.add_argument("--json", dest="json_out", default=None, help="also write results to this file")
    args = p.parse_args(argv)
    for flag in (*at_least_one, "--repeat"):
        if getattr(args, flag.lstrip("-").replace("-", "_")) < 1:
            p.error(f"{flag} must be at least 1")
    return args


# -- environment -----------------------------------------------------------------------------


def _mem_total() -> str:
    """Total RAM from /proc/meminfo, e.g. ``"7.7 GiB"``; ``"unknown"`` where there is none."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    kib = int(line.split()[1])
                    return f"{kib / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def environment(
    spark: SparkSession, versions: Sequence[str] = ("pyspark", "deltalake")
) -> dict[str, object]:
    """Date, machine, Python and the ``__version__`` of each module in ``versions``, in order."""
    return {
        "date_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "mem_total": _mem_total(),
        "python": platform.python_version(),
        **{name: importlib.import_module(name).__version__ for name in versions},
        "spark_master": spark.sparkContext.master,
    }


# -- timing and checks -----------------------------------------------------------------------


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    """Seconds ``fn()`` took, and its result."""
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def best_of(
    repeat: int,
    ours: Callable[[int], object],
    native: Callable[[int], object],
    prepare: Callable[[int], None] | None = None,
) -> tuple[float, float, dict[str, list[float]], dict[str, object]]:
    """Run both sides ``repeat`` times (order alternating, ``prepare(i)`` untimed before each
    pair); best times, every time, and the results of the last pair."""
    times: dict[str, list[float]] = {"ours": [], "native": []}
    results: dict[str, object] = {}
    for i in range(repeat):
        if prepare is not None:
            prepare(i)
        order = [("ours", ours), ("native", native)]
        if i % 2:
            order.reverse()
        for side, fn in order:
            seconds, results[side] = timed(lambda fn=fn, i=i: fn(i))
            times[side].append(seconds)
    return min(times["ours"]), min(times["native"]), times, results


def check(what: str, ok: bool, detail: object) -> None:
    """Fail the run when a benchmark result is wrong."""
    if not ok:
        raise RuntimeError(f"benchmark result mismatch in {what}: {detail}")


# -- report ----------------------------------------------------------------------------------


def markdown_table(
    table: Sequence[Sequence[str]], right_aligned: Collection[int] = (1, 2, 3)
) -> list[str]:
    """The lines of a markdown table; ``table[0]`` is the header. Columns in ``right_aligned``
    are padded on the left, the others on the right."""
    widths = [max(len(row[c]) for row in table) for c in range(len(table[0]))]

    def fmt_row(row: Sequence[str]) -> str:
        cells = [
            cell.rjust(widths[c]) if c in right_aligned else cell.ljust(widths[c])
            for c, cell in enumerate(row)
        ]
        return "| " + " | ".join(cells) + " |"

    lines = [fmt_row(table[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    lines.extend(fmt_row(row) for row in table[1:])
    return lines


def header_lines(env: dict, versions: Sequence[str] = ("pyspark", "deltalake")) -> list[str]:
    """The date, machine and versions lines a report starts with."""
    listed = ", ".join(f"{name} {env[name]}" for name in versions)
    return [
        f"date:      {env['date_utc']}",
        f"machine:   {env['platform']}, {env['cpu_count']} CPUs, {env['mem_total']} RAM",
        f"versions:  {listed}, python {env['python']}",
    ]


def ratio_table(results: Iterable[dict], first: str = "measurement") -> list[str]:
    """The markdown table of measurements: name, ours, native, ratio, target (missed or
    not; ``-`` for a measurement reported without one)."""
    table = [(first, "ours (s)", "native (s)", "ratio", "target")]
    for r in results:
        table.append(
            (
                r["name"],
                f"{r['ours_s']:.3f}",
                f"{r['native_s']:.3f}",
                f"{r['ratio']:.2f}",
                "-"
                if r["target"] is None
                else f"{r['target']:.2f}" + ("" if r["meets_target"] else "  (missed)"),
            )
        )
    return markdown_table(table)


def write_report(report: dict, text: str, json_out: str | None) -> None:
    """Print the report ``text``; also write ``report`` as JSON to ``json_out`` if given."""
    print(text, flush=True)
    if json_out:
        Path(json_out).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")


# -- run directory and session ---------------------------------------------------------------


def make_run_dir(workdir: str | None, prefix: str) -> Path:
    """A fresh ``<prefix>*`` directory under ``workdir`` (default: bench/data/)."""
    base = Path(workdir) if workdir else BENCH_DIR / "data"
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base)).resolve()


def remove_run_dir(run_dir: Path, keep: bool) -> None:
    """Remove the run directory, or with ``keep`` say on stderr where it is."""
    if keep:
        print(f"kept {run_dir}", file=sys.stderr)
    else:
        shutil.rmtree(run_dir, ignore_errors=True)


@contextlib.contextmanager
def bench_session(
    args: argparse.Namespace,
    app_name: str,
    run_dir: Path,
    spark: SparkSession | None = None,
    conf: dict[str, str] | None = None,
    s3_connector: bool | None = None,
) -> Iterator[SparkSession]:
    """The session a bench runs in. ``spark`` given (a test suite's, so a smoke test starts
    no JVM of its own): that one, left running, and as it was afterwards (:func:`restored`).
    Else one built here on ``--master`` with ``conf``, its managed tables under ``run_dir``,
    and stopped at the end."""
    if spark is not None:
        with restored(spark):
            yield spark
        return
    import headwater

    built = headwater.session(
        app_name,
        master=args.master,
        warehouse=str(run_dir / "warehouse"),
        conf=conf,
        s3_connector=s3_connector,
    )
    try:
        yield built
    finally:
        built.stop()


def _catalog_objects(spark: SparkSession) -> tuple[set[str], set[tuple[str, str, str]]]:
    """The databases, and the (database, name, type) of every table, view and temporary view,
    of the session's catalog."""
    databases = {db.name for db in spark.catalog.listDatabases()}
    objects = {
        ("" if t.isTemporary else db, t.name, "TEMPORARY" if t.isTemporary else t.tableType)
        for db in databases
        for t in spark.catalog.listTables(db)
    }
    return databases, objects


@contextlib.contextmanager
def restored(spark: SparkSession) -> Iterator[None]:
    """Put a shared session back as it was once the bench is done, so the tests that run
    after it in the same process see what they had: runtime confs the bench (or a pipeline's
    configuration) set or changed, the current database, streams still running, and the
    databases, tables and views it created (dropped, managed tables' data too)."""
    confs = dict(spark.conf.getAll)
    database = spark.catalog.currentDatabase()
    databases, objects = _catalog_objects(spark)
    streams = {query.id for query in spark.streams.active}
    try:
        yield
    finally:
        for query in spark.streams.active:
            if query.id not in streams:
                query.stop()
        spark.catalog.setCurrentDatabase(database)
        now_databases, now_objects = _catalog_objects(spark)
        for db, name, kind in sorted(now_objects - objects):
            if kind == "TEMPORARY":
                spark.catalog.dropTempView(name)
            else:
                what = "VIEW" if kind == "VIEW" else "TABLE"
                spark.sql(f"DROP {what} IF EXISTS `{db}`.`{name}`")
        for db in sorted(now_databases - databases):
            spark.sql(f"DROP DATABASE IF EXISTS `{db}` CASCADE")
        now_confs = dict(spark.conf.getAll)
        for key in now_confs.keys() - confs.keys():
            spark.conf.unset(key)
        for key, value in confs.items():
            if now_confs.get(key) != value:
                spark.conf.set(key, value)


def run_in_session(
    args: argparse.Namespace,
    app_name: str,
    prefix: str,
    run: Callable[[SparkSession, argparse.Namespace, Path], dict],
    versions: Sequence[str] = ("pyspark", "deltalake"),
    spark: SparkSession | None = None,
) -> dict:
    """``run(spark, args, run_dir)`` in a new run directory and the session of
    :func:`bench_session` (``spark``, or one built here), plus the environment; the run
    directory is removed (unless --keep) either way."""
    run_dir = make_run_dir(args.workdir, prefix)
    try:
        with bench_session(args, app_name, run_dir, spark) as session:
            report = run(session, args, run_dir)
            report["environment"] = environment(session, versions)
    finally:
        remove_run_dir(run_dir, args.keep)
    return report


def run_and_report(
    args: argparse.Namespace,
    name: str,
    run: Callable[[SparkSession, argparse.Namespace, Path], dict],
    format_report: Callable[[dict], str],
    versions: Sequence[str] = ("pyspark", "pyarrow", "deltalake"),
    spark: SparkSession | None = None,
) -> dict:
    """What a bench's ``main`` does: ``run`` in a run directory ``<name>-*`` and a session
    named ``name`` (:func:`run_in_session`), then its report printed and written to
    ``--json``. ``spark``: a running session to run in (a smoke test's), left running; else
    one is built here (``--master``) and stopped."""
    report = run_in_session(args, name, f"{name}-", run, versions, spark)
    write_report(report, format_report(report), args.json_out)
    return report
