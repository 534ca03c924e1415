"""Avro, ORC and binaryFile through the ``cloudFiles`` source: real streams into Delta sinks."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os

import fastavro
import pyarrow as pa
import pyarrow.orc as orc
import pytest
from deltalake import DeltaTable

from headwater.autoloader.options import CloudFilesOptions
from headwater.errors import OptionError
from headwater.formats.options import AvroOptions, OrcOptions

UTC = dt.timezone.utc


@pytest.fixture
def dirs(tmp_path):
    return {k: str(tmp_path / k) for k in ("land", "ckpt", "out")}


def _ingest(spark, d, fmt, **options):
    reader = spark.readStream.format("cloudFiles").option("cloudFiles.format", fmt)
    reader = reader.option("cloudFiles.schemaLocation", d["ckpt"])
    for k, v in options.items():
        reader = reader.option(k.replace("__", "."), v)
    q = (
        reader.load(d["land"])
        .writeStream.format("delta")
        .option("checkpointLocation", d["ckpt"])
        .option("mergeSchema", "true")
        .trigger(availableNow=True)
        .start(d["out"])
    )
    q.awaitTermination()
    return q


def _table(spark, d, order):
    """The sink's schema as Spark sees it, and its rows (tz-aware timestamps, via delta-rs)."""
    schema = spark.read.format("delta").load(d["out"]).schema.simpleString()
    rows = DeltaTable(d["out"]).to_pyarrow_table().sort_by(order).to_pylist()
    return schema, rows


def _rescued(path, **values):
    return {**values, "_file_path": path}


def test_avro_stream_infers_the_writer_schema_and_rescues_a_hinted_mismatch(spark, dirs):
    os.makedirs(dirs["land"])
    addr = {"type": "record", "name": "Addr", "fields": [{"name": "city", "type": "string"}]}
    schema = fastavro.parse_schema(
        {
            "type": "record",
            "name": "Order",
            "fields": [
                {"name": "id", "type": "long"},
                {"name": "name", "type": ["null", "string"]},
                {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
                {"name": "day", "type": {"type": "int", "logicalType": "date"}},
                {
                    "name": "price",
                    "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
                },
                {"name": "tags", "type": {"type": "array", "items": "string"}},
                {"name": "attrs", "type": {"type": "map", "values": "string"}},
                {"name": "addr", "type": ["null", addr]},
                {"name": "score", "type": "string"},
            ],
        }
    )
    at = dt.datetime(2024, 3, 4, 5, 6, 7, 890000, UTC)
    first = {
        "id": 1,
        "name": "a",
        "at": at,
        "day": dt.date(2024, 3, 4),
        "price": decimal.Decimal("9.99"),
        "tags": ["x", "y"],
        "attrs": {"k": "v"},
        "addr": {"city": "Oslo"},
        "score": "1.5",
    }
    second = {**first, "id": 2, "name": None, "tags": [], "attrs": {}, "addr": None}
    a, b = os.path.join(dirs["land"], "a.avro"), os.path.join(dirs["land"], "b.avro")
    with open(a, "wb") as f:
        fastavro.writer(f, schema, [first])
    with open(b, "wb") as f:
        fastavro.writer(f, schema, [{**second, "score": "oops"}], codec="deflate")

    _ingest(spark, dirs, "avro", cloudFiles__schemaHints="score double")

    sch, rows = _table(spark, dirs, "id")
    assert sch == (
        "struct<id:bigint,name:string,at:timestamp,day:date,price:decimal(9,2),"
        "tags:array<string>,attrs:map<string,string>,addr:struct<city:string>,score:double,"
        "_rescued_data:string>"
    )
    common = {"at": at, "day": dt.date(2024, 3, 4), "price": decimal.Decimal("9.99")}
    for r in rows:
        r["_rescued_data"] = r["_rescued_data"] and json.loads(r["_rescued_data"])
    assert rows == [
        {"id": 1, "name": "a", **common, "tags": ["x", "y"], "attrs": [("k", "v")],
         "addr": {"city": "Oslo"}, "score": 1.5, "_rescued_data": None},
        {"id": 2, "name": None, **common, "tags": [], "attrs": [], "addr": None, "score": None,
         "_rescued_data": _rescued(b, score="oops")},
    ]  # fmt: skip


def test_orc_stream_reads_types_from_the_files_and_rescues_a_hinted_mismatch(spark, dirs):
    os.makedirs(dirs["land"])
    table = pa.table(
        {
            "id": pa.array([1, 2], pa.int32()),
            "code": ["7", "x"],
            "at": pa.array([1_704_067_200_000_001_999, None], pa.timestamp("ns")),
            "price": pa.array([decimal.Decimal("1.25"), None], pa.decimal128(8, 2)),
            "tags": [["a"], []],
            "s": [{"n": 1, "t": "p"}, None],
        }
    )
    path = os.path.join(dirs["land"], "part-0.orc")
    orc.write_table(table, path)
    more = os.path.join(dirs["land"], "part-1.orc")
    orc.write_table(table.slice(0, 1).set_column(0, "id", pa.array([3], pa.int32())), more)

    _ingest(spark, dirs, "orc", cloudFiles__schemaHints="code int")

    sch, rows = _table(spark, dirs, "id")
    assert sch == (
        "struct<id:bigint,code:int,at:timestamp,price:decimal(8,2),tags:array<string>,"
        "s:struct<n:bigint,t:string>,_rescued_data:string>"
    )
    at = dt.datetime(2024, 1, 1, 0, 0, 0, 1, UTC)  # nanoseconds truncated, as in Spark
    one = {"code": 7, "at": at, "price": decimal.Decimal("1.25"), "tags": ["a"]}
    assert rows == [
        {"id": 1, **one, "s": {"n": 1, "t": "p"}, "_rescued_data": None},
        {"id": 2, "code": None, "at": None, "price": None, "tags": [], "s": None,
         "_rescued_data": json.dumps(_rescued(path, code="x"), separators=(",", ":"))},
        {"id": 3, **one, "s": {"n": 1, "t": "p"}, "_rescued_data": None},
    ]  # fmt: skip


def test_binary_file_stream_is_one_row_per_file_matching_the_glob(spark, dirs):
    os.makedirs(dirs["land"])
    files = {"a.png": b"\x89PNG\r\n\x1a\n\x00", "b.png": b"", "notes.txt": b"skip me"}
    for i, (name, data) in enumerate(files.items()):
        path = os.path.join(dirs["land"], name)
        with open(path, "wb") as f:
            f.write(data)
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))

    _ingest(spark, dirs, "binaryFile", pathGlobFilter="*.png")

    sch, rows = _table(spark, dirs, "path")
    assert sch == "struct<path:string,modificationTime:timestamp,length:bigint,content:binary>"
    assert rows == [
        {
            "path": os.path.join(dirs["land"], name),
            "modificationTime": dt.datetime.fromtimestamp(1_700_000_000 + i, UTC),
            "length": len(files[name]),
            "content": files[name],
        }
        for i, name in enumerate(["a.png", "b.png"])
    ]


