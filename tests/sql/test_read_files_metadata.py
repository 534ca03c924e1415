"""``read_files`` rows carry Spark's hidden file metadata column ``_metadata``, in SQL and in
Python, batch and under ``STREAM``: ``SELECT *`` leaves it out, naming it (or a field of
it) gets the values Spark's own file source reports for the same files."""

from __future__ import annotations

import json

import pytest
from pyspark.errors import AnalysisException

from headwater.sql.functions import read_files, read_files_stream


@pytest.fixture
def land(tmp_path):
    folder = tmp_path / "landing"
    folder.mkdir()
    (folder / "a.json").write_text('{"id": 1, "n": 10}\n{"id": 2, "n": "ten"}\n')
    (folder / "b.json").write_text('{"id": 3, "n": 30}\n')
    return folder


def _sparks_own(spark, land) -> dict[int, dict]:
    rows = spark.read.json(str(land)).select("id", "_metadata").collect()
    return {r.id: r._metadata.asDict() for r in rows}


def test_select_star_and_a_field_of_metadata_in_sql(spark, land):
    df = spark.sql(
        "SELECT *, _metadata.file_name AS source_file "
        f"FROM read_files('{land}', format => 'json', schemaHints => 'n int')"
    )
    assert df.columns == ["id", "n", "_rescued_data", "source_file"]
    own = _sparks_own(spark, land)
    assert {(r.id, r.source_file) for r in df.collect()} == {
        (i, m["file_name"]) for i, m in own.items()
    }
    rescued = df.where("id = 2").first()._rescued_data
    assert json.loads(rescued)["n"] == "ten"  # the rescue column is as it was


def _plan(df) -> str:
    return df._jdf.queryExecution().optimizedPlan().toString()


def test_the_whole_column_equals_sparks_own_and_star_alone_leaves_it_out(spark, land):
    plain = spark.sql(f"SELECT * FROM read_files('{land}', format => 'json')")
    assert "_metadata" not in plain.columns
    assert "file_metadata_lookup" not in _plan(plain)  # not made when not selected
    df = spark.sql(f"SELECT id, _metadata FROM read_files('{land}', format => 'json')")
    assert "file_metadata_lookup" in _plan(df)
    assert {r.id: r._metadata.asDict() for r in df.collect()} == _sparks_own(spark, land)


def test_aliases_with_and_given_schemas_reach_it(spark, land):
    aliased = spark.sql(
        f"SELECT f.id, f._metadata.file_size AS size FROM read_files('{land}', format => 'json') f"
    )
    own = _sparks_own(spark, land)
    assert {tuple(r) for r in aliased.collect()} == {(i, m["file_size"]) for i, m in own.items()}
    with_ = spark.sql(
        f"WITH raw AS (SELECT *, _metadata FROM read_files('{land}', format => 'json')) "
        "SELECT id, _metadata.file_path AS path FROM raw"
    )
    assert {tuple(r) for r in with_.collect()} == {(i, m["file_path"]) for i, m in own.items()}
    given = spark.sql(
        f"SELECT id, _metadata.file_name FROM read_files('{land}', schema => 'id long, n long')"
    )  # Spark's own reader, no rescue column
    assert {tuple(r) for r in given.collect()} == {(i, m["file_name"]) for i, m in own.items()}


def test_a_missing_field_is_an_error_naming_the_fields(spark, land):
    with pytest.raises(AnalysisException, match="file_path.*file_modification_time"):
        spark.sql(f"SELECT _metadata.file_md5 FROM read_files('{land}', format => 'json')")


def test_python_read_files_batch_and_stream(spark, land, tmp_path):
    batch = read_files(spark, str(land), format="json")
    assert batch.columns == ["id", "n", "_rescued_data"]
    own = _sparks_own(spark, land)
    got = batch.select("id", "_metadata").collect()
    assert {r.id: r._metadata.asDict() for r in got} == own

    options = {"format": "json", "schemaLocation": str(tmp_path / "ckpt")}
    stream = read_files_stream(spark, str(land), options)
    assert "_metadata" not in stream.columns
    out = str(tmp_path / "out")
    (
        stream.select("*", "_metadata")
        .writeStream.format("delta")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start(out)
        .awaitTermination()
    )
    table = spark.read.format("delta").load(out)
    assert table.columns == ["id", "n", "_rescued_data", "_metadata"]
    assert {r.id: r._metadata.asDict() for r in table.collect()} == own
