"""COPY INTO examples from the known platform's documentation:

* "COPY INTO" (SQL reference, https://docs.databricks.com/aws/en/sql/language-manual/delta-copy-into),
  its examples: JSON files by name (run twice), Avro through a SELECT, CSV through a
  SELECT with a PATTERN, headerless CSV cast and renamed;
* "Common data loading patterns using COPY INTO"
  (https://docs.databricks.com/aws/en/ingestion/copy-into/examples): the empty
  placeholder table whose schema the first load sets, inferred and evolved.

Read 2026-11-29 from public copies of the pages' statements (the pages themselves only
partly readable here). The statements' bucket paths are this test's folders (README:
paths); the targets the reference examples load into exist there, so each test creates
them first. Every statement is run a second time, or after more files land: a load is
idempotent.
"""

from __future__ import annotations

import datetime as dt
import os

import fastavro
from delta_corpus import assert_schema, assert_table, write_json, write_lines


def _loaded(result) -> tuple[int, int]:
    row = result.collect()[0]
    return row.num_affected_rows, row.num_inserted_rows


def test_load_json_files_by_name_twice(spark, tmp_path):
    """FILES = ('f1.json', ..., 'f5.json'): only the named files; the second execution
    copies nothing, and a file that lands later is loaded only when named."""
    source = str(tmp_path / "my-bucket" / "jsonData")
    records = {
        f"f{i}.json": [{"id": i * 10 + j, "name": f"n{i}{j}" if j else None} for j in range(2)]
        for i in range(1, 7)
    }
    for name, rows in records.items():
        write_json(source, name, rows)
    spark.sql("DROP TABLE IF EXISTS my_json_data")
    spark.sql("CREATE TABLE my_json_data (id BIGINT, name STRING) USING DELTA")
    statement = f"""
        COPY INTO my_json_data
          FROM '{source}'
          FILEFORMAT = JSON
          FILES = ('f1.json', 'f2.json', 'f3.json', 'f4.json', 'f5.json')
    """  # changed: path (was s3://my-bucket/jsonData)
    try:
        assert _loaded(spark.sql(statement)) == (10, 10)
        assert _loaded(spark.sql(statement)) == (0, 0)  # the first command already loaded them
        named = [
            r for n in ("f1.json", "f2.json", "f3.json", "f4.json", "f5.json") for r in records[n]
        ]
        assert_table(spark, "my_json_data", ["id", "name"], [(r["id"], r["name"]) for r in named])
    finally:
        spark.sql("DROP TABLE IF EXISTS my_json_data")


def test_load_avro_through_select(spark, tmp_path):
    """``FROM (SELECT to_date(dt) dt, event as measurement, quantity::double FROM ...)``:
    SQL expressions over Avro files."""
    source = str(tmp_path / "my-bucket" / "avroData")
    os.makedirs(source)
    schema = fastavro.parse_schema(
        {
            "type": "record",
            "name": "Event",
            "fields": [
                {"name": "dt", "type": ["null", "string"]},
                {"name": "event", "type": "string"},
                {"name": "quantity", "type": ["null", "int"]},
            ],
        }
    )
    files = {
        "a.avro": [
            {"dt": "2024-01-02", "event": "open", "quantity": 3},
            {"dt": None, "event": "x", "quantity": None},
        ],
        "b.avro": [{"dt": "2024-02-29", "event": "close", "quantity": -1}],
    }
    for name, rows in files.items():
        with open(os.path.join(source, name), "wb") as f:
            fastavro.writer(f, schema, rows)
    spark.sql("DROP TABLE IF EXISTS my_delta_table")
    spark.sql(
        "CREATE TABLE my_delta_table (dt DATE, measurement STRING, quantity DOUBLE) USING DELTA"
    )
    statement = f"""
        COPY INTO my_delta_table
          FROM (SELECT to_date(dt) dt, event as measurement, quantity::double
                  FROM '{source}')
          FILEFORMAT = AVRO
    """  # changed: path (was s3://my-bucket/avroData)
    try:
        assert _loaded(spark.sql(statement)) == (3, 3)
        assert _loaded(spark.sql(statement)) == (0, 0)
        rows = [
            (
                None if r["dt"] is None else dt.date.fromisoformat(r["dt"]),
                r["event"],
                None if r["quantity"] is None else float(r["quantity"]),
            )
            for rows in files.values()
            for r in rows
        ]
        assert_table(spark, "my_delta_table", ["dt", "measurement", "quantity"], rows)
    finally:
        spark.sql("DROP TABLE IF EXISTS my_delta_table")


