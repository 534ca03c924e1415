"""Spark's hidden file metadata column ``_metadata`` on ``cloudFiles`` streams, as on Spark's
own file sources: left out of ``*`` and ``df.columns``, there when named, with the values
Spark's file source reports for the same files, in the table only when selected."""

from __future__ import annotations

import json

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql.functions import col

FIELDS = [
    "file_path",
    "file_name",
    "file_size",
    "file_block_start",
    "file_block_length",
    "file_modification_time",
]


@pytest.fixture
def land(tmp_path):
    folder = tmp_path / "land"
    folder.mkdir()
    for name, ids in (("a.json", [1, 2]), ("b c.json", [3])):
        (folder / name).write_text("".join(json.dumps({"id": i, "v": f"x{i}"}) + "\n" for i in ids))
    return folder


def _stream(spark, land, tmp_path, schema=None):
    reader = (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaLocation", str(tmp_path / "ckpt"))
    )
    return (reader.schema(schema) if schema else reader).load(str(land))


def _write(df, tmp_path, name="out"):
    out = str(tmp_path / name)
    q = (
        df.writeStream.format("delta")
        .option("checkpointLocation", str(tmp_path / f"ckpt_{name}"))
        .trigger(availableNow=True)
        .start(out)
    )
    q.awaitTermination()
    return q, out


def _sparks_own(spark, land):
    """``id -> _metadata`` as Spark's own json source reports it."""
    rows = spark.read.json(str(land)).select("id", "_metadata").collect()
    return {r.id: r._metadata.asDict() for r in rows}


def test_metadata_is_hidden_until_selected_and_equals_sparks_own(spark, land, tmp_path):
    df = _stream(spark, land, tmp_path)
    assert df.columns == ["id", "v", "_rescued_data"]  # SELECT * leaves it out
    _, out = _write(df.select("*", "_metadata"), tmp_path)
    table = spark.read.format("delta").load(out)
    assert table.columns == ["id", "v", "_rescued_data", "_metadata"]
    assert table.schema["_metadata"].dataType.fieldNames() == FIELDS
    got = {int(r.id): r._metadata.asDict() for r in table.collect()}
    assert got == _sparks_own(spark, land)
    assert got[3]["file_path"].endswith("/b%20c.json") and got[3]["file_name"] == "b%20c.json"
    stored = (tmp_path / "ckpt" / "_schemas" / "0").read_text()
    assert "_metadata" not in stored  # the schema location's schema is the files' own


def test_fields_of_metadata_in_python_expressions(spark, land, tmp_path):
    df = _stream(spark, land, tmp_path, schema="id long, v string")
    assert df.select(col("_metadata.file_path")).columns == ["file_path"]
    named = df.withColumn("source_file", col("_metadata.file_name")).withColumn(
        "size", col("_metadata.file_size")
    )
    _, out = _write(named, tmp_path)
    table = spark.read.format("delta").load(out)
    assert table.columns == ["id", "v", "source_file", "size"]
    own = _sparks_own(spark, land)
    assert {(r.id, r.source_file, r.size) for r in table.collect()} == {
        (i, m["file_name"], m["file_size"]) for i, m in own.items()
    }


def test_a_stream_that_does_not_select_it_neither_writes_nor_reads_it(spark, land, tmp_path):
    from headwater.autoloader.metadata_plan import unselected_dropped

    df = _stream(spark, land, tmp_path)
    _, out = _write(df, tmp_path)
    assert spark.read.format("delta").load(out).columns == ["id", "v", "_rescued_data"]

    def source_columns(frame):
        plan = frame._jdf.queryExecution().analyzed()
        while plan.children().size():
            plan = plan.children().apply(0)
        return [plan.output().apply(i).name() for i in range(plan.output().size())]

    assert source_columns(unselected_dropped(df.where("id > 1"))) == ["id", "v", "_rescued_data"]
    kept = df.where("_metadata.file_size > 0")
    assert "_metadata" in source_columns(unselected_dropped(kept))


def test_each_file_once_across_restarts_with_its_own_metadata(spark, land, tmp_path):
    _write(_stream(spark, land, tmp_path).select("id", "_metadata.file_name"), tmp_path)
    (land / "d.json").write_text(json.dumps({"id": 4, "v": "x4"}) + "\n")
    q, out = _write(_stream(spark, land, tmp_path).select("id", "_metadata.file_name"), tmp_path)
    assert sum(p["numInputRows"] for p in q.recentProgress) == 1
    rows = sorted((int(r.id), r.file_name) for r in spark.read.format("delta").load(out).collect())
    assert rows == [(1, "a.json"), (2, "a.json"), (3, "b%20c.json"), (4, "d.json")]


def test_a_field_it_does_not_have_is_an_error_naming_the_fields_it_has(spark, land, tmp_path):
    df = _stream(spark, land, tmp_path)
    with pytest.raises(AnalysisException) as e:
        df.select("_metadata.file_md5")
    assert all(f in str(e.value) for f in FIELDS)


def test_a_data_column_named_metadata_keeps_the_name_as_spark_does(spark, tmp_path):
    land = tmp_path / "land"
    land.mkdir()
    (land / "a.json").write_text(json.dumps({"id": 1, "_metadata": "mine"}) + "\n")
    df = _stream(spark, land, tmp_path)
    assert "__metadata" not in df.columns
    row = df.select("_metadata", "__metadata.file_name")
    _, out = _write(row, tmp_path)
    assert [tuple(r) for r in spark.read.format("delta").load(out).collect()] == [
        ("mine", "a.json")
    ]
