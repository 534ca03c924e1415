"""Errors from a shell: one clear line on stderr, not the KB of JSON and Java stack trace
PySpark logs for every error with a query context, nor the hundreds of lines of Java and
Python stack traces Spark logs for a failed task or stream; the traces go to a log file the
line names (under the pipeline's storage for an update), or stay on stderr with
``--verbose``. Static Spark settings given on the command line apply as Spark starts, and
a bad one is refused before it starts."""

from __future__ import annotations

import os
import re
import subprocess
import textwrap
import time
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, run_python

HEADWATER = str(REPO / ".venv" / "bin" / "headwater")

PIPELINE = """from pyspark import pipelines as dp


@dp.materialized_view
@dp.expect("positive", "amount > 0")
def t():
    return spark.range(3)
"""


def pipeline(tmp_path, source=PIPELINE, landing=False, configuration=None):
    root = tmp_path / "pipeline"
    (root / "transformations").mkdir(parents=True)
    (root / "transformations" / "t.py").write_text(source)
    spec = {"name": "errs", "storage": str(tmp_path / "storage"), "database": "errs"}
    spec["configuration"] = dict(configuration or {})
    if landing:
        (tmp_path / "landing").mkdir()
        (tmp_path / "landing" / "1.json").write_text(
            '{"id": 1, "amount": 10}\n{"id": 2, "amount": -5}\n'
        )
        spec["configuration"]["landing"] = str(tmp_path / "landing")
    (root / "spark-pipeline.yml").write_text(yaml.safe_dump(spec))
    return root


