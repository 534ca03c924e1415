"""``headwater.session(s3_connector=True)`` on a pip-only install: Spark starts with Hadoop's
S3 connector of its own Hadoop version (here from the jar cache the ``s3a`` tier fills, as
on a machine that fetched it once), so a Delta table on ``s3://`` is scanned by Spark's own
Parquet scan, not through Python. Asked of a Spark already running without it: one line."""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.conftest import run_python

CHILD = textwrap.dedent(
    """
    import json, sys, headwater
    conf, root, warehouse = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
    spark = headwater.session(master="local[1]", warehouse=warehouse, conf=conf, s3_connector=True)
    path = root + "/connector"
    spark.range(100).selectExpr("id", "id % 3 AS p").write.format("delta").save(path)
    df = spark.read.format("delta").load(path)
    plan = df._jdf.queryExecution().executedPlan().toString()
    print("RESULT", json.dumps({
        "jars": [j.rsplit("/", 1)[-1] for j in spark.conf.get("spark.jars").split(",")],
        "native": "FileScan parquet" in plan,
        "rows": df.where("p = 1").count(),
    }))
    """
)


def result_of(out: str) -> dict:
    return json.loads(next(li for li in out.splitlines() if li.startswith("RESULT "))[7:])


@pytest.mark.slow
def test_a_session_asked_for_the_connector_scans_s3_tables_with_spark(s3_server, s3_root, tmp_path):
    from headwater.engines import jars

    conf = json.dumps(s3_server.spark_conf())
    out = run_python(CHILD, conf, s3_root, str(tmp_path / "wh"), timeout=600).stdout
    result = result_of(out)
    assert f"hadoop-aws-{jars.hadoop_version()}.jar" in result["jars"], result
    assert result["native"] and result["rows"] == 33, result


def test_asked_once_spark_runs_without_it_is_one_line(spark):
    """The suite's own session started without the connector (a JVM's classpath is fixed)."""
    from headwater.delta.files.io_choice import has_filesystem
    from headwater.errors import OptionError
    from headwater.session import _require_s3_connector

    assert not has_filesystem(spark, "s3a")
    with pytest.raises(OptionError) as refused:
        _require_s3_connector(spark)
    (line,) = str(refused.value).splitlines()
    assert line.startswith("s3_connector=True: Spark already runs in this process without")
