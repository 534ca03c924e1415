"""``s3://`` tables on the delta-spark engine: delta-spark reaches every file through Hadoop,
which has no ``s3:`` filesystem of its own; with Hadoop's S3 connector on the classpath
(test-only jars) ``headwater.session()`` binds ``fs.s3.impl`` to it, so delta-spark writes,
deletes from and scans (its own Parquet scan) an ``s3://`` table, naming its files
``s3://``, and reads the same rows as ``s3a://``."""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.conftest import run_python
from tests.s3.connector import s3a_conf
from tests.s3.seaweedfs import seaweedfs

CHILD = textwrap.dedent(
    """
    import json, sys, headwater
    from delta.tables import DeltaTable
    conf, path = json.loads(sys.argv[1]), sys.argv[2]
    spark = headwater.session(master="local[2]", warehouse=sys.argv[3], conf=conf,
                              delta_engine="delta-spark")
    spark.range(100).selectExpr("id", "id % 3 AS p").write.format("delta").partitionBy("p").save(path)
    DeltaTable.forPath(spark, path).delete("id < 10")
    df = spark.read.format("delta").load(path)
    files = {r[0].split("/")[0] for r in df.select("_metadata.file_path").distinct().collect()}
    s3a = spark.read.format("delta").load(path.replace("s3://", "s3a://"))
    print("RESULT", json.dumps({
        "impl": spark._jsc.hadoopConfiguration().get("fs.s3.impl"),
        "scan": "FileScan parquet" in df._jdf.queryExecution().executedPlan().toString(),
        "count": df.count(),
        "same_as_s3a": sorted(df.collect()) == sorted(s3a.collect()),
        "schemes": sorted(files),
    }))
    """
)


@pytest.mark.slow
def test_delta_spark_reads_and_writes_s3_tables_through_the_s3a_connector(tmp_path):
    with seaweedfs() as server:
        conf = {**server.spark_conf(), **s3a_conf(server.endpoint)}
        path = f"s3://{server.bucket}/delta-spark/t"
        out = run_python(CHILD, json.dumps(conf), path, str(tmp_path / "wh"), timeout=600).stdout
    result = json.loads(next(li for li in out.splitlines() if li.startswith("RESULT "))[7:])
    assert result == {
        "impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "scan": True,
        "count": 90,
        "same_as_s3a": True,
        "schemes": ["s3:"],
    }
