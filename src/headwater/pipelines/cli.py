"""``headwater pipelines init | run | dry-run | report``: SDP's CLI, plus what it lacks.

Flags as the known system names its update kinds: ``--refresh a,b``,
``--full-refresh a,b``, ``--full-refresh-all``, and ``--continuous``. Ctrl-C or SIGTERM
stops a continuous update cleanly (each stream ends after its current micro-batch). The
exit code is non-zero when the update failed (1) or its definitions or settings are
wrong (2), with one line on stderr saying what and where the stack traces are
(:class:`RunLog`). Spark starts with the ``spark.*`` settings of the configuration
(``--conf``, the spec's), ``--jars`` and ``--packages``, checked first. ``report``
writes one HTML file about the pipeline's recent updates, read from its event log (no
Spark needed). Errors that need no Spark (:mod:`.precheck`) are reported before Spark
starts; ``run --watch`` / ``dry-run --watch`` keep one session and run again on every save
(:mod:`.watch`).
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import sys
import threading
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from headwater.errors import HeadwaterError, PipelineError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from headwater.pipelines.define.spec import PipelineSpec
    from headwater.pipelines.runner.interrupt import Interrupts

SPEC = """name: {name}
storage: pipeline-storage
database: {database}
libraries:
  - glob:
      include: transformations/**
"""

PYTHON_EXAMPLE = """from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.materialized_view
def numbers():
    return spark.range(10).withColumn("even", F.col("id") % 2 == 0)
"""

SQL_EXAMPLE = """CREATE OR REFRESH MATERIALIZED VIEW even_numbers (
  CONSTRAINT non_negative EXPECT (id >= 0) ON VIOLATION DROP ROW
) AS SELECT id FROM numbers WHERE even
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("pipelines", help="declarative pipelines: init, run, dry-run, report")
    cmds = p.add_subparsers(dest="pipelines_command", required=True)
    init = cmds.add_parser("init", help="create a pipeline project")
    init.add_argument("name")
    for name, help_text in (("run", "run an update"), ("dry-run", "analyse, write nothing")):
        c = cmds.add_parser(name, help=help_text)
        c.add_argument("--spec", default=".", help="the spec file or its directory (default .)")
        c.add_argument("--warehouse", default=None, help="where the tables are kept")
        c.add_argument("--master", default=None, help="Spark master (default local[*])")
        c.add_argument(
            "--conf",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="a setting of the update (spark.* ones also when Spark starts: spark.jars, "
            "spark.driver.memory...)",
        )
        c.add_argument(
            "--jars", default=None, help="jars for Spark's classpath (a,b), as spark-submit's"
        )
        c.add_argument(
            "--packages", default=None, help="Maven coordinates g:a:v (a,b), as spark-submit's"
        )
        c.add_argument(
            "-v", "--verbose", action="store_true", help="stack traces on stderr, not in a log"
        )
        c.add_argument("--watch", action="store_true", help="keep Spark warm; rerun on save")
        if name == "run":
            c.add_argument("--refresh", default=None, help="refresh only these datasets (a,b)")
            c.add_argument("--full-refresh", default="", help="clear and reprocess these (a,b)")
            c.add_argument("--full-refresh-all", action="store_true")
            c.add_argument("--continuous", action="store_true", help="keep running")
            c.add_argument("--trigger-interval", default="5 seconds")
            c.add_argument("--max-retries", type=int, default=0)
    report = cmds.add_parser("report", help="write an HTML report of the recent updates")
    report.add_argument("--spec", default=".", help="the spec file or its directory (default .)")
    report.add_argument("--storage", default=None, help="the pipeline's storage (default: spec's)")
    report.add_argument("-o", "--output", default="pipeline-report.html", help="the HTML file")
    report.add_argument("--updates", type=int, default=10, help="updates in the trends")


def main(args: argparse.Namespace) -> int:
    if args.pipelines_command == "init":
        return init(args.name)
    if args.pipelines_command == "report":
        return report(args.spec, args.storage, args.output, args.updates)
    from headwater.pipelines.define.spec import load_spec
    from headwater.pipelines.graph.precheck import precheck
    from headwater.pipelines.runner.failures import one_line
    from headwater.pipelines.runner.interrupt import Interrupts
    from headwater.pipelines.runner.watch import Starting, develop
    from headwater.session import check_start_settings

    interrupts = Interrupts()
    interrupts.install()
    log = RunLog(args.verbose)
    try:
        spec = load_spec(args.spec, _overrides(args.conf))
        log.under(spec, writes=args.pipelines_command == "run")
        # Settings Spark reads only as it starts: given to the session, checked first.
        conf = start_settings(spec.configuration, args.jars, args.packages)
        check_start_settings(conf)
        name = f"pipeline {spec.name}"
        if args.watch:
            if getattr(args, "continuous", False):
                raise SystemExit("--watch runs triggered updates: drop --continuous")
            # Spark starts in the background while the sources are checked, and stays.
            starting = Starting(name, args.master, args.warehouse, conf)
            interrupts.running = True  # Ctrl-C: stop the update, if one runs, and the loop
            update = functools.partial(one_update, args, interrupts, log)
            return develop(args.spec, _overrides(args.conf), starting, update, interrupts.stop)
        # Errors that need no Spark first (milliseconds): a JVM started before them would
        # outlive a failed command by seconds, holding its output open.
        precheck(spec)
        spark = Starting(name, args.master, args.warehouse, conf).wait()
        assert spark is not None
        interrupts.install()
        interrupts.running = True
        return one_update(args, interrupts, log, spec, spark)
    except HeadwaterError as e:  # the definitions or the settings are wrong
        print(f"error: {e}{log.where()}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Spark's own handler, while the session was starting
        print("stopped before the update started.", file=sys.stderr)
        return interrupts.exit_code
    except Exception as e:  # anything else: its stack trace in the log, one line here
        log.record(e)
        print(f"error: {one_line(e)}{log.where()}", file=sys.stderr)
        return 1


def one_update(
    args: argparse.Namespace,
    interrupts: Interrupts,
    log: RunLog,
    spec: PipelineSpec,
    spark: SparkSession,
) -> int:
    """One update (or dry run) on a started session, its summary printed (a failure also
    as one line on stderr, its stack traces in the run's log); the exit code."""
    from headwater import pipelines
    from headwater.pipelines.runner.progress import Printer, failure_line, summary

    log.route(spark)
    printer = Printer()
    if args.pipelines_command == "dry-run":
        result = pipelines.run(spec, spark, dry_run=True, listeners=[printer])
        print(result.graph.describe())
        return 0
    result = pipelines.run(
        spec,
        spark,
        refresh=_names(args.refresh),
        full_refresh=_names(args.full_refresh) or (),
        full_refresh_all=args.full_refresh_all,
        continuous=args.continuous,
        trigger_interval=args.trigger_interval,
        max_retries=args.max_retries,
        stop=interrupts.stop,
        listeners=[printer],
    )
    print(summary(result), flush=True)
    if result.state == "CANCELED":
        return interrupts.exit_code
    failed = failure_line(result)
    if failed is None:
        return 0
    for run in result.failed():
        if run.error is not None:
            log.record(run.error, f"flow '{run.name}' failed")
    print(f"error: {failed}{log.where()}", file=sys.stderr, flush=True)
    return 1


def init(name: str) -> int:
    root = Path(name)
    if root.exists():
        print(f"error: {root} already exists; choose another name.", file=sys.stderr)
        return 2
    (root / "transformations").mkdir(parents=True)
    database = "".join(c if c.isalnum() else "_" for c in root.name.lower())
    (root / "spark-pipeline.yml").write_text(SPEC.format(name=root.name, database=database))
    (root / "transformations" / "numbers.py").write_text(PYTHON_EXAMPLE)
    (root / "transformations" / "even_numbers.sql").write_text(SQL_EXAMPLE)
    print(f"Created pipeline '{root.name}'. Run it: cd {name} && headwater pipelines run")
    return 0


def report(spec: str, storage: str | None, output: str, updates: int) -> int:
    from headwater.pipelines.define.spec import load_spec
    from headwater.pipelines.report.page import write_report

    try:
        written = write_report(storage or load_spec(spec).storage_path, output, updates=updates)
    except PipelineError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"Wrote {written}: open it in a browser (it needs no network).")
    return 0


class RunLog:
    """Where a command's stack traces go: the JVM's and PySpark's error logs (hundreds of
    lines for one failed stream), the Python traceback of each failed flow and of anything
    unexpected. A file, ``<storage>/system/logs/run-<time>-<pid>.log`` (``$HEADWATER_ERROR_LOG``
    when set; a dry run, or storage on an object store, the temporary directory's
    ``headwater-<uid>.log``), named at the end of the one line the command prints on
    stderr; with ``--verbose``, stderr itself."""

    def __init__(self, verbose: bool) -> None:
        from headwater.session import VERBOSE_ENV, error_log

        self.verbose = verbose
        self.path = error_log()
        self.size = self.written()  # (an earlier command's lines are not this one's)
        self.routed = False
        if verbose:
            os.environ[VERBOSE_ENV] = "1"

    def under(self, spec: PipelineSpec, writes: bool) -> None:
        """This run's file, for ``spec``; PySpark's error logs go there too (the session
        reads ``$HEADWATER_ERROR_LOG`` as it starts)."""
        from headwater import storage
        from headwater.pipelines.layout.folders import Layout
        from headwater.session import ERROR_LOG_ENV

        if (
            writes
            and not os.environ.get(ERROR_LOG_ENV)
            and not storage.is_remote(spec.storage_path)
        ):
            logs = Layout(spec.storage_path).logs
            storage.make_dir(logs)
            stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
            self.path = storage.join(logs, f"run-{stamp}-{os.getpid()}.log")
            os.environ[ERROR_LOG_ENV] = self.path
        self.size = self.written()

    def route(self, spark: SparkSession) -> None:
        """Spark's log and failing threads to the file from now on (once)."""
        from headwater.session import spark_logs_to

        if self.verbose or self.routed:
            return
        spark_logs_to(spark, self.path)
        threading.excepthook = self.thread_failed
        self.routed = True

    def thread_failed(self, failure: threading.ExceptHookArgs) -> None:
        if failure.exc_value is not None and failure.exc_type is not SystemExit:
            name = failure.thread.name if failure.thread else "a thread"
            self.record(failure.exc_value, f"{name} failed")

    def record(self, error: BaseException, what: str = "failed") -> None:
        """``error``'s stack trace (its causes' too) in the file, or on stderr (verbose)."""
        logger = logging.getLogger("headwater.pipelines.cli")
        logger.propagate = False
        if not logger.handlers:
            handler: logging.Handler = (
                logging.StreamHandler() if self.verbose else logging.FileHandler(self.path)
            )
            handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
            logger.addHandler(handler)
        logger.error(what, exc_info=(type(error), error, error.__traceback__))

    def written(self) -> int:
        from headwater import storage

        found = storage.stat(self.path)
        return int(found.size or 0) if found is not None else 0

    def where(self) -> str:
        """Where this run's stack traces are, if it wrote any (nothing with --verbose)."""
        if self.verbose or self.written() <= self.size:
            return ""
        return f" (stack traces: {self.path}; --verbose shows them here)"


def _names(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [n.strip() for n in text.split(",") if n.strip()]


def start_settings(
    configuration: Mapping[str, str], jars: str | None, packages: str | None
) -> dict[str, str]:
    """The Spark settings (``spark.*``) of the update's configuration (the spec's, and
    ``--conf``'s), with ``--jars`` and ``--packages``: the session starts with them, as
    static settings (the classpath, memory) apply only then."""
    conf = {k: v for k, v in configuration.items() if k.startswith("spark.")}
    for key, given in (("spark.jars", jars), ("spark.jars.packages", packages)):
        if given:
            conf[key] = ",".join(v for v in (conf.get(key), given) if v)
    return conf


def _overrides(confs: list[str]) -> dict[str, Any]:
    if not confs:
        return {}
    pairs = {}
    for item in confs:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--conf takes KEY=VALUE, not '{item}'")
        pairs[key.strip()] = value.strip()
    return {"configuration": pairs}