def _csv_folders(source: str, header: bool) -> dict[str, list[tuple]]:
    """CSV files under ``folder1`` and ``folder2``; rows (key, index, textData) per file."""
    files = {
        "folder1/file_a.csv": [("k1", "1", "alpha"), ("k2", "2", "")],
        "folder1/file_g.csv": [("k3", "3", "gamma, quoted")],
        "folder1/file_h.csv": [("k9", "9", "not in [a-g]")],
        "folder2/file_a.csv": [("k8", "8", "another folder")],
    }
    for name, rows in files.items():
        lines = ["key,index,textData"] if header else []
        lines += [",".join(f'"{v}"' if "," in v else v for v in r) for r in rows]
        write_lines(os.path.dirname(os.path.join(source, name)), os.path.basename(name), lines)
    return files


def test_load_csv_through_select_with_pattern(spark, tmp_path):
    """``FROM (SELECT key, index, textData, 'constant_value' FROM ...)`` with
    ``PATTERN = 'folder1/file_[a-g].csv'`` and a header."""
    source = str(tmp_path / "bucket" / "base" / "path")
    files = _csv_folders(source, header=True)
    spark.sql("DROP TABLE IF EXISTS target_table")
    spark.sql(
        "CREATE TABLE target_table (key STRING, index STRING, textData STRING, constant_value STRING) USING DELTA"
    )
    statement = f"""
        COPY INTO target_table
          FROM (SELECT key, index, textData, 'constant_value'
                  FROM '{source}')
          FILEFORMAT = CSV
          PATTERN = 'folder1/file_[a-g].csv'
          FORMAT_OPTIONS('header' = 'true')
    """  # changed: path (was s3://bucket/base/path)
    try:
        assert _loaded(spark.sql(statement)) == (3, 3)
        assert _loaded(spark.sql(statement)) == (0, 0)
        chosen = files["folder1/file_a.csv"] + files["folder1/file_g.csv"]
        # CSV reads an empty field as NULL unless told otherwise
        rows = [(k, i, t or None, "constant_value") for k, i, t in chosen]
        assert_table(spark, "target_table", ["key", "index", "textData", "constant_value"], rows)
    finally:
        spark.sql("DROP TABLE IF EXISTS target_table")


def test_load_headerless_csv_cast_and_renamed(spark, tmp_path):
    """``FROM (SELECT _c0::bigint key, _c1::int index, _c2 textData FROM ...)``: files
    without a header, columns by position, cast to the table's types."""
    source = str(tmp_path / "bucket" / "base" / "path")
    files = _csv_folders(source, header=False)
    for name in files:  # keys as numbers, so the cast to bigint has something to do
        files[name] = [(k[1:], i, t or "beta") for k, i, t in files[name]]
        write_lines(
            os.path.dirname(os.path.join(source, name)),
            os.path.basename(name),
            [",".join(f'"{v}"' if "," in v else v for v in r) for r in files[name]],
        )
    spark.sql("DROP TABLE IF EXISTS target_table")
    spark.sql("CREATE TABLE target_table (key BIGINT, index INT, textData STRING) USING DELTA")
    statement = f"""
        COPY INTO target_table
          FROM (SELECT _c0::bigint key, _c1::int index, _c2 textData
                FROM '{source}')
          FILEFORMAT = CSV
          PATTERN = 'folder1/file_[a-g].csv'
    """  # changed: path (was s3://bucket/base/path)
    try:
        assert _loaded(spark.sql(statement)) == (3, 3)
        assert _loaded(spark.sql(statement)) == (0, 0)
        chosen = files["folder1/file_a.csv"] + files["folder1/file_g.csv"]
        rows = [(int(k), int(i), t) for k, i, t in chosen]
        assert_table(spark, "target_table", ["key", "index", "textData"], rows)
    finally:
        spark.sql("DROP TABLE IF EXISTS target_table")


