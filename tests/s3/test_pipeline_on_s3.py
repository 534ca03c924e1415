"""A pipeline update whose landing folder, tables and catalog live on ``s3://``."""

from __future__ import annotations

import json
import textwrap

import pytest

from headwater.autoloader.state_log import CACHE_ENV
from tests.conftest import run_python
from tests.s3.connector import s3a_conf

PIPELINE = """
from pyspark import pipelines as dp


@dp.table
@dp.expect_or_drop("positive", "amount > 0")
def raw():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaHints", "id bigint, amount bigint")
        .load(spark.conf.get("source_dir"))
    )


@dp.materialized_view
def totals():
    return spark.read.table("raw").groupBy().agg({"amount": "sum", "id": "count"})
"""

RUN = textwrap.dedent(
    """
    import json, sys, yaml
    import headwater
    from headwater import pipelines, storage
    root, bucket_root, conf, pipeline_storage = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
    spark = headwater.session(master="local[2]", warehouse=bucket_root + "/warehouse", conf=conf)
    landing = bucket_root + "/landing"
    def land(i, amounts):
        body = "".join(json.dumps({"id": i * 100 + j, "amount": a}) + "\\n" for j, a in enumerate(amounts))
        storage.write_bytes(f"{landing}/batch{i}.json", body.encode())
    with open(root + "/spark-pipeline.yml", "w") as f:
        yaml.safe_dump({"name": "s3pl", "storage": pipeline_storage, "database": "s3pl",
                        "configuration": {"source_dir": landing},
                        "libraries": [{"glob": {"include": "transformations/**"}}]}, f)
    land(0, [5, 10, -1])
    pipelines.run(root, spark)
    land(1, [20])
    pipelines.run(root, spark)
    print("RESULT", json.dumps([list(r) for r in spark.table("s3pl.totals").collect()]))
    print("RAW", spark.table("s3pl.raw").count())
    print("FILES", json.dumps(sorted(f.path for f in storage.list_files(bucket_root + "/warehouse"))))
    if storage.is_remote(pipeline_storage):
        print("STORAGE", json.dumps(sorted(f.path for f in storage.list_files(pipeline_storage))))
    """
)


def run(tmp_path, bucket_root: str, conf: dict, pipeline_storage: str) -> dict:
    (tmp_path / "transformations").mkdir()
    (tmp_path / "transformations" / "flows.py").write_text(PIPELINE)
    cache = {CACHE_ENV: str(tmp_path / "cache")}
    args = (str(tmp_path), bucket_root, json.dumps(conf), pipeline_storage)
    out = run_python(RUN, *args, timeout=600, env=cache).stdout
    lines = {
        line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in out.splitlines() if " " in line
    }
    assert json.loads(lines["RESULT"]) == [[35, 3]]  # the negative amount dropped
    assert lines["RAW"] == "3"  # the second update read only the new file
    files = json.loads(lines["FILES"])
    assert any("/warehouse/s3pl.db/raw/_delta_log/" in f for f in files)
    assert any("/warehouse/s3pl.db/totals/" in f and f.endswith(".parquet") for f in files)
    return lines


def test_pipeline_update_with_landing_tables_and_catalog_on_s3(s3_server, s3_root, tmp_path):
    run(tmp_path, s3_root, s3_server.spark_conf(), str(tmp_path / "storage"))


@pytest.mark.slow
def test_pipeline_storage_checkpoints_and_event_log_on_s3a(s3_server, s3_root, tmp_path):
    """With Hadoop's S3 connector (as clusters have), everything but the pipeline's source
    files is on the store: Spark's checkpoints, Auto Loader's state, the event log."""
    root = s3_root.replace("s3://", "s3a://")
    conf = {**s3_server.spark_conf(), **s3a_conf(s3_server.endpoint)}
    lines = run(tmp_path, root, conf, f"{root}/storage")
    kept = [p.removeprefix(f"{root}/storage/") for p in json.loads(lines["STORAGE"])]
    assert any(p.startswith("checkpoints/raw/offsets/") for p in kept)
    assert any(
        p.startswith("checkpoints/raw/autoloader/0/_headwater_file_state/log/") for p in kept
    )
    assert any(p.startswith("system/events/_delta_log/") for p in kept)
