"""headwater.formats, Parquet, Avro and ORC: files that carry their types, read into the
declared schema with rescue.

Pure pyarrow: these tests never start Spark (the reader runs inside Python workers).
"""

from __future__ import annotations

import datetime
import decimal
import json

import fastavro
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest
from pyspark.sql.types import (
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from headwater.errors import OptionError
from headwater.formats import CorruptFileError, NewColumnsFound, infer_file
from tests.formats.helpers import RESCUE, schema, write
from tests.formats.reading import cloud_opts, read, rescued, ts

# ------------------------------------------------------------------------------ parquet


def test_parquet_int_column_fits_string_and_long_schemas(tmp_path):
    path = str(tmp_path / "a.parquet")
    pq.write_table(pa.table({"n": pa.array([1, None, 3], pa.int32())}), path)
    assert read(path, "parquet", schema(n=StringType())) == [
        {"n": "1", RESCUE: None},
        {"n": None, RESCUE: None},
        {"n": "3", RESCUE: None},
    ]
    assert [r["n"] for r in read(path, "parquet", schema(n=LongType()))] == [1, None, 3]


def test_parquet_string_column_into_int_schema_rescues_bad_values(tmp_path):
    path = str(tmp_path / "a.parquet")
    pq.write_table(pa.table({"n": ["1", "two", "3", None, "99999999999"]}), path)
    assert read(path, "parquet", schema(n=IntegerType())) == [
        {"n": 1, RESCUE: None},
        {"n": None, RESCUE: rescued(path, n="two")},
        {"n": 3, RESCUE: None},
        {"n": None, RESCUE: None},
        {"n": None, RESCUE: rescued(path, n="99999999999")},
    ]


def test_parquet_missing_columns_are_null_and_extra_ones_rescued_or_dropped(tmp_path):
    path = str(tmp_path / "a.parquet")
    table = pa.table(
        {
            "id": [1, 2],
            "when": pa.array([datetime.datetime(2024, 1, 2), None], pa.timestamp("ms")),
            "extra": [1.5, None],
            "blob": [b"\x00", None],
        }
    )
    pq.write_table(table, path)
    sch = schema(id=LongType(), when=TimestampType(), missing=StringType())
    assert read(path, "parquet", sch) == [
        {
            "id": 1,
            "when": ts(2024, 1, 2),
            "missing": None,
            RESCUE: rescued(path, extra=1.5, blob="AA=="),
        },
        {"id": 2, "when": None, "missing": None, RESCUE: None},
    ]
    assert read(path, "parquet", sch, rescue=None) == [
        {"id": 1, "when": ts(2024, 1, 2), "missing": None},
        {"id": 2, "when": None, "missing": None},
    ]


def test_parquet_lossy_cast_is_rescued(tmp_path):
    path = str(tmp_path / "a.parquet")
    pq.write_table(pa.table({"x": [1.0, 2.5], "big": [1, 2**40]}), path)
    assert read(path, "parquet", schema(x=LongType(), big=IntegerType())) == [
        {"x": 1, "big": 1, RESCUE: None},
        {"x": None, "big": None, RESCUE: rescued(path, x=2.5, big=2**40)},
    ]


def test_not_a_parquet_file_raises_corrupt_file_error(tmp_path):
    path = write(tmp_path, "bad.parquet", b"this is not parquet")
    with pytest.raises(CorruptFileError, match=r"bad\.parquet"):
        read(path, "parquet", schema(id=LongType()))


# ------------------------------------------------------------------------------ avro


def avro_file(tmp_path, name: str, fields: list, records: list, codec="null") -> str:
    path = str(tmp_path / name)
    sch = fastavro.parse_schema({"type": "record", "name": "r", "fields": fields})
    with open(path, "wb") as f:
        fastavro.writer(f, sch, records, codec=codec)
    return path


AVRO_FIELDS = [
    {"name": "id", "type": "long"},
    {"name": "name", "type": ["null", "string"]},
    {"name": "score", "type": "float"},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "local", "type": ["null", {"type": "long", "logicalType": "local-timestamp-micros"}]},
    {
        "name": "price",
        "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
    },
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
    {"name": "raw", "type": {"type": "fixed", "name": "Two", "size": 2}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "counts", "type": {"type": "map", "values": "int"}},
    {
        "name": "addr",
        "type": [
            "null",
            {"type": "record", "name": "Addr", "fields": [{"name": "city", "type": "string"}]},
        ],
    },
    {"name": "home", "type": ["null", "Addr"]},  # a named type used again by its name
]


