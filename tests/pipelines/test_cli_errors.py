"""An error in a pipeline's definitions, from a shell: one clear line on stderr, not the
KB of JSON and Java stack trace PySpark logs for every error with a query context; the
details go to a log file the line names (or stay on stderr with ``--verbose``)."""

from __future__ import annotations

import os
import subprocess
import textwrap

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


def pipeline(tmp_path):
    root = tmp_path / "pipeline"
    (root / "transformations").mkdir(parents=True)
    (root / "transformations" / "t.py").write_text(PIPELINE)
    spec = {"name": "errs", "storage": str(tmp_path / "storage"), "database": "errs"}
    (root / "spark-pipeline.yml").write_text(yaml.safe_dump(spec))
    return root


def cli(root, tmp_path, *extra):
    env = {**os.environ, "HEADWATER_ERROR_LOG": str(tmp_path / "spark-errors.log")}
    return subprocess.run(
        [HEADWATER, "pipelines", "dry-run", "--master", "local[1]", *extra],
        cwd=str(root), capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip


@pytest.mark.slow
def test_a_definition_error_is_one_line_on_stderr_and_its_details_in_the_log(tmp_path):
    root = pipeline(tmp_path)
    done = cli(root, tmp_path)
    assert done.returncode == 2
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
