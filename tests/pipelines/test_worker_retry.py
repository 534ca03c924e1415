"""A Python worker that starts too late for Spark (it waits a fixed 10 s for the worker to
connect back) fails the flow with ``Python worker failed to connect back``: a failure of
the machine, not of the flow, retried like the known system retries it. Reproduced for
real: the interpreter Spark starts for the Auto Loader stream's source sleeps past the
timeout the first time only."""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap

import pytest

from headwater.pipelines.runner.retry import transient
from tests.conftest import run_python
from tests.pipelines.test_interrupt import land

PIPELINE = """
from pyspark import pipelines as dp

@dp.table
def bronze():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaHints", "id bigint, region string")
        .load(spark.conf.get("landing"))
    )
"""

CHILD = textwrap.dedent(
    """
    import json, sys, headwater
    from headwater import pipelines
    root, warehouse = sys.argv[1:3]
    spark = headwater.session(master="local[2]", warehouse=warehouse)
    result = pipelines.run(root, spark)
    retried = [str(e.error) for e in result.events if e.details.get("status") == "RETRYING"]
    rows = spark.table("slow.bronze").count() if result.ok else -1
    print("RESULT", json.dumps({"state": result.state, "retried": retried, "rows": rows}))
    """
)

# Sleeps past Spark's 10 s connect-back wait the first time the stream's source starts.
SLOW_PYTHON = """#!/bin/sh
case "$*" in
  *python_streaming_source_runner*) mkdir "{mark}" 2>/dev/null && sleep 14 ;;
esac
exec "{python}" "$@"
"""


@pytest.mark.slow
def test_a_python_worker_that_connects_back_late_is_retried(tmp_path):
    import yaml

    root = tmp_path / "pipeline"
    (root / "transformations").mkdir(parents=True)
    (root / "transformations" / "p.py").write_text(PIPELINE)
    spec = {
        "name": "slow",
        "storage": str(tmp_path / "storage"),
        "database": "slow",
        "configuration": {"landing": str(tmp_path / "landing")},
    }
    (root / "spark-pipeline.yml").write_text(yaml.safe_dump(spec))
    land(tmp_path / "landing", 0, 3)
    wrapper = tmp_path / "slow-python"
    wrapper.write_text(SLOW_PYTHON.format(mark=tmp_path / "slept", python=sys.executable))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)

    proc = run_python(
        CHILD, str(root), str(tmp_path / "wh"), env={"PYSPARK_PYTHON": str(wrapper)}, timeout=600
    )
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT"))
    got = json.loads(line[len("RESULT ") :])
    assert (tmp_path / "slept").is_dir()  # the first start was late, for real
    assert got["retried"], got  # the flow failed once ...
    assert "Python worker failed to connect back" in got["retried"][0]
    assert all(transient(RuntimeError(text)) for text in got["retried"])  # ... as Spark words it
    assert got["state"] == "COMPLETED" and got["rows"] == 300, got  # ... and then ran


def test_only_machine_failures_are_transient():
    assert transient(RuntimeError("Timed out while waiting for the Python worker to connect back"))
    wrapped = RuntimeError("[STREAM_FAILED] Query terminated")
    wrapped.__cause__ = OSError("Python worker failed to connect back.")
    assert transient(wrapped)
    assert not transient(RuntimeError("[DIVIDE_BY_ZERO] Division by zero."))
    assert not transient(ValueError("Python worker exited unexpectedly (crashed)"))
    assert os.environ.get("PYSPARK_PYTHON", "") != "slow"  # the wrapper never leaks here