def test_avro_round_trips_types_from_its_writer_schema(tmp_path):
    at = ts(2024, 5, 6, 7, 8, 9, 123000)
    path = avro_file(
        tmp_path,
        "a.avro",
        AVRO_FIELDS,
        [
            {
                "id": 1,
                "name": "x",
                "score": 1.5,
                "day": datetime.date(2024, 5, 6),
                "at": at,
                "local": datetime.datetime(2024, 5, 6, 1, 2),
                "price": decimal.Decimal("12.34"),
                "kind": "B",
                "raw": b"\x00\x01",
                "tags": ["a", "b"],
                "counts": {"k": 2},
                "addr": {"city": "Oslo"},
                "home": None,
            },
            {
                "id": 2,
                "name": None,
                "score": -0.25,
                "day": datetime.date(1969, 12, 31),
                "at": ts(1970, 1, 1),
                "local": None,
                "price": decimal.Decimal("-0.01"),
                "kind": "A",
                "raw": b"zz",
                "tags": [],
                "counts": {},
                "addr": None,
                "home": {"city": "Bergen"},
            },
        ],
    )
    inferred = infer_file(path, *cloud_opts("avro"))
    assert inferred.simpleString() == (
        "struct<id:bigint,name:string,score:double,day:date,at:timestamp,local:timestamp_ntz,"
        "price:decimal(10,2),kind:string,raw:binary,tags:array<string>,"
        "counts:map<string,bigint>,addr:struct<city:string>,home:struct<city:string>>"
    )
    assert read(path, "avro", inferred) == [
        {
            "id": 1,
            "name": "x",
            "score": 1.5,
            "day": datetime.date(2024, 5, 6),
            "at": at,
            "local": datetime.datetime(2024, 5, 6, 1, 2),
            "price": decimal.Decimal("12.34"),
            "kind": "B",
            "raw": b"\x00\x01",
            "tags": ["a", "b"],
            "counts": [("k", 2)],
            "addr": {"city": "Oslo"},
            "home": None,
            RESCUE: None,
        },
        {
            "id": 2,
            "name": None,
            "score": -0.25,
            "day": datetime.date(1969, 12, 31),
            "at": ts(1970, 1, 1),
            "local": None,
            "price": decimal.Decimal("-0.01"),
            "kind": "A",
            "raw": b"zz",
            "tags": [],
            "counts": [],
            "addr": None,
            "home": {"city": "Bergen"},
            RESCUE: None,
        },
    ]


@pytest.mark.parametrize("codec", ["snappy", "zstandard", "deflate"])
def test_avro_compressed_with_sparks_codecs_reads(tmp_path, codec):
    path = avro_file(
        tmp_path,
        f"c-{codec}.avro",
        [{"name": "id", "type": "long"}],
        [{"id": i} for i in range(5)],
        codec,
    )
    assert [r["id"] for r in read(path, "avro", schema(id=LongType()))] == [0, 1, 2, 3, 4]


def test_avro_type_mismatch_is_rescued_like_parquet(tmp_path):
    fields = [
        {"name": "n", "type": "string"},
        {"name": "x", "type": "double"},
        {"name": "big", "type": "long"},
        {"name": "extra", "type": ["null", "bytes"]},
    ]
    rows = [
        {"n": "1", "x": 1.0, "big": 1, "extra": None},
        {"n": "two", "x": 2.5, "big": 2**40, "extra": b"\x00"},
    ]
    path = avro_file(tmp_path, "a.avro", fields, rows)
    sch = schema(n=IntegerType(), x=LongType(), big=IntegerType(), missing=StringType())
    assert read(path, "avro", sch) == [
        {"n": 1, "x": 1, "big": 1, "missing": None, RESCUE: None},
        {
            "n": None,
            "x": None,
            "big": None,
            "missing": None,
            RESCUE: rescued(path, n="two", x=2.5, big=2**40, extra="AA=="),
        },
    ]
    assert read(path, "avro", sch, rescue=None) == [
        {"n": 1, "x": 1, "big": 1, "missing": None},
        {"n": None, "x": None, "big": None, "missing": None},
    ]


def test_avro_nested_misfit_rescues_the_whole_record(tmp_path):
    inner = {"type": "record", "name": "In", "fields": [{"name": "a", "type": "string"}]}
    path = avro_file(
        tmp_path, "a.avro", [{"name": "s", "type": inner}], [{"s": {"a": "7"}}, {"s": {"a": "z"}}]
    )
    sch = schema(s=StructType([StructField("a", LongType())]))
    assert read(path, "avro", sch) == [
        {"s": {"a": 7}, RESCUE: None},
        {"s": None, RESCUE: rescued(path, s={"a": "z"})},
    ]


