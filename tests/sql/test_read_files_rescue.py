"""Batch ``read_files`` keeps what does not fit, as the known platform's ``read_files`` and
headwater's ``STREAM read_files`` do: with an inferred schema a ``_rescued_data`` column
holds, as JSON, every value that does not fit its column (a value against a hint's type,
a line that is not JSON), never a silent null. A given
``schema`` has no rescue column unless ``rescuedDataColumn`` names one;
``schemaEvolutionMode => 'none'`` drops it."""

from __future__ import annotations

import json


def rows(spark, sql: str) -> list[tuple]:
    return [tuple(r) for r in spark.sql(sql).collect()]


def test_inferred_schema_rescues_misfits_and_malformed_lines(spark, tmp_path):
    land = tmp_path / "land"
    land.mkdir()
    (land / "a.json").write_text(
        '{"id": 1, "n": 10}\n{"id": 2, "n": "ten"}\nnot json at all\n{"id": 4, "n": 4, "extra": {"a": 1}}\n'
    )
    df = spark.sql(f"SELECT * FROM read_files('{land}', schemaHints => 'n int')")
    assert {f.name: f.dataType.simpleString() for f in df.schema} == {
        "id": "bigint",
        "n": "int",
        "extra": "struct<a:bigint>",
        "_rescued_data": "string",
    }
    df = df.select("id", "n", "extra", "_rescued_data")
    got = sorted((tuple(r) for r in df.collect()), key=lambda r: (r[0] is None, r[0] or 0))
    assert got[0] == (1, 10, None, None)
    assert got[1][:3] == (2, None, None)
    assert json.loads(got[1][3])["n"] == "ten"
    assert json.loads(got[1][3])["_file_path"].endswith("a.json")
    assert got[2][:2] == (4, 4) and tuple(got[2][2]) == (1,) and got[2][3] is None
    assert got[3][:3] == (None, None, None)
    assert json.loads(got[3][3])["_corrupt_record"] == "not json at all"


def test_csv_keeps_spark_types_and_rescues(spark, tmp_path):
    land = tmp_path / "csv"
    land.mkdir()
    (land / "a.csv").write_text("id,amount\n1,2.5\n2,abc\n")
    sql = f"SELECT * FROM read_files('{land}', header => true, schemaHints => 'amount double')"
    got = rows(spark, sql + " ORDER BY id")
    assert [f.name for f in spark.sql(sql).schema] == ["id", "amount", "_rescued_data"]
    assert got[0] == (1, 2.5, None)
    assert got[1][:2] == (2, None) and json.loads(got[1][2])["amount"] == "abc"


def test_given_schema_and_mode_none_have_no_rescue_column(spark, tmp_path):
    land = tmp_path / "land"
    land.mkdir()
    (land / "a.json").write_text('{"id": 1}\n{"id": "x"}\n')
    given = f"SELECT * FROM read_files('{land}', schema => 'id int')"
    assert spark.sql(given).columns == ["id"]
    none = f"SELECT * FROM read_files('{land}', schemaEvolutionMode => 'none')"
    assert spark.sql(none).columns == ["id"]
    named = f"SELECT * FROM read_files('{land}', schema => 'id int', rescuedDataColumn => 'bad')"
    got = rows(spark, named)
    assert spark.sql(named).columns == ["id", "bad"]
    assert got[0] == (1, None)
    assert got[1][0] is None and json.loads(got[1][1])["id"] == "x"
