"""COPY INTO through SQL, end to end (the parsing itself is tested in test_parsing.py)."""

from __future__ import annotations

import pytest

import headwater

pytest.importorskip("headwater.copyinto")


def test_copy_into_schemaless_table_then_typed_select_by_path(spark, tmp_path):
    land = tmp_path / "land"
    land.mkdir()
    (land / "a.json").write_text(
        '{"id": 1, "amount": "2.50", "note": "x"}\n{"id": 2, "amount": "1"}\n'
    )
    (land / "b.json").write_text('{"id": 3, "amount": "7"}\n')
    script = f"""
        CREATE TABLE IF NOT EXISTS sqlcp.raw;
        COPY INTO sqlcp.raw FROM '{land}' FILEFORMAT = JSON
          FORMAT_OPTIONS ('inferSchema' = 'true') COPY_OPTIONS ('mergeSchema' = 'true')"""
    first = headwater.sql(spark, script).first()
    assert (first.num_affected_rows, first.num_inserted_rows) == (3, 3)
    again = headwater.sql(spark, script).first()  # files already loaded: skipped
    assert again.num_inserted_rows == 0
    assert sorted(r.id for r in spark.table("sqlcp.raw").collect()) == [1, 2, 3]

    typed = str(tmp_path / "typed")
    headwater.sql(spark, f"CREATE TABLE delta.`{typed}` (id BIGINT, amount DECIMAL(10, 2))")
    result = headwater.sql(
        spark,
        f"""COPY INTO delta.`{typed}`
            FROM (SELECT CAST(id AS BIGINT) AS id, CAST(amount AS DECIMAL(10, 2)) AS amount
                  FROM '{land}')
            FILEFORMAT = JSON FILES = ('a.json')""",
    ).first()
    assert result.num_inserted_rows == 2
    got = sorted((r.id, str(r.amount)) for r in spark.read.format("delta").load(typed).collect())
    assert got == [(1, "2.50"), (2, "1.00")]
