"""Every FILEFORMAT COPY INTO reads, into typed tables and schemaless ones."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os

import fastavro
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from headwater.copyinto import copy_into, create_schemaless_table
from tests.copyinto.helpers import result, rows, table, write_text
from tests.engine_marks import headwater_engine_only

SCHEMALESS = "tables without columns are entries of headwater's catalog"

EXPECTED = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]


def _arrow() -> pa.Table:
    return pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", "b"]})


def _write(src, fmt: str) -> None:
    os.makedirs(src, exist_ok=True)
    if fmt == "csv":
        write_text(src, "x.csv", "id,name\n1,a\n2,b\n")
    elif fmt == "json":
        write_text(src, "x.json", '{"id": 1, "name": "a"}\n{"id": 2, "name": "b"}\n')
    elif fmt == "parquet":
        pq.write_table(_arrow(), str(src / "x.parquet"))
    elif fmt == "orc":
        orc.write_table(_arrow(), str(src / "x.orc"))
    elif fmt == "avro":
        schema = {
            "type": "record",
            "name": "r",
            "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}],
        }
        with open(src / "x.avro", "wb") as f:
            fastavro.writer(f, schema, EXPECTED, codec="deflate")


OPTIONS = {"csv": {"header": "true", "inferSchema": "true"}}


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet", "orc", "avro"])
def test_format_into_a_typed_table(spark, tmp_path, fmt):
    src = tmp_path / "src"
    _write(src, fmt)
    path = tmp_path / "t"
    target = table(spark, path)
    opts = OPTIONS.get(fmt)
    assert result(copy_into(spark, target, str(src), fmt.upper(), format_options=opts)) == (2, 2, 0)
    assert rows(path) == EXPECTED
    assert result(copy_into(spark, target, str(src), fmt, format_options=opts)) == (0, 0, 0)


@headwater_engine_only(SCHEMALESS)
@pytest.mark.parametrize("fmt", ["csv", "json", "parquet", "orc", "avro"])
def test_format_into_a_schemaless_table(spark, tmp_path, fmt):
    src = tmp_path / "src"
    _write(src, fmt)
    opts = OPTIONS.get(fmt)
    name = f"copyinto_formats.schemaless_{fmt}"
    create_schemaless_table(spark, name, str(tmp_path / "s"))
    copy_into(spark, name, str(src), fmt, format_options=opts, copy_options={"mergeSchema": "true"})
    df = spark.table(name)
    assert [(f.name, f.dataType.simpleString()) for f in df.schema] == [
        ("id", "bigint"),
        ("name", "string"),
    ]
    assert sorted(tuple(r) for r in df.collect()) == [(1, "a"), (2, "b")]


def test_text_format(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    write_text(src, "a.txt", "first line\nsecond line\r\n\nlast")
    target = table(spark, path, "value string")
    assert result(copy_into(spark, target, str(src), "TEXT")) == (4, 4, 0)
    assert sorted(r["value"] for r in rows(path)) == ["", "first line", "last", "second line"]


@headwater_engine_only(SCHEMALESS)
def test_binaryfile_format(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    os.makedirs(src)
    (src / "a.bin").write_bytes(b"\x00\x01payload")
    create_schemaless_table(spark, "copyinto_formats.binary", str(path))
    copy_into(
        spark, "copyinto_formats.binary", str(src), "BINARYFILE",
        copy_options={"mergeSchema": "true"},
    )  # fmt: skip
    (got,) = rows(path)
    assert got["content"] == b"\x00\x01payload" and got["length"] == 9
    assert got["path"].endswith("a.bin") and isinstance(got["modificationTime"], dt.datetime)


def test_json_variants_multiline_gzip_nested(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    os.makedirs(src)
    with gzip.open(src / "a.json.gz", "wt") as f:
        f.write(json.dumps({"id": 1, "tags": ["x", "y"], "inner": {"k": 5}}) + "\n")
    write_text(tmp_path / "ml", "b.json", '[\n {"id": 2,\n  "tags": [],\n  "inner": {"k": 6}}\n]')
    target = table(spark, path, "id bigint, tags array<string>, inner struct<k:int>")
    copy_into(spark, target, str(src), "JSON")
    copy_into(spark, target, str(tmp_path / "ml"), "JSON", format_options={"multiLine": "true"})
    assert rows(path) == [
        {"id": 1, "tags": ["x", "y"], "inner": {"k": 5}},
        {"id": 2, "tags": [], "inner": {"k": 6}},
    ]


def test_csv_options_sep_quote_encoding(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    os.makedirs(src)
    (src / "a.csv").write_bytes('id;name\n1;"caf\xe9; bar"\n'.encode("latin-1"))
    target = table(spark, path, "id int, name string")
    copy_into(
        spark, target, str(src), "CSV",
        format_options={"header": "true", "sep": ";", "encoding": "latin-1"},
    )  # fmt: skip
    assert rows(path) == [{"id": 1, "name": "café; bar"}]


def test_recursive_file_lookup_reads_key_value_directories_as_plain_ones(spark, tmp_path):
    src = tmp_path / "src"
    write_text(src / "day=2024-01-01", "a.json", '{"id": 1}\n')
    merge = {"mergeSchema": "true"}
    partitioned, plain = (
        table(spark, tmp_path / "p", "id bigint"),
        table(spark, tmp_path / "q", "id bigint"),
    )
    copy_into(spark, partitioned, str(src), "JSON", copy_options=merge)
    assert rows(tmp_path / "p") == [{"id": 1, "day": "2024-01-01"}]
    opts = {"recursiveFileLookup": "true"}
    copy_into(spark, plain, str(src), "JSON", format_options=opts, copy_options=merge)
    assert rows(tmp_path / "q") == [{"id": 1}]


def test_csv_format_options_from_the_shared_table(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    write_text(src, "a.csv", "# exported\nid|day|note\n1|08/04/2024|NA\n2|31/12/1999| x \n")
    target = table(spark, path, "id int, day date, note string")
    opts = {"header": "true", "sep": "|", "comment": "#", "dateFormat": "dd/MM/yyyy",
            "nullValue": "NA", "ignoreLeadingWhiteSpace": "true"}  # fmt: skip
    copy_into(spark, target, str(src), "CSV", format_options=opts)
    assert sorted(rows(path), key=lambda r: r["id"]) == [
        {"id": 1, "day": dt.date(2024, 4, 8), "note": None},
        {"id": 2, "day": dt.date(1999, 12, 31), "note": "x "},
    ]


def test_csv_empty_fields_are_null_by_default_as_spark_reads_them(spark, tmp_path):
    """Spark's CSV reader (nullValue and emptyValue both "") reads ``a,,b`` and ``a,"",b``
    as NULL in a string column too; ``emptyValue`` set apart keeps the quoted one."""
    src = tmp_path / "src"
    write_text(src, "a.csv", 'id,note\n1,\n2,""\n3,x\n')
    for name, opts in (("d", {}), ("e", {"emptyValue": "E"})):
        target = table(spark, tmp_path / name, "id int, note string")
        copy_into(spark, target, str(src), "CSV", format_options={"header": "true", **opts})
        notes = [r["note"] for r in sorted(rows(tmp_path / name), key=lambda r: r["id"])]
        assert notes == ([None, None, "x"] if not opts else [None, "E", "x"])


@headwater_engine_only(SCHEMALESS)
def test_json_column_null_throughout_one_file_takes_the_other_file_s_type(spark, tmp_path):
    # As Spark's JSON inference merges records: NULL gives no type; nested fields by name.
    src = tmp_path / "src"
    write_text(src, "a.json", '{"id": 1, "ok": true, "s": {"z": 1, "a": "x"}, "n": null}\n')
    write_text(src, "b.json", '{"id": 2, "ok": null, "s": null, "n": null}\n')
    name = "copyinto_formats.schemaless_nulls"
    create_schemaless_table(spark, name, str(tmp_path / "s"))
    copy_into(spark, name, str(src), "json", copy_options={"mergeSchema": "true"})
    df = spark.table(name)
    assert {f.name: f.dataType.simpleString() for f in df.schema} == {
        "id": "bigint",
        "ok": "boolean",
        "s": "struct<a:string,z:bigint>",
        "n": "string",
    }
    assert sorted(tuple(r) for r in df.select("id", "ok", "s.a", "s.z").collect()) == [
        (1, True, "x", 1),
        (2, None, None, None),
    ]
