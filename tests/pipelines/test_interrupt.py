"""Ctrl-C during ``headwater pipelines run``: a real process, a real terminal's signal (to
the whole process group), at several moments. The first SIGINT ends the streams after
their current micro-batch and the process exits within seconds; a second one ends it at
once; either way the exit code is the shell's 130 and an uninterrupted rerun leaves every
landed row exactly once in every table."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from deltalake import DeltaTable

from tests.conftest import REPO

HEADWATER = str(REPO / ".venv" / "bin" / "headwater")

# Each batch of ``silver`` runs a Python UDF that marks the batch as started (a file per
# row's batch) and takes about a second, so a signal can be aimed inside a batch.
PIPELINE = """
import os, time
from pyspark import pipelines as dp
from pyspark.sql import functions as F

marks = spark.conf.get("marks")

@F.udf("bigint")
def slow(i):
    open(os.path.join(marks, f"{i // 100}.started"), "a").close()
    time.sleep(0.01)
    return i

@dp.table
def bronze():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaHints", "id bigint, region string")
        .option("cloudFiles.maxFilesPerTrigger", "1")
        .load(spark.conf.get("landing"))
    )

@dp.table
def silver():
    return spark.readStream.table("bronze").select(slow("id").alias("id"), "region")
"""

ROWS = 100  # per file: ids file*100 .. file*100+99


def land(folder: Path, start: int, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(start, start + count):
        rows = [json.dumps({"id": f * ROWS + i, "region": "eu"}) for i in range(ROWS)]
        tmp = folder / f".{f}.tmp"
        tmp.write_text("\n".join(rows) + "\n")
        os.rename(tmp, folder / f"{f:04d}.json")


def project(tmp_path: Path) -> Path:
    root = tmp_path / "pipeline"
    (root / "transformations").mkdir(parents=True)
    (root / "transformations" / "p.py").write_text(PIPELINE)
    (tmp_path / "marks").mkdir()
    spec = {
        "name": "intr",
        "storage": str(tmp_path / "storage"),
        "database": "intr",
        "configuration": {"landing": str(tmp_path / "landing"), "marks": str(tmp_path / "marks")},
    }
    (root / "spark-pipeline.yml").write_text(yaml.safe_dump(spec))
    return root


def start(root: Path, tmp_path: Path, *extra: str) -> subprocess.Popen:
    args = ["pipelines", "run", "--master", "local[2]", "--warehouse", str(tmp_path / "wh")]
    return subprocess.Popen(
        [HEADWATER, *args, *extra],
        cwd=str(root),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )


def wait_for(predicate, timeout: float = 240.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def interrupt(proc: subprocess.Popen, times: int = 1, gap: float = 0.3) -> tuple[int, float, str]:
    """Ctrl-C (``times`` times); the exit code, the seconds from the last signal to the
    exit, and stderr. A process still alive 60 s later is killed and the test fails."""
    for i in range(times):
        if i:
            time.sleep(gap)
        os.killpg(proc.pid, signal.SIGINT)
    sent = time.monotonic()
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        pytest.fail(f"still running 60 s after Ctrl-C:\n{err[-3000:]}")
    return proc.returncode, time.monotonic() - sent, err


def ids(tmp_path: Path, table: str) -> list[int]:
    path = tmp_path / "wh" / "intr.db" / table
    if not (path / "_delta_log").is_dir():
        return []
    return sorted(DeltaTable(str(path)).to_pyarrow_table(columns=["id"])["id"].to_pylist())


def jvm_started(pid: int) -> bool:
    """Whether ``pid`` has started a child (Spark's JVM)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            return True
    return False


def started_batches(tmp_path: Path) -> int:
    return len(list((tmp_path / "marks").glob("*.started")))


@pytest.mark.slow
def test_ctrl_c_at_several_moments_exits_within_seconds_and_rerun_is_exactly_once(tmp_path):
    root = project(tmp_path)
    landing = tmp_path / "landing"
    land(landing, 0, 6)

    # 1. During start-up, before Spark is up: nothing to finish, the process ends at once.
    proc = start(root, tmp_path)
    wait_for(lambda: jvm_started(proc.pid))  # the handler is in place, Spark is starting
    code, seconds, err = interrupt(proc)
    assert code == 130 and seconds < 5, (code, seconds, err[-2000:])
    assert "stopped before the update started" in err

    # 2. Inside a micro-batch of silver: that batch finishes, then the process exits.
    proc = start(root, tmp_path)
    wait_for(lambda: started_batches(tmp_path) >= 1)
    code, seconds, err = interrupt(proc)
    assert code == 130 and seconds < 20, (code, seconds, err[-3000:])
    assert "StackOverflowError" not in err and "InterruptedException" not in err, err[-3000:]
    done = ids(tmp_path, "silver")
    assert done == sorted(set(done)) and len(done) % ROWS == 0, "a partial batch was written"

    # 3. Twice in a row, files still arriving: the second Ctrl-C ends the process at once.
    land(landing, 6, 4)
    before = started_batches(tmp_path)
    proc = start(root, tmp_path)
    wait_for(lambda: started_batches(tmp_path) > before)
    code, seconds, err = interrupt(proc, times=2)
    assert code == 130 and seconds < 5, (code, seconds, err[-3000:])
    assert "aborted" in err

    # 4. Continuous, between batches (a batch ran, the next trigger is seconds away).
    land(landing, 10, 2)
    before = started_batches(tmp_path)
    proc = start(root, tmp_path, "--continuous", "--trigger-interval", "6 seconds")
    wait_for(lambda: started_batches(tmp_path) > before)
    time.sleep(3.0)
    code, seconds, err = interrupt(proc)
    assert code == 0 and seconds < 20, (code, seconds, err[-3000:])
    assert "StackOverflowError" not in err, err[-3000:]

    # A rerun, uninterrupted, with more files arriving: every row once, none lost.
    land(landing, 12, 2)
    rerun = subprocess.run(
        [HEADWATER, "pipelines", "run", "--master", "local[2]", "--warehouse", str(tmp_path / "wh")],
        cwd=str(root), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr[-3000:]
    expected = list(range(14 * ROWS))
    assert ids(tmp_path, "bronze") == expected
    assert ids(tmp_path, "silver") == expected


def test_an_interruption_counts_as_a_stop_only_once_the_stop_was_sent():
    """A trigger that begins between the gate's last look and ``query.stop()`` ends with
    an interruption or a cancelled job: a stop, since its commit never happened. Before a
    stop was sent, the same text is a failure; a batch that refused to start always is."""
    from headwater.pipelines.runner.interrupt import STOP_MARKER, stopped_by_request

    interrupted = "py4j.Py4JException: Error while obtaining a new communication channel\n"
    interrupted += "Caused by: java.lang.InterruptedException\n\tat java.base/..."
    cancelled = "[SPARK_JOB_CANCELLED] Job 7 cancelled part of cancelled job group abc"
    assert stopped_by_request(interrupted, stop_was_sent=True)
    assert stopped_by_request(cancelled, stop_was_sent=True)
    assert not stopped_by_request(interrupted)
    assert not stopped_by_request("[DIVIDE_BY_ZERO] Division by zero.", stop_was_sent=True)
    assert stopped_by_request(f"Py4JJavaError: {STOP_MARKER}: the update is stopping")
