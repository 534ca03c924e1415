"""A successful ``headwater pipelines run`` on delta-spark shows the user only what concerns
them: headwater's progress and summary, and Spark's start-up banner. Not Derby's banner or a
``FileNotFoundException`` for its log in a warehouse not made yet (the first run), nor the
Hive metastore's ``ERROR HiveAlterHandler`` at each materialized view refresh after the
first (the second run). A real process, twice, as users run it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

PIPELINE = """
from pyspark import pipelines as dp
from pyspark.sql.functions import col, expr


@dp.table(name="users")
def users():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .schema("userId bigint, name string, city string, operation string, sequenceNum bigint")
        .load(spark.conf.get("source_dir"))
    )


@dp.materialized_view(name="cities")
def cities():
    return spark.read.table("users").groupBy("city").count()


dp.create_streaming_table("current_users")
dp.create_auto_cdc_flow(
    target="current_users",
    source="users",
    keys=["userId"],
    sequence_by=col("sequenceNum"),
    apply_as_deletes=expr("operation = 'DELETE'"),
    except_column_list=["operation", "sequenceNum"],
)
"""

SPEC = """name: quiet
storage: storage
database: quiet
libraries:
  - glob:
      include: transformations/**
configuration:
  source_dir: {source}
"""

# Spark's start-up banner: the JVM's, log4j's default profile, the host's address (on a
# machine whose name resolves to a loopback address), Hadoop's native library.
_STAMP = r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d"
BANNER = (
    r"WARNING: Using incubator modules: jdk\.incubator\.vector",
    _STAMP + r" WARN Utils: Your hostname, \S+, resolves to a loopback address: \S+; using "
    r"\S+ instead \(on interface \S+\)",
    _STAMP + r" WARN Utils: Set SPARK_LOCAL_IP if you need to bind to another address",
    r"Using Spark's default log4j profile: org/apache/spark/log4j2-defaults\.properties",
    r'Setting default log level to "WARN"\.',
    r"To adjust logging level use sc\.setLogLevel\(newLevel\)\. For SparkR, use "
    r"setLogLevel\(newLevel\)\.",
    _STAMP
    + r" WARN NativeCodeLoader: Unable to load native-hadoop library for your platform\.\.\. "
    r"using builtin-java classes where applicable",
)
# headwater's progress lines and summary (headwater.pipelines.runner.progress).
PROGRESS = (
    r"\[update\] [A-Z_]+",
    r"  \S+ +[A-Z_]+( .*)?",
    r"Pipeline 'quiet' update [0-9a-f]{8}: COMPLETED in [0-9.]+ s",
    r"  flow +status +rows +seconds",
    r"      (refreshed by|expectations failed by): .*",
)


def land(folder: Path, name: str, rows: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("\n".join(json.dumps(r) for r in rows) + "\n")


def run(project: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "headwater.cli", "pipelines", "run", "--master", "local[2]"]
    env = {**os.environ, "HEADWATER_DELTA_ENGINE": "delta-spark"}
    env.pop("HEADWATER_VERBOSE", None)
    return subprocess.run(
        [*command, "--warehouse", str(project / "warehouse")],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def strangers(text: str, allowed: tuple[str, ...]) -> list[str]:
    return [line for line in text.splitlines() if not any(re.fullmatch(p, line) for p in allowed)]


def test_a_pipeline_run_on_delta_spark_prints_only_progress_and_sparks_banner(tmp_path):
    project, source = tmp_path / "quiet", tmp_path / "landing"
    (project / "transformations").mkdir(parents=True)
    (project / "spark-pipeline.yml").write_text(SPEC.format(source=source))
    (project / "transformations" / "quiet.py").write_text(PIPELINE)
    row = {"userId": 1, "name": "Ana", "city": "Lima", "operation": "INSERT", "sequenceNum": 1}
    land(source, "1.json", [row, {**row, "userId": 2, "city": "Oslo"}])
    first = run(project)  # a fresh warehouse: the metastore is created
    land(source, "2.json", [{**row, "city": "Cusco", "sequenceNum": 2}])
    second = run(project)  # the view refreshed again, the CDC flow merges
    for done in (first, second):
        assert done.returncode == 0, done.stdout + done.stderr
        assert "current_users" in done.stdout and "cities" in done.stdout
        assert strangers(done.stderr, BANNER) == [], done.stderr
        assert strangers(done.stdout, PROGRESS) == [], done.stdout
    assert "COMPLETED" in second.stdout
