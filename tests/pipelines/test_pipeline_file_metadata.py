"""Pipelines read Spark's hidden ``_metadata`` column of their files as the platform's do:
a Python flow selecting it from Auto Loader, a SQL streaming table naming its fields under
``STREAM read_files``, a materialized view over batch ``read_files``; a dataset that does
not select it does not get it."""

from __future__ import annotations


def _run(project) -> dict[int, dict]:
    """Land two files, run an update; ``id -> _metadata`` as Spark's own json source
    reports it for the landed files."""
    project.land("1.json", [{"id": 1}, {"id": 2}])
    project.land("2.json", [{"id": 3}])
    result = project.run()
    assert result.ok, result.failed()
    rows = project.spark.read.json(str(project.landing / "orders")).select("id", "_metadata")
    return {r.id: r._metadata.asDict() for r in rows.collect()}


def test_python_flows_select_metadata_from_auto_loader(project):
    project.source(
        "bronze.py",
        """
from pyspark import pipelines as dp
from pyspark.sql.functions import col

LANDING = spark.conf.get("source_dir") + "/orders"


def files():
    return (
        spark.readStream.format("cloudFiles").option("cloudFiles.format", "json")
        .option("cloudFiles.inferColumnTypes", "true").load(LANDING)
    )


@dp.table
def bronze():
    return files().select("*", "_metadata")


@dp.table
def named():
    return files().withColumn("source_file", col("_metadata.file_name"))


@dp.table
def plain():
    return files()
""",
    )
    own = _run(project)
    bronze = project.spark.table(f"{project.database}.bronze")
    assert bronze.columns == ["id", "_rescued_data", "_metadata"]
    assert {r.id: r._metadata.asDict() for r in bronze.collect()} == own
    named = project.rows("named", "id")
    assert named == [(i, None, own[i]["file_name"]) for i in (1, 2, 3)]
    assert project.spark.table(f"{project.database}.plain").columns == ["id", "_rescued_data"]


def test_sql_pipelines_name_metadata_under_stream_read_files_and_read_files(project):
    project.source(
        "bronze.sql",
        """
        CREATE OR REFRESH STREAMING TABLE b
        AS SELECT *, _metadata.file_path AS src
           FROM STREAM read_files('${source_dir}/orders', format => 'json');

        CREATE OR REFRESH MATERIALIZED VIEW sizes
        AS SELECT r.id, r._metadata.file_size AS size
           FROM read_files('${source_dir}/orders', format => 'json') AS r;
        """,
    )
    own = _run(project)
    b = project.spark.table(f"{project.database}.b")
    assert b.columns == ["id", "_rescued_data", "src"]
    assert {(r.id, r.src) for r in b.collect()} == {(i, m["file_path"]) for i, m in own.items()}
    assert project.rows("sizes", "id") == [(i, own[i]["file_size"]) for i in (1, 2, 3)]