def test_schemaless_table_csv_merge_schema(spark, tmp_path):
    """examples: ``CREATE TABLE IF NOT EXISTS my_pipe_data;`` then COPY INTO with
    ``FORMAT_OPTIONS ('mergeSchema' = 'true', 'delimiter' = '|', 'header' = 'true')`` and
    ``COPY_OPTIONS ('mergeSchema' = 'true')``: the first load sets the schema, a file with
    a new column widens it, a rerun loads nothing."""
    source = str(tmp_path / "my-bucket" / "pipeData")
    write_lines(source, "a.csv", ["id|name", "1|ann", "2|cy"])
    spark.sql("DROP TABLE IF EXISTS my_pipe_data")
    statement = f"""
        COPY INTO my_pipe_data
          FROM '{source}'
          FILEFORMAT = CSV
          FORMAT_OPTIONS ('mergeSchema' = 'true',
                          'delimiter' = '|',
                          'header' = 'true')
          COPY_OPTIONS ('mergeSchema' = 'true');
    """  # changed: path (was s3://my-bucket/pipeData)
    try:
        spark.sql("CREATE TABLE IF NOT EXISTS my_pipe_data;")
        assert _loaded(spark.sql(statement)) == (2, 2)
        assert_schema(spark, "my_pipe_data", {"id": "string", "name": "string"})
        write_lines(source, "b.csv", ["id|name|city", "3|bo|Oslo"])
        assert _loaded(spark.sql(statement)) == (1, 1)
        assert _loaded(spark.sql(statement)) == (0, 0)
        assert_schema(spark, "my_pipe_data", {"id": "string", "name": "string", "city": "string"})
        rows = [("1", "ann", None), ("2", "cy", None), ("3", "bo", "Oslo")]
        assert_table(spark, "my_pipe_data", ["id", "name", "city"], rows)
    finally:
        spark.sql("DROP TABLE IF EXISTS my_pipe_data")


def test_placeholder_table_infer_schema(spark, tmp_path):
    """examples: the empty placeholder table and ``FORMAT_OPTIONS ('inferSchema' = 'true')``
    ``COPY_OPTIONS ('mergeSchema' = 'true')``: typed columns from JSON, then a rerun."""
    source = str(tmp_path / "path" / "to" / "files")
    write_json(
        source,
        "a.json",
        [{"id": 1, "price": 2.5, "ok": True}, {"id": 2, "price": None, "ok": False}],
    )
    write_json(source, "b.json", [{"id": 3, "price": 4}])  # no "ok": NULL
    spark.sql("DROP TABLE IF EXISTS my_table")
    try:
        spark.sql("CREATE TABLE IF NOT EXISTS my_table;")
        statement = f"""
            COPY INTO my_table
            FROM '{source}'
            FILEFORMAT = JSON
            FORMAT_OPTIONS ('inferSchema' = 'true')
            COPY_OPTIONS ('mergeSchema' = 'true');
        """  # changed: path (was /path/to/files); <format> is JSON
        assert _loaded(spark.sql(statement)) == (3, 3)
        assert _loaded(spark.sql(statement)) == (0, 0)
        assert_schema(spark, "my_table", {"id": "bigint", "ok": "boolean", "price": "double"})
        rows = [(1, 2.5, True), (2, None, False), (3, 4.0, None)]
        assert_table(spark, "my_table", ["id", "price", "ok"], rows)
    finally:
        spark.sql("DROP TABLE IF EXISTS my_table")
