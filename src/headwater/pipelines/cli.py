"""``headwater pipelines init | run | dry-run | report``: SDP's CLI, plus what it lacks.

Flags as the known system names its update kinds: ``--refresh a,b``,
``--full-refresh a,b``, ``--full-refresh-all``, and ``--continuous``. Ctrl-C or SIGTERM
stops a continuous update cleanly (each stream ends after its current micro-batch). The
exit code is non-zero when the update failed or its definitions are wrong. ``report``
writes one HTML file about the pipeline's recent updates, read from its event log (no
Spark needed). Errors that need no Spark (:mod:`.precheck`) are reported before Spark
starts; ``run --watch`` / ``dry-run --watch`` keep one session and run again on every save
(:mod:`.watch`).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from headwater.errors import PipelineError

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
        c.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
        c.add_argument("-v", "--verbose", action="store_true", help="Spark's logs on stderr")
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
    from headwater.pipelines.runner.interrupt import Interrupts
    from headwater.pipelines.runner.watch import Starting, develop

    interrupts = Interrupts()
    interrupts.install()
    logged = _quiet_spark(args.verbose)
    try:
        spec = load_spec(args.spec, _overrides(args.conf))
        if args.watch:
            if getattr(args, "continuous", False):
                raise SystemExit("--watch runs triggered updates: drop --continuous")
            # Spark starts in the background while the sources are checked, and stays.
            starting = Starting(f"pipeline {spec.name}", args.master, args.warehouse)
            interrupts.running = True  # Ctrl-C: stop the update, if one runs, and the loop
            update = functools.partial(one_update, args, interrupts)
            return develop(args.spec, _overrides(args.conf), starting, update, interrupts.stop)
        # Errors that need no Spark first (milliseconds): a JVM started before them would
        # outlive a failed command by seconds, holding its output open.
        precheck(spec)
        spark = Starting(f"pipeline {spec.name}", args.master, args.warehouse).wait()
        assert spark is not None
        interrupts.install()
        interrupts.running = True
        return one_update(args, interrupts, spec, spark)
    except PipelineError as e:
        print(f"error: {e}{_details(logged)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Spark's own handler, while the session was starting
        print("stopped before the update started.", file=sys.stderr)
        return interrupts.exit_code


def one_update(
    args: argparse.Namespace, interrupts: Interrupts, spec: PipelineSpec, spark: SparkSession
) -> int:
    """One update (or dry run) on a started session, its summary printed; the exit code."""
    from headwater import pipelines
    from headwater.pipelines.runner.progress import Printer, summary

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
    print(summary(result))
    if result.state == "CANCELED":
        return interrupts.exit_code
    return 0 if result.ok else 1


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


def _quiet_spark(verbose: bool) -> int:
    """Spark's error logs to a file, or to stderr with ``--verbose``; the file's size."""
    from headwater.session import VERBOSE_ENV, error_log_size

    if verbose:
        os.environ[VERBOSE_ENV] = "1"
    return error_log_size()


def _details(logged: int) -> str:
    """Where Spark's details of the error went, if it logged any since ``logged``."""
    from headwater.session import VERBOSE_ENV, error_log, error_log_size

    if os.environ.get(VERBOSE_ENV) == "1" or error_log_size() <= logged:
        return ""
    return f" (Spark's details: {error_log()}; --verbose shows them here)"


def _names(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [n.strip() for n in text.split(",") if n.strip()]


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
