"""Spark's native Parquet scan on ``s3a://`` and ``s3://`` when Hadoop's S3 connector is on
the classpath (test-only jars): chosen automatically, ``s3://`` served by the connector
(``fs.s3.impl``) with its files named ``s3://``; the files are written by pyarrow in place
(no staging left behind), and the same table reads alike through pyarrow. Planning the scan costs
the driver a few S3 requests whatever the number of files (one folder listing), not a LIST
and two HEADs per file one after another."""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.conftest import run_python
from tests.s3.connector import s3a_conf

CHILD = textwrap.dedent(
    """
    import json, sys, headwater
    from headwater import storage
    from headwater.delta.files import io_choice
    from headwater.delta.log.delta_log import DeltaLog
    from headwater.delta.read.batch import python_read
    from headwater.delta.tables import DeltaTable
    conf, root = json.loads(sys.argv[1]), sys.argv[2]
    spark = headwater.session(master="local[2]", warehouse=sys.argv[3], conf=conf)
    path = root.replace("s3://", "s3a://") + "/native"
    spark.range(1000).selectExpr("id", "id % 3 AS p").write.format("delta").partitionBy("p").save(path)
    DeltaTable.forPath(spark, path).delete("id < 10")
    DeltaTable.forPath(spark, path).update("id = 500", {"p": "7"})
    native = spark.read.format("delta").load(path)
    plan = native._jdf.queryExecution().executedPlan().toString()
    s3 = spark.read.format("delta").load(path.replace("s3a://", "s3://"))
    s3_plan = s3._jdf.queryExecution().executedPlan().toString()
    s3_files = sorted({r[0].split("/", 3)[:3] == ["s3:", "", root.split("/")[2]]
                for r in s3.select("_metadata.file_path").distinct().collect()})
    many = root.replace("s3://", "s3a://") + "/many"
    spark.range(200).repartition(20).write.format("delta").save(many)
    jvm = spark._jvm
    fs = jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI(many), spark._jsc.hadoopConfiguration())
    def requests():
        counters = fs.getIOStatistics().counters()
        return sum(counters.get(k) for k in ("object_list_request", "object_metadata_request"))
    before = requests()
    many_df = spark.read.format("delta").load(many)
    planned = requests() - before
    print("RESULT", json.dumps({
        "native": io_choice.spark_has_filesystem(spark, path),
        "scan": "FileScan parquet" in plan,
        "count": native.count(),
        "p7": native.where("p = 7").count(),
        "s3": [io_choice.spark_has_filesystem(spark, root), "FileScan parquet" in s3_plan,
               sorted(s3.collect()) == sorted(native.collect()), s3_files],
        "via_pyarrow": python_read(spark, DeltaLog(path).snapshot()).count(),
        "staging_left": [f.path for f in storage.list_files(path) if "_headwater_staging" in f.path],
        "many": [sum("_delta_log" not in f.path for f in storage.list_files(many)), many_df.count()],
        "requests_few": planned <= 12,
        "requests": planned,
    }))
    """
)


@pytest.mark.slow
def test_s3a_and_s3_use_sparks_native_parquet_path_with_the_connector(s3_server, s3_root, tmp_path):
    conf = {**s3_server.spark_conf(), **s3a_conf(s3_server.endpoint)}
    out = run_python(CHILD, json.dumps(conf), s3_root, str(tmp_path / "wh"), timeout=600).stdout
    result = json.loads(next(li for li in out.splitlines() if li.startswith("RESULT "))[7:])
    assert result.pop("requests_few"), result["requests"]
    del result["requests"]
    assert result == {
        "native": True,
        "scan": True,
        "count": 990,
        "p7": 1,
        "s3": [True, True, True, [True]],
        "via_pyarrow": 990,
        "staging_left": [],
        "many": [20, 200],
    }
