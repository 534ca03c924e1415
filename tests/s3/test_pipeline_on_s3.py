"""A pipeline update whose landing folder, tables and catalog live on ``s3://``."""

from __future__ import annotations

import json
import textwrap

from tests.conftest import run_python

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
    root, bucket_root, conf = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    spark = headwater.session(master="local[2]", warehouse=bucket_root + "/warehouse", conf=conf)
    landing = bucket_root + "/landing"
    def land(i, amounts):
        body = "".join(json.dumps({"id": i * 100 + j, "amount": a}) + "\\n" for j, a in enumerate(amounts))
        storage.write_bytes(f"{landing}/batch{i}.json", body.encode())
    with open(root + "/spark-pipeline.yml", "w") as f:
        yaml.safe_dump({"name": "s3pl", "storage": root + "/storage", "database": "s3pl",
                        "configuration": {"source_dir": landing},
                        "libraries": [{"glob": {"include": "transformations/**"}}]}, f)
    land(0, [5, 10, -1])
    pipelines.run(root, spark)
    land(1, [20])
    pipelines.run(root, spark)
    print("RESULT", json.dumps([list(r) for r in spark.table("s3pl.totals").collect()]))
    print("RAW", spark.table("s3pl.raw").count())
    print("FILES", json.dumps(sorted(f.path for f in storage.list_files(bucket_root + "/warehouse"))))
    """
)


def test_pipeline_update_with_landing_tables_and_catalog_on_s3(s3_server, s3_root, tmp_path):
    (tmp_path / "transformations").mkdir()
    (tmp_path / "transformations" / "flows.py").write_text(PIPELINE)
    conf = json.dumps(s3_server.spark_conf())
    out = run_python(RUN, str(tmp_path), s3_root, conf, timeout=600).stdout
    lines = {
        line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in out.splitlines() if " " in line
    }
    assert json.loads(lines["RESULT"]) == [[35, 3]]  # the negative amount dropped
    assert lines["RAW"] == "3"
    files = json.loads(lines["FILES"])
    assert any("/warehouse/s3pl.db/raw/_delta_log/" in f for f in files)
    assert any("/warehouse/s3pl.db/totals/" in f and f.endswith(".parquet") for f in files)