def cli(root, tmp_path, *extra, command="dry-run", error_log=True):
    env = {k: v for k, v in os.environ.items() if k != "HEADWATER_ERROR_LOG"}
    if error_log:
        env["HEADWATER_ERROR_LOG"] = str(tmp_path / "spark-errors.log")
    return subprocess.run(
        [HEADWATER, "pipelines", command, "--master", "local[1]", *extra],
        cwd=str(root), capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip


# What the JVM and Spark print on stderr while the session starts, before headwater sets
# Spark's log level to ERROR: the JVM's note on incubator modules, log4j's profile (twice:
# spark-submit's launcher, then the driver), Spark's WARN lines (this host's loopback
# address, no native Hadoop library) and its note on the log level. A successful run
# shows them too; nothing follows them but the command's own lines.
START_UP = re.compile(
    r"WARNING: Using incubator modules|Using Spark's default log4j profile|"
    r"Setting default log level|To adjust logging level|\d\d/\d\d/\d\d \d\d:\d\d:\d\d WARN "
)


def after_start_up(stderr: str) -> list[str]:
    """stderr's non-empty lines but Spark's start-up lines, which must all come first."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    own = [i for i, line in enumerate(lines) if not START_UP.match(line)]
    if own:  # nothing of Spark's (a WARN line) after the command's first own line
        assert len(own) == len(lines) - own[0], stderr[-3000:]
    return [lines[i] for i in own]


@pytest.mark.slow
def test_a_definition_error_is_one_line_on_stderr_and_its_details_in_the_log(tmp_path):
    root = pipeline(tmp_path)
    done = cli(root, tmp_path)
    assert done.returncode == 2
    assert len(after_start_up(done.stderr)) == 1, done.stderr
    errors = [x for x in done.stderr.splitlines() if x.startswith("error: ")]
    assert len(errors) == 1, done.stderr[-3000:]
    assert "[PIPELINE_EXPECTATION_UNKNOWN_COLUMN]" in errors[0] and "t.py:" in errors[0]
    assert str(tmp_path / "spark-errors.log") in errors[0]  # where the details are
    assert "SQLQueryContextLogger" not in done.stderr and "at org.apache" not in done.stderr
    assert len(done.stderr) < 2000, done.stderr  # Spark's start-up notices, then the line
    log = (tmp_path / "spark-errors.log").read_text()
    assert "SQLQueryContextLogger" in log and "UNRESOLVED_COLUMN" in log

    loud = cli(root, tmp_path, "--verbose")
    assert loud.returncode == 2
    assert "SQLQueryContextLogger" in loud.stderr  # asked for


FAILING = """from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.table
def raw():
    return (
        spark.readStream.format("cloudFiles").option("cloudFiles.format", "json")
        .option("cloudFiles.schemaHints", "id bigint, amount bigint").load(spark.conf.get("landing"))
    )


@dp.table
@dp.expect_or_fail("positive", "amount > 0")
def checked():  # fails an expectation in a stream
    return spark.readStream.table("raw")


@dp.table
def divided():  # a streaming flow whose task fails
    return spark.readStream.table("raw").select((F.col("amount") / 0).alias("x"))


@dp.materialized_view
def boom():  # a materialized view whose refresh fails
    boom = F.when(F.col("amount") > 100, F.lit(1)).otherwise(F.raise_error(F.lit("boom")))
    return spark.read.table("raw").select(boom.alias("y"))
"""


@pytest.mark.slow
def test_a_failed_update_is_one_line_on_stderr_and_its_traces_in_a_log_under_storage(tmp_path):
    root = pipeline(tmp_path, FAILING, landing=True)
    done = cli(root, tmp_path, command="run", error_log=False)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    (line,) = after_start_up(done.stderr)
    assert line.startswith("error: update ") and "of pipeline 'errs' FAILED: " in line
    for flow, error in [
        ("checked", "[EXPECTATION_VIOLATION] Flow 'checked' failed: expectation 'positive'"),
        ("divided", "[DIVIDE_BY_ZERO] Division by zero. Use `try_divide`"),
        ("boom", "[USER_RAISED_EXCEPTION] boom"),
    ]:
        assert f"flow '{flow}': {error}" in line, line
    log = re.search(r"\(stack traces: (\S+\.log); --verbose shows them here\)$", line)
    assert log and log.group(1).startswith(str(tmp_path / "storage" / "system" / "logs")), line
    traces = Path(log.group(1)).read_text()
    assert "ERROR MicroBatchExecution" in traces and "at org.apache.spark" in traces
    assert "flow 'divided' failed" in traces and "Traceback (most recent call last)" in traces
    assert "Traceback" not in done.stdout  # the progress lines are one line each too
    assert "divided                          FAILED      0 rows  [DIVIDE_BY_ZERO]" in done.stdout


def small_jar(path):
    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    return str(path)


SETTINGS = """from pyspark import pipelines as dp


@dp.materialized_view
def settings():
    conf = spark.sparkContext.getConf()
    row = (conf.get("spark.jars", ""), conf.get("spark.driver.memory", ""))
    return spark.createDataFrame([row], "jars string, memory string")
"""


@pytest.mark.slow
def test_static_settings_on_the_command_line_apply_as_spark_starts(tmp_path):
    root = pipeline(tmp_path, SETTINGS, configuration={"spark.driver.memory": "1536m"})
    one, two = small_jar(tmp_path / "one.jar"), small_jar(tmp_path / "two.jar")
    done = cli(root, tmp_path, "--warehouse", "wh", "--conf", f"spark.jars={one}", "--jars",
               two, command="run")  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Using Spark's default log4j profile" in done.stderr  # a success keeps the banner
    assert after_start_up(done.stderr) == []
    from deltalake import DeltaTable

    from headwater import storage

    (row,) = DeltaTable(str(root / "wh" / "errs.db" / "settings")).to_pyarrow_table().to_pylist()
    assert {one, two} <= {storage.normalize(jar) for jar in row["jars"].split(",")}, row
    assert row["memory"] == "1536m"  # the spec's configuration, as the JVM started

    start = time.monotonic()
    bad = cli(root, tmp_path, "--conf", f"spark.jars={tmp_path / 'missing.jar'}", command="run")
    assert bad.returncode == 2
    assert after_start_up(bad.stderr) == [
        f"error: [INVALID_SPARK_SETTING] spark.jars names {tmp_path / 'missing.jar'}, which does "
        "not exist: give the path of a jar file (comma-separated for several)."
    ]
    assert "log4j" not in bad.stderr and time.monotonic() - start < 20  # Spark never started


def test_a_caught_error_in_a_session_prints_nothing(tmp_path):
    code = textwrap.dedent(
        """
        import headwater
        spark = headwater.session(master="local[1]", warehouse=__import__("sys").argv[1])
        try:
            spark.sql("SELECT nope FROM range(1)").collect()
        except Exception as e:
            print("caught", type(e).__name__)
        """
    )
    env = {"HEADWATER_ERROR_LOG": str(tmp_path / "spark-errors.log")}
    done = run_python(code, str(tmp_path / "wh"), env=env)
    assert "caught AnalysisException" in done.stdout
    assert "SQLQueryContextLogger" not in done.stderr, done.stderr[-3000:]
    assert "UNRESOLVED_COLUMN" in (tmp_path / "spark-errors.log").read_text()