def test_avro_unions_time_uuid_and_records_of_several_kinds(tmp_path):
    a = {"type": "record", "name": "A", "fields": [{"name": "x", "type": "int"}]}
    b = {"type": "record", "name": "B", "fields": [{"name": "y", "type": "string"}]}
    fields = [
        {"name": "u", "type": ["null", "int", "string"]},
        {"name": "wide", "type": ["int", "long"]},
        {"name": "ab", "type": ["null", a, b]},
        {"name": "t", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
    ]
    uid = "12345678-1234-5678-1234-567812345678"
    rows = [
        {"u": 5, "wide": 2**40, "ab": ("A", {"x": 1}), "t": datetime.time(1, 2, 3, 4000),
         "tu": datetime.time(0, 0, 1, 5), "id": uid},
        {"u": "s", "wide": 1, "ab": ("B", {"y": "q"}), "t": datetime.time(0), "tu":
         datetime.time(0), "id": uid},
        {"u": None, "wide": 0, "ab": None, "t": datetime.time(0), "tu": datetime.time(0),
         "id": uid},
    ]  # fmt: skip
    path = avro_file(tmp_path, "a.avro", fields, rows)
    inferred = infer_file(path, *cloud_opts("avro"))
    assert inferred.simpleString() == (
        "struct<u:struct<member0:bigint,member1:string>,wide:bigint,"
        "ab:struct<member0:struct<x:bigint>,member1:struct<y:string>>,t:bigint,tu:bigint,"
        "id:string>"
    )
    assert read(path, "avro", inferred, rescue=None) == [
        {"u": {"member0": 5, "member1": None}, "wide": 2**40,
         "ab": {"member0": {"x": 1}, "member1": None}, "t": 3723004, "tu": 1000005, "id": uid},
        {"u": {"member0": None, "member1": "s"}, "wide": 1,
         "ab": {"member0": None, "member1": {"y": "q"}}, "t": 0, "tu": 0, "id": uid},
        {"u": None, "wide": 0, "ab": None, "t": 0, "tu": 0, "id": uid},
    ]  # fmt: skip


def test_avro_top_level_non_record_is_a_value_column_and_chunks_hold_batch_rows(tmp_path):
    path = str(tmp_path / "a.avro")
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema("long"), list(range(7)), codec="deflate")
    assert infer_file(path, *cloud_opts("avro")).simpleString() == "struct<value:bigint>"
    rows = read(path, "avro", schema(value=LongType()), batch_rows=3)
    assert rows == [{"value": i, RESCUE: None} for i in range(7)]


def test_avro_schema_option_reads_with_an_evolved_reader_schema(tmp_path):
    path = avro_file(tmp_path, "a.avro", [{"name": "id", "type": "int"}], [{"id": 1}])
    evolved = {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "id", "type": "long"},  # promoted
            {"name": "note", "type": "string", "default": "none"},
        ],
    }
    opts = {"avroSchema": json.dumps(evolved)}
    inferred = infer_file(path, *cloud_opts("avro", avroschema=opts["avroSchema"]))
    assert inferred.simpleString() == "struct<id:bigint,note:string>"
    assert read(path, "avro", inferred, opts) == [{"id": 1, "note": "none", RESCUE: None}]
    with pytest.raises(OptionError, match="avroSchema"):
        read(path, "avro", inferred, {"avroSchema": "{not json"})
    incompatible = {"type": "record", "name": "r", "fields": [{"name": "id", "type": "bytes"}]}
    with pytest.raises(CorruptFileError, match=r"a\.avro"):
        read(path, "avro", inferred, {"avroSchema": json.dumps(incompatible)})


def test_not_an_avro_file_or_a_truncated_one_raises_corrupt_file_error(tmp_path):
    bad = write(tmp_path, "bad.avro", b"this is not avro")
    with pytest.raises(CorruptFileError, match=r"bad\.avro"):
        read(bad, "avro", schema(id=LongType()))
    with pytest.raises(CorruptFileError, match=r"bad\.avro"):
        infer_file(bad, *cloud_opts("avro"))
    good = avro_file(tmp_path, "good.avro", [{"name": "id", "type": "long"}], [{"id": 1}] * 50)
    with open(good, "rb") as f:
        cut = write(tmp_path, "cut.avro", f.read()[:-30])
    with pytest.raises(CorruptFileError, match=r"cut\.avro"):
        read(cut, "avro", schema(id=LongType()))


