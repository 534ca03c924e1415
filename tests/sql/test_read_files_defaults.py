"""``read_files`` in ``spark.sql`` has the known platform's defaults: JSON and CSV columns
typed (JSON timestamps stay strings, CSV ones are typed, as Spark infers them),
``inferColumnTypes => false`` keeps strings, ``schemaHints`` override inferred types, and
the rescue column ``_rescued_data`` is added."""

from __future__ import annotations

import json


def schema_of(spark, sql: str) -> dict[str, str]:
    return {f.name: f.dataType.simpleString() for f in spark.sql(sql).schema}


def test_types_strings_and_hints(spark, tmp_path):
    land = tmp_path / "json"
    land.mkdir()
    (land / "a.json").write_text('{"id": 1, "ts": "2024-01-01T10:00:00Z", "s": {"a": 1.5}}\n')
    csv = tmp_path / "csv"
    csv.mkdir()
    (csv / "a.csv").write_text("id,ts\n1,2024-01-01T10:00:00Z\n")

    assert schema_of(spark, f"SELECT * FROM read_files('{land}')") == {
        "id": "bigint",
        "s": "struct<a:double>",
        "ts": "string",
        "_rescued_data": "string",
    }
    strings = spark.sql(f"SELECT * FROM read_files('{land}', inferColumnTypes => false)")
    assert {f.name: f.dataType.simpleString() for f in strings.schema} == {
        "id": "string",
        "s": "string",
        "ts": "string",
        "_rescued_data": "string",
    }
    assert json.loads(strings.first()["s"]) == {"a": 1.5}
    hinted = f"SELECT * FROM read_files('{land}', schemaHints => 'id int, s.a string')"
    assert schema_of(spark, hinted) == {
        "id": "int",
        "s": "struct<a:string>",
        "ts": "string",
        "_rescued_data": "string",
    }

    assert schema_of(spark, f"SELECT * FROM read_files('{csv}', header => true)") == {
        "id": "int",
        "ts": "timestamp",
        "_rescued_data": "string",
    }
    text = f"SELECT * FROM read_files('{csv}', header => true, inferColumnTypes => false)"
    assert schema_of(spark, text) == {"id": "string", "ts": "string", "_rescued_data": "string"}