def test_format_options_of_the_new_formats():
    """Not a stream: what the option parser accepts for them (and xml still planned)."""

    def parse(fmt, user_schema=False, **options):
        base = {"cloudFiles.format": fmt, "cloudFiles.schemaLocation": "/tmp/x"}
        return CloudFilesOptions.parse({**base, **options}, user_schema=user_schema)

    avro = parse("avro", avroSchema='{"type": "long"}', mergeSchema="true")
    assert avro.format_options == AvroOptions(avro_schema='{"type": "long"}')
    assert avro.rescue_column == "_rescued_data"
    assert parse("ORC", mergeSchema="true").format_options == OrcOptions()
    binary = parse("binaryFile", pathGlobFilter="*.png")
    assert (binary.format, binary.rescue_column, binary.glob) == ("binaryfile", None, "*.png")
    with pytest.raises(OptionError, match="avroSchema|avroschema"):
        parse("orc", avroSchema="{}")
    with pytest.raises(OptionError, match="rescuedDataColumn"):
        parse("binaryFile", rescuedDataColumn="_r")
    with pytest.raises(OptionError, match="xml.*not supported yet"):
        parse("xml")


def test_json_inference_merges_a_file_s_nulls_into_other_files_types_and_sorts_nested_fields(
    tmp_path,
):
    # Spark's JSON inference: a column NULL throughout one file takes another file's type
    # (a column no file types is string), and nested struct fields are sorted by name.
    from headwater.autoloader.discovery import Listed
    from headwater.autoloader.schema import infer

    land = tmp_path / "land"
    land.mkdir()
    rows = {
        "a.json": [
            {"id": 1, "ok": True, "none": None, "tags": {"page": {"name": "h", "id": 7}, "e": "c"}},
            {"id": 2, "ok": None, "none": None, "tags": None, "xs": []},
        ],
        "b.json": [{"id": 3, "ok": None, "none": None, "tags": None, "xs": [1.5]}],
    }
    listed = []
    for i, (name, records) in enumerate(rows.items()):
        (land / name).write_text("".join(json.dumps(r) + "\n" for r in records))
        listed.append(Listed(str(land / name), (land / name).stat().st_size, 1000 * (2 - i)))
    for order in (listed, listed[::-1]):
        opts = CloudFilesOptions.parse(
            {
                "cloudFiles.format": "json",
                "cloudFiles.inferColumnTypes": "true",
                "cloudFiles.schemaLocation": str(tmp_path / "schema"),
            },
            False,
        )
        schema, parts = infer(order, opts, str(land))
        assert {f.name: f.dataType.simpleString() for f in schema.fields} == {
            "id": "bigint",
            "ok": "boolean",
            "none": "string",
            "tags": "struct<e:string,page:struct<id:bigint,name:string>>",
            "xs": "array<double>",
        }
        assert parts == []