def test_detect_new_on_avro_and_orc_columns(tmp_path):
    path = avro_file(
        tmp_path, "a.avro", [{"name": "id", "type": "long"}, {"name": "n", "type": "long"}], []
    )
    with pytest.raises(NewColumnsFound) as e:
        read(path, "avro", schema(id=LongType()), detect_new=True)
    assert e.value.columns == ["n"]
    orc_path = str(tmp_path / "a.orc")
    orc.write_table(pa.table({"id": [1], "n": [2]}), orc_path)
    with pytest.raises(NewColumnsFound) as e:
        read(orc_path, "orc", schema(id=LongType()), detect_new=True)
    assert e.value.columns == ["n"]
    assert read(orc_path, "orc", schema(id=LongType(), n=LongType()), detect_new=True) == [
        {"id": 1, "n": 2, RESCUE: None}
    ]


# ------------------------------------------------------------------------------ orc


def test_orc_round_trips_types_and_reads_timestamps_as_utc_microseconds(tmp_path):
    path = str(tmp_path / "a.orc")
    table = pa.table(
        {
            "id": pa.array([1, None], pa.int32()),
            "name": ["x", None],
            "at": pa.array([1_704_067_200_123_456_789, None], pa.timestamp("ns")),
            "day": pa.array([datetime.date(2024, 1, 2), None]),
            "price": pa.array([decimal.Decimal("1.50"), None], pa.decimal128(10, 2)),
            "raw": [b"\x00", None],
            "tags": [["a"], None],
            "counts": pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int64())),
            "s": pa.array(
                [{"a": 1, "when": 1_000_999}, None],
                pa.struct([("a", pa.int64()), ("when", pa.timestamp("ns"))]),
            ),
        }
    )
    orc.write_table(table, path)
    inferred = infer_file(path, *cloud_opts("orc"))
    assert inferred.simpleString() == (
        "struct<id:bigint,name:string,at:timestamp,day:date,price:decimal(10,2),raw:binary,"
        "tags:array<string>,counts:map<string,bigint>,s:struct<a:bigint,when:timestamp>>"
    )
    assert read(path, "orc", inferred) == [
        {
            "id": 1,
            "name": "x",
            "at": ts(2024, 1, 1, 0, 0, 0, 123456),
            "day": datetime.date(2024, 1, 2),
            "price": decimal.Decimal("1.50"),
            "raw": b"\x00",
            "tags": ["a"],
            "counts": [("k", 1)],
            "s": {"a": 1, "when": ts(1970, 1, 1, 0, 0, 0, 1000)},
            RESCUE: None,
        },
        {
            "id": None,
            "name": None,
            "at": None,
            "day": None,
            "price": None,
            "raw": None,
            "tags": None,
            "counts": None,
            "s": None,
            RESCUE: None,
        },
    ]


def test_orc_type_mismatch_is_rescued_and_extra_columns_rescued_or_dropped(tmp_path):
    path = str(tmp_path / "a.orc")
    table = pa.table({"n": ["1", "two", None], "x": [1.0, 2.5, None], "extra": [None, 7, None]})
    orc.write_table(table, path)
    sch = schema(n=IntegerType(), x=LongType(), missing=StringType())
    assert read(path, "orc", sch) == [
        {"n": 1, "x": 1, "missing": None, RESCUE: None},
        {"n": None, "x": None, "missing": None, RESCUE: rescued(path, n="two", x=2.5, extra=7)},
        {"n": None, "x": None, "missing": None, RESCUE: None},
    ]
    assert read(path, "orc", sch, rescue=None) == [
        {"n": 1, "x": 1, "missing": None},
        {"n": None, "x": None, "missing": None},
        {"n": None, "x": None, "missing": None},
    ]
    assert read(path, "orc", schema(missing=StringType()), rescue=None) == [{"missing": None}] * 3


def test_orc_stripes_are_rebatched(tmp_path):
    path = str(tmp_path / "a.orc")
    orc.write_table(pa.table({"id": list(range(10))}), path, stripe_size=64)
    assert [r["id"] for r in read(path, "orc", schema(id=LongType()), batch_rows=4)] == list(
        range(10)
    )


def test_not_an_orc_file_raises_corrupt_file_error(tmp_path):
    path = write(tmp_path, "bad.orc", b"this is not orc")
    with pytest.raises(CorruptFileError, match=r"bad\.orc"):
        read(path, "orc", schema(id=LongType()))
