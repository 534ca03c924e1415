"""headwater.formats: one file to Arrow batches of the declared schema, with rescue.

Pure pyarrow: these tests never start Spark (the reader runs inside Python workers).
"""

from __future__ import annotations

import bz2
import datetime
import decimal
import gzip
import json
import os

import fastavro
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from headwater.errors import OptionError
from headwater.formats import (
    BINARY_FILE_SCHEMA,
    CorruptFileError,
    NewColumnsFound,
    chunks,
    infer_file,
    json_reader,
    parse_format_options,
    read_file,
)
from headwater.formats import FORMATS as SUPPORTED_FORMATS
from tests.formats.helpers import RESCUE, schema, write

UTC = datetime.timezone.utc


def jsonl(*rows) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


def read(path, fmt, sch, options=None, rescue=RESCUE, detect_new=False, batch_rows=65536):
    """All rows of the file; every batch must carry exactly the promised Arrow schema."""
    fields = list(sch.fields) + ([StructField(rescue, StringType())] if rescue else [])
    expected = to_arrow_schema(StructType(fields), timezone="UTC")
    rows = []
    opts = parse_format_options(fmt, options or {})
    for batch in read_file(path, sch, opts, rescue, detect_new, batch_rows):
        assert batch.schema == expected
        assert batch.num_rows <= batch_rows
        rows.extend(batch.to_pylist())
    return rows


def fopts(fmt: str, options: dict):
    return parse_format_options(fmt, options)


def rescued(path: str, **values) -> str:
    return json.dumps({**values, "_file_path": path}, separators=(",", ":"))


def ts(*args) -> datetime.datetime:
    return datetime.datetime(*args, tzinfo=UTC)


# ------------------------------------------------------------------------------ json


def test_typed_json_round_trips_into_the_exact_arrow_schema(tmp_path):
    sch = schema(
        id=LongType(),
        name=StringType(),
        at=TimestampType(),
        amount=DecimalType(10, 2),
        day=DateType(),
        ok=BooleanType(),
        score=DoubleType(),
        tags=ArrayType(StringType()),
        point=StructType([StructField("x", IntegerType()), StructField("y", IntegerType())]),
    )
    row = {
        "id": 1,
        "name": "a",
        "at": "2024-01-02T03:04:05Z",
        "amount": 1.25,
        "day": "2024-01-02",
        "ok": True,
        "score": 0.5,
        "tags": ["x", "y"],
        "point": {"x": 1, "y": 2},
    }
    path = write(tmp_path, "a.json", jsonl(row, {"id": 2}))
    assert read(path, "json", sch) == [
        {
            "id": 1,
            "name": "a",
            "at": ts(2024, 1, 2, 3, 4, 5),
            "amount": decimal.Decimal("1.25"),
            "day": datetime.date(2024, 1, 2),
            "ok": True,
            "score": 0.5,
            "tags": ["x", "y"],
            "point": {"x": 1, "y": 2},
            RESCUE: None,
        },
        {
            "id": 2,
            "name": None,
            "at": None,
            "amount": None,
            "day": None,
            "ok": None,
            "score": None,
            "tags": None,
            "point": None,
            RESCUE: None,
        },
    ]


def test_declared_non_nullable_fields_come_out_nullable(tmp_path):
    sch = StructType([StructField("id", LongType(), nullable=False)])
    path = write(tmp_path, "a.json", jsonl({"other": 1}))
    batches = list(read_file(path, sch, fopts("json", {}), None))
    assert batches[0].schema == pa.schema([pa.field("id", pa.int64(), nullable=True)])
    assert batches[0].to_pylist() == [{"id": None}]


def test_strings_schema_takes_the_json_text_of_numbers_booleans_objects_and_arrays(tmp_path):
    sch = schema(a=StringType(), b=StringType(), c=StringType(), d=StringType())
    path = write(
        tmp_path,
        "a.json",
        jsonl(
            {"a": 12, "b": True, "c": "2024-01-02T00:00:00", "d": 2.5},
            {"a": "x", "b": {"k": [1, None]}, "c": "plain", "d": [1, "a"]},
        ),
    )
    assert read(path, "json", sch) == [
        {"a": "12", "b": "true", "c": "2024-01-02T00:00:00", "d": "2.5", RESCUE: None},
        {"a": "x", "b": '{"k":[1,null]}', "c": "plain", "d": '[1,"a"]', RESCUE: None},
    ]


def test_integers_beyond_64_bits_keep_every_digit(tmp_path):
    big = 2**64 - 1
    path = write(
        tmp_path, "a.json", jsonl({"s": big, "n": big, "x": big}, {"s": 1, "n": 2, "x": 1.5})
    )
    assert read(path, "json", schema(s=StringType(), n=LongType())) == [
        {"s": str(big), "n": None, RESCUE: f'{{"n":{big},"x":{big},"_file_path":"{path}"}}'},
        {"s": "1", "n": 2, RESCUE: rescued(path, x=1.5)},
    ]


def test_strings_schema_keeps_timestamp_like_strings_verbatim_on_the_fast_path(tmp_path):
    sch = schema(a=StringType(), b=StringType())
    lines = [{"a": 1, "b": "2024-01-02"}, {"a": 2, "b": "2024-01-03 10:00:00"}] * 50
    path = write(tmp_path, "a.json", jsonl(*lines))
    rows = read(path, "json", sch)
    assert [r["b"] for r in rows[:2]] == ["2024-01-02", "2024-01-03 10:00:00"]
    assert [r["a"] for r in rows[:2]] == ["1", "2"] and len(rows) == 100


def test_nested_strings_schema_takes_numbers_and_mixed_arrays_as_text(tmp_path):
    sch = schema(
        s=StructType([StructField("x", StringType())]),
        arr=ArrayType(StringType()),
    )
    path = write(tmp_path, "a.json", jsonl({"s": {"x": 1}, "arr": [1, "a", True]}))
    assert read(path, "json", sch) == [{"s": {"x": "1"}, "arr": ["1", "a", "true"], RESCUE: None}]


def test_value_of_the_wrong_type_is_null_and_rescued_with_its_original_value(tmp_path):
    sch = schema(id=IntegerType(), s=StructType([StructField("x", IntegerType())]), n=StringType())
    path = write(
        tmp_path,
        "a.json",
        jsonl(
            {"id": "abc", "s": "not an object", "n": "ok"},
            {"id": 1.5, "n": "ok"},
            {"id": 3000000000, "n": "ok"},
            {"id": 7, "s": {"x": 1}, "n": "ok"},
        ),
    )
    assert read(path, "json", sch) == [
        {"id": None, "s": None, "n": "ok", RESCUE: rescued(path, id="abc", s="not an object")},
        {"id": None, "s": None, "n": "ok", RESCUE: rescued(path, id=1.5)},
        {"id": None, "s": None, "n": "ok", RESCUE: rescued(path, id=3000000000)},
        {"id": 7, "s": {"x": 1}, "n": "ok", RESCUE: None},
    ]


def test_type_mismatch_without_rescue_column_is_just_null(tmp_path):
    path = write(tmp_path, "a.json", jsonl({"id": "abc"}, {"id": 2}))
    assert read(path, "json", schema(id=LongType()), rescue=None) == [{"id": None}, {"id": 2}]


def test_field_matching_a_column_only_by_case_is_rescued_not_placed(tmp_path):
    path = write(tmp_path, "a.json", jsonl({"ID": 5, "name": "a"}))
    assert read(path, "json", schema(id=LongType(), name=StringType())) == [
        {"id": None, "name": "a", RESCUE: rescued(path, ID=5)}
    ]


def test_unknown_fields_are_rescued_with_a_rescue_column(tmp_path):
    path = write(tmp_path, "a.json", jsonl({"id": 1, "extra": {"k": "v"}, "more": [1]}))
    assert read(path, "json", schema(id=LongType())) == [
        {"id": 1, RESCUE: rescued(path, extra={"k": "v"}, more=[1])}
    ]


def test_unknown_fields_are_dropped_without_a_rescue_column(tmp_path):
    path = write(tmp_path, "a.json", jsonl({"id": 1, "extra": 2, "ID": 3}))
    assert read(path, "json", schema(id=LongType()), rescue=None) == [{"id": 1}]


def test_unknown_timestamp_like_string_is_rescued_verbatim(tmp_path):
    path = write(tmp_path, "a.json", jsonl({"id": 1, "when": "2024-01-02T03:04:05"}))
    assert read(path, "json", schema(id=LongType())) == [
        {"id": 1, RESCUE: rescued(path, when="2024-01-02T03:04:05")}
    ]


def test_rescued_text_is_escaped_exactly_as_json_dumps_would(tmp_path):
    odd = ['say "hi"', "back\\slash", "two\nlines\tand\rtab", "café ☕", "bell\x07", ""]
    path = write(tmp_path, "a.json", jsonl(*[{"id": i, "note": v} for i, v in enumerate(odd)]))
    rows = read(path, "json", schema(id=LongType()))
    expected = [
        json.dumps({"note": v, "_file_path": path}, separators=(",", ":"), ensure_ascii=False)
        for v in odd
    ]
    assert [r[RESCUE] for r in rows] == expected
    assert [json.loads(r[RESCUE])["note"] for r in rows] == odd


def test_rescued_numbers_booleans_and_nulls(tmp_path):
    path = write(tmp_path, "a.json", jsonl({"a": 1, "b": True, "c": None, "d": 2.5, "e": [None]}))
    assert read(path, "json", schema(x=LongType())) == [
        {"x": None, RESCUE: rescued(path, a=1, b=True, d=2.5, e=[None])}
    ]


def test_nested_misfit_rescues_the_whole_top_level_value(tmp_path):
    point = StructType([StructField("x", IntegerType()), StructField("y", IntegerType())])
    sch = schema(id=LongType(), p=point)
    path = write(
        tmp_path,
        "a.json",
        jsonl(
            {"id": 1, "p": {"x": 1, "y": "two"}},
            {"id": 2, "p": {"x": 1, "z": 3}},
            {"id": 3, "p": {"x": 1, "y": 2}},
        ),
    )
    assert read(path, "json", sch) == [
        {"id": 1, "p": None, RESCUE: rescued(path, p={"x": 1, "y": "two"})},
        {"id": 2, "p": None, RESCUE: rescued(path, p={"x": 1, "z": 3})},
        {"id": 3, "p": {"x": 1, "y": 2}, RESCUE: None},
    ]


def test_nested_misfit_inside_an_array_rescues_the_whole_array(tmp_path):
    sch = schema(xs=ArrayType(LongType()))
    path = write(tmp_path, "a.json", jsonl({"xs": [1, 2]}, {"xs": [1, "b"]}))
    assert read(path, "json", sch) == [
        {"xs": [1, 2], RESCUE: None},
        {"xs": None, RESCUE: rescued(path, xs=[1, "b"])},
    ]


def test_json_object_fills_a_map_column(tmp_path):
    sch = schema(m=MapType(StringType(), LongType()))
    path = write(tmp_path, "a.json", jsonl({"m": {"a": 1, "b": 2}}, {"m": {"a": "x"}}))
    assert read(path, "json", sch) == [
        {"m": [("a", 1), ("b", 2)], RESCUE: None},
        {"m": None, RESCUE: rescued(path, m={"a": "x"})},
    ]


def test_malformed_line_becomes_a_corrupt_record_and_nothing_else_is_lost(tmp_path):
    path = write(tmp_path, "a.json", jsonl({"id": 1}, "{not json", "", {"id": 3}))
    assert read(path, "json", schema(id=LongType())) == [
        {"id": 1, RESCUE: None},
        {"id": None, RESCUE: rescued(path, _corrupt_record="{not json")},
        {"id": 3, RESCUE: None},
    ]


def test_malformed_line_without_rescue_column_raises_naming_file_and_line(tmp_path):
    path = write(tmp_path, "a.json", jsonl({"id": 1}, "", "{not json", {"id": 3}))
    with pytest.raises(CorruptFileError, match=r"a\.json.*line 3") as info:
        read(path, "json", schema(id=LongType()), rescue=None)
    assert info.value.path == path


def test_empty_and_blank_lines_are_skipped(tmp_path):
    path = write(tmp_path, "a.json", '\n{"id": 1}\n\n   \n{"id": 2}\n\n')
    assert read(path, "json", schema(id=LongType())) == [
        {"id": 1, RESCUE: None},
        {"id": 2, RESCUE: None},
    ]


def test_rows_keep_file_order_when_some_pieces_need_the_per_row_path(tmp_path, monkeypatch):
    monkeypatch.setattr(chunks, "CHUNK", 4096)
    monkeypatch.setattr(chunks, "PIECE", 512)
    lines = [{"id": i, "v": "x"} for i in range(2000)]
    lines[700] = {"id": 700, "v": 1}  # a number in a string column: still fast (inferred)
    lines[1500] = "{broken"
    path = write(tmp_path, "a.json", jsonl(*lines))
    rows = read(path, "json", schema(id=LongType(), v=StringType()), batch_rows=333)
    assert len(rows) == 2000
    assert [r["id"] for r in rows[:1500]] == list(range(1500))
    assert rows[700] == {"id": 700, "v": "1", RESCUE: None}
    assert rows[1500] == {"id": None, "v": None, RESCUE: rescued(path, _corrupt_record="{broken")}
    assert [r["id"] for r in rows[1501:]] == list(range(1501, 2000))


def test_corrupt_line_number_is_counted_across_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(chunks, "CHUNK", 1024)
    monkeypatch.setattr(chunks, "PIECE", 256)
    lines = [{"id": i} for i in range(500)]
    lines[400] = "{broken"
    path = write(tmp_path, "a.json", jsonl(*lines))
    with pytest.raises(CorruptFileError, match="line 401"):
        read(path, "json", schema(id=LongType()), rescue=None)


def test_multiline_json_array_of_objects(tmp_path):
    doc = json.dumps([{"id": 1, "x": "a"}, {"id": 2, "extra": True}], indent=2)
    path = write(tmp_path, "a.json", doc)
    assert read(path, "json", schema(id=LongType(), x=StringType()), {"multiLine": "true"}) == [
        {"id": 1, "x": "a", RESCUE: None},
        {"id": 2, "x": None, RESCUE: rescued(path, extra=True)},
    ]


def test_multiline_json_single_document_and_malformed_document(tmp_path):
    good = write(tmp_path, "good.json", '{\n  "id": 1\n}\n')
    bad = write(tmp_path, "bad.json", '{\n  "id": 1,\n')
    opts = {"multiline": "true"}
    assert read(good, "json", schema(id=LongType()), opts) == [{"id": 1, RESCUE: None}]
    assert read(bad, "json", schema(id=LongType()), opts) == [
        {"id": None, RESCUE: rescued(bad, _corrupt_record='{\n  "id": 1,\n')}
    ]
    with pytest.raises(CorruptFileError, match="bad.json"):
        read(bad, "json", schema(id=LongType()), opts, rescue=None)


def zstd(data: bytes) -> bytes:
    """A zstd frame as the zstd tool writes it."""
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, "zstd") as out:
        out.write(data)
    return sink.getvalue().to_pybytes()


@pytest.mark.parametrize(
    ("suffix", "compress"),
    [(".gz", gzip.compress), (".bz2", bz2.compress), (".zst", zstd), (".zstd", zstd)],
)
def test_compressed_json_is_decompressed_by_extension(tmp_path, suffix, compress):
    path = write(tmp_path, "a.json" + suffix, compress(jsonl({"id": 1}, {"id": 2}).encode()))
    assert read(path, "json", schema(id=LongType())) == [
        {"id": 1, RESCUE: None},
        {"id": 2, RESCUE: None},
    ]


def test_truncated_gzip_raises_corrupt_file_error_naming_the_file(tmp_path):
    data = gzip.compress(jsonl(*[{"id": i} for i in range(5000)]).encode())
    path = write(tmp_path, "cut.json.gz", data[: len(data) // 2])
    with pytest.raises(CorruptFileError, match=r"cut\.json\.gz") as info:
        read(path, "json", schema(id=LongType()))
    assert info.value.path == path


@pytest.mark.parametrize(
    ("name", "fmt", "data"),
    [
        ("a.json", "json", b""),
        ("b.json", "json", b"\n\n"),
        (
            "c.json.gz",
            "json",
            gzip.compress(b"", mtime=0),
        ),  # mtime=0: the same test id in every worker
        ("d.csv", "csv", b""),
        ("e.txt", "text", b""),
    ],
)
def test_empty_file_yields_no_batches(tmp_path, name, fmt, data):
    path = write(tmp_path, name, data)
    sch = schema(value=StringType())
    assert list(read_file(path, sch, fopts(fmt, {}), RESCUE if fmt != "text" else None)) == []


def test_multiline_json_empty_file_yields_no_batches(tmp_path):
    path = write(tmp_path, "a.json", b"  \n")
    assert (
        list(read_file(path, schema(id=LongType()), fopts("json", {"multiline": "true"}), None))
        == []
    )


def test_non_utf8_json_raises_unless_an_encoding_is_given(tmp_path):
    path = write(tmp_path, "latin.json", '{"name": "café"}\n'.encode("latin-1"))
    with pytest.raises(CorruptFileError, match=r"latin\.json.*UTF-8"):
        read(path, "json", schema(name=StringType()))
    rows = read(path, "json", schema(name=StringType()), {"encoding": "latin-1"})
    assert rows == [{"name": "café", RESCUE: None}]


def test_utf16_json_is_transcoded(tmp_path):
    path = write(tmp_path, "a.json", jsonl({"name": "é"}, {"name": "b"}).encode("utf-16"))
    assert read(path, "json", schema(name=StringType()), {"encoding": "UTF-16"}) == [
        {"name": "é", RESCUE: None},
        {"name": "b", RESCUE: None},
    ]


def test_timestamps_with_and_without_zone_and_dates_are_utc(tmp_path):
    values = [
        "2024-01-02T03:04:05Z",
        "2024-01-02T05:04:05+02:00",
        "2024-01-02T03:04:05",
        "2024-01-02",
    ]
    path = write(tmp_path, "a.json", jsonl(*[{"t": v} for v in values], {"t": "soon"}, {"t": 5}))
    assert read(path, "json", schema(t=TimestampType())) == [
        {"t": ts(2024, 1, 2, 3, 4, 5), RESCUE: None},
        {"t": ts(2024, 1, 2, 3, 4, 5), RESCUE: None},
        {"t": ts(2024, 1, 2, 3, 4, 5), RESCUE: None},
        {"t": ts(2024, 1, 2), RESCUE: None},
        {"t": None, RESCUE: rescued(path, t="soon")},
        {"t": None, RESCUE: rescued(path, t=5)},
    ]


def test_decimals_from_numbers_and_strings_and_lossy_ones_rescued(tmp_path):
    path = write(tmp_path, "a.json", jsonl({"d": 1.5}, {"d": "2.25"}, {"d": 7}, {"d": 1.255}))
    assert read(path, "json", schema(d=DecimalType(10, 2))) == [
        {"d": decimal.Decimal("1.50"), RESCUE: None},
        {"d": decimal.Decimal("2.25"), RESCUE: None},
        {"d": decimal.Decimal("7.00"), RESCUE: None},
        {"d": None, RESCUE: rescued(path, d=1.255)},
    ]


def test_line_longer_than_arrows_block_is_read_on_the_fast_path(tmp_path, monkeypatch):
    monkeypatch.setattr(json_reader, "python_rows", lambda *a: pytest.fail("took the per-row path"))
    long_text = "x" * (3 << 20)
    path = write(tmp_path, "a.json", jsonl({"id": 1, "s": long_text}, {"id": 2, "s": "y"}))
    rows = read(path, "json", schema(id=LongType(), s=StringType()))
    assert [r["id"] for r in rows] == [1, 2] and rows[0]["s"] == long_text


def test_utf8_byte_order_mark_is_dropped(tmp_path):
    path = write(tmp_path, "a.csv", b"\xef\xbb\xbfid,name\n1,a\n")
    assert read(path, "csv", schema(id=LongType(), name=StringType())) == [
        {"id": 1, "name": "a", RESCUE: None}
    ]


def test_batches_hold_at_most_batch_rows(tmp_path):
    path = write(tmp_path, "a.json", jsonl(*[{"id": i} for i in range(1000)]))
    batches = list(read_file(path, schema(id=LongType()), fopts("json", {}), None, batch_rows=300))
    assert [b.num_rows for b in batches] == [300, 300, 300, 100]
    assert pa.Table.from_batches(batches).column("id").to_pylist() == list(range(1000))


FAST_SLOW_CASES = [
    (TimestampType(), ["2024-01-02T03:04:05Z", "2024-01-02T05:04:05+02:00"]),
    (TimestampType(), ["2024-01-02 03:04:05.5", "2024-01-02"]),
    (DateType(), ["2024-01-02", "2024-12-31"]),
    (DecimalType(10, 2), [1.5, "2.25", 7, 0.1]),
    (StringType(), [12, 2.5, 1e-7, -0.0]),
    (StringType(), [True, False]),
    (DoubleType(), [2**70, 0.5]),
    (DecimalType(38, 0), [2**64 - 1, 3]),
    (StringType(), ["2024-01-02", "2024-01-02T03:04:05Z"]),
    (LongType(), [1, -5, 2**62]),
    (DoubleType(), [1, 2.5, 1e300]),
    (BooleanType(), [True, False]),
    (
        StructType([StructField("x", StringType()), StructField("d", DateType())]),
        [{"x": 1, "d": "2024-01-02"}, {"x": 2.5}],
    ),
    (ArrayType(StringType()), [[1, 2], [3.5]]),
    (ArrayType(LongType()), [[1, 2], []]),
    (MapType(StringType(), StringType()), [{"a": "x", "b": "y"}]),
]  # fmt: skip


def fast_and_slow(tmp_path, monkeypatch, dtype, values):
    """Rows of a clean file (which must stay on Arrow's path) and of the same lines plus a
    malformed one (which sends the chunk down the per-row path), the corrupt row dropped."""
    clean = write(tmp_path, "clean.json", jsonl(*[{"v": v} for v in values]))
    mixed = write(tmp_path, "mixed.json", jsonl(*[{"v": v} for v in values], "{broken"))
    slow = json_reader.python_rows
    monkeypatch.setattr(json_reader, "python_rows", lambda *a: pytest.fail("took the per-row path"))
    fast_rows = read(clean, "json", schema(v=dtype))
    monkeypatch.setattr(json_reader, "python_rows", slow)
    slow_rows = read(mixed, "json", schema(v=dtype))
    assert slow_rows.pop() == {"v": None, RESCUE: rescued(mixed, _corrupt_record="{broken")}
    for row in slow_rows:
        row[RESCUE] = row[RESCUE] and row[RESCUE].replace(mixed, clean)
    return clean, fast_rows, slow_rows


@pytest.mark.parametrize(("dtype", "values"), FAST_SLOW_CASES)
def test_json_values_fit_the_same_on_the_arrow_path_and_the_per_row_path(
    tmp_path, monkeypatch, dtype, values
):
    _, fast_rows, slow_rows = fast_and_slow(tmp_path, monkeypatch, dtype, values)
    assert fast_rows == slow_rows
    assert all(row[RESCUE] is None and row["v"] is not None for row in fast_rows)


@pytest.mark.parametrize(
    ("dtype", "values"),
    [
        (LongType(), ["a", "b"]),
        (LongType(), [1.5, 2.5]),
        (IntegerType(), [2**40, -(2**40)]),
        (TimestampType(), [5, 6]),
        (TimestampType(), ["soon", "2024-02-30"]),
        (DecimalType(4, 2), [1.255, 100.5]),
        (BooleanType(), ["true", "x"]),
        (StructType([StructField("x", LongType())]), ["text", "more"]),
        (StructType([StructField("x", LongType())]), [{"x": 1, "y": 2}, {"x": 3, "y": 4}]),
        (ArrayType(LongType()), [["a"], ["b"]]),
    ],
)
def test_json_column_of_misfits_is_rescued_alike_on_both_paths(
    tmp_path, monkeypatch, dtype, values
):
    path, fast_rows, slow_rows = fast_and_slow(tmp_path, monkeypatch, dtype, values)
    assert fast_rows == slow_rows == [{"v": None, RESCUE: rescued(path, v=v)} for v in values]


def test_csv_values_fit_the_same_on_the_arrow_path_and_the_per_row_path(tmp_path):
    sch = schema(a=LongType(), b=DoubleType(), c=TimestampType(), d=BooleanType(), e=StringType())
    lines = "a,b,c,d,e\n1,2.5,2024-01-02T03:04:05Z,true,x\nq,1e3,2024-01-02,FALSE,\n"
    clean = write(tmp_path, "clean.csv", lines)
    ragged = write(tmp_path, "ragged.csv", lines + "3,,,,,extra\n")
    fast_rows, slow_rows = read(clean, "csv", sch), read(ragged, "csv", sch)
    for row in slow_rows:
        row[RESCUE] = row[RESCUE] and row[RESCUE].replace(ragged, clean)
    assert fast_rows == slow_rows[:-1]
    assert fast_rows[1] == {
        "a": None,
        "b": 1000.0,
        "c": ts(2024, 1, 2),
        "d": False,
        "e": "",
        RESCUE: rescued(clean, a="q"),
    }
    assert slow_rows[-1] == {
        "a": 3,
        "b": None,
        "c": None,
        "d": None,
        "e": "",
        RESCUE: rescued(clean, _c5="extra"),
    }


# ------------------------------------------------------------------------------ detect_new


def test_detect_new_raises_with_every_new_column_before_yielding_anything(tmp_path):
    path = write(tmp_path, "a.json", jsonl({"id": 1, "ID": 2}, {"id": 2, "b": 1}, {"c": 3}))
    batches = read_file(path, schema(id=LongType()), fopts("json", {}), RESCUE, detect_new=True)
    with pytest.raises(NewColumnsFound) as info:
        next(batches)
    assert info.value.path == path and info.value.columns == ["b", "c"]
    assert "a.json" in str(info.value) and "b, c" in str(info.value)


def test_detect_new_yields_normally_when_no_column_is_new(tmp_path):
    path = write(tmp_path, "a.json", jsonl({"id": 1, "ID": 2}))
    assert read(path, "json", schema(id=LongType()), detect_new=True) == [
        {"id": 1, RESCUE: rescued(path, ID=2)}
    ]


def test_detect_new_on_csv_header_and_parquet_columns(tmp_path):
    csv_path = write(tmp_path, "a.csv", "id,Name,zip\n1,a,b\n")
    with pytest.raises(NewColumnsFound) as info:
        read(csv_path, "csv", schema(id=LongType(), name=StringType()), detect_new=True)
    assert info.value.columns == ["zip"]
    pq_path = str(tmp_path / "a.parquet")
    pq.write_table(pa.table({"id": [1], "new": ["x"]}), pq_path)
    with pytest.raises(NewColumnsFound) as info:
        read(pq_path, "parquet", schema(id=LongType()), detect_new=True)
    assert info.value.columns == ["new"] and info.value.path == pq_path


# ------------------------------------------------------------------------------ csv


def test_csv_header_maps_columns_by_name_and_casts_types(tmp_path):
    path = write(tmp_path, "a.csv", "name,id,score\na,1,0.5\nb,2,\n")
    sch = schema(id=IntegerType(), name=StringType(), score=DoubleType())
    assert read(path, "csv", sch) == [
        {"id": 1, "name": "a", "score": 0.5, RESCUE: None},
        {"id": 2, "name": "b", "score": None, RESCUE: None},
    ]


def test_csv_without_header_maps_columns_by_position(tmp_path):
    path = write(tmp_path, "a.csv", "1,a\n2,b,extra\n")
    sch = schema(id=IntegerType(), name=StringType())
    assert read(path, "csv", sch, {"header": "false"}) == [
        {"id": 1, "name": "a", RESCUE: None},
        {"id": 2, "name": "b", RESCUE: rescued(path, _c2="extra")},
    ]
    sch = schema(_c0=IntegerType(), _c1=StringType())
    assert read(path, "csv", sch, {"header": "false"}, rescue=None) == [
        {"_c0": 1, "_c1": "a"},
        {"_c0": 2, "_c1": "b"},
    ]


def test_csv_mismatched_values_are_rescued_and_empty_values_are_null(tmp_path):
    path = write(tmp_path, "a.csv", "id,day,ok,name\nx,2024-01-02,true,\n2,someday,maybe,b\n,,,\n")
    sch = schema(id=LongType(), day=DateType(), ok=BooleanType(), name=StringType())
    day = datetime.date(2024, 1, 2)
    assert read(path, "csv", sch) == [
        {"id": None, "day": day, "ok": True, "name": "", RESCUE: rescued(path, id="x")},
        {
            "id": 2,
            "day": None,
            "ok": None,
            "name": "b",
            RESCUE: rescued(path, day="someday", ok="maybe"),
        },
        {"id": None, "day": None, "ok": None, "name": "", RESCUE: None},
    ]


def test_csv_ragged_rows_rescue_extra_fields_and_null_missing_ones(tmp_path):
    path = write(tmp_path, "a.csv", "id,name\n1,a\n2,b,x,y\n3\n4,d\n")
    sch = schema(id=IntegerType(), name=StringType())
    assert read(path, "csv", sch) == [
        {"id": 1, "name": "a", RESCUE: None},
        {"id": 2, "name": "b", RESCUE: rescued(path, _c2="x", _c3="y")},
        {"id": 3, "name": None, RESCUE: None},
        {"id": 4, "name": "d", RESCUE: None},
    ]


def test_csv_header_column_not_in_schema_is_rescued_or_dropped(tmp_path):
    path = write(tmp_path, "a.csv", "id,Extra,ID\n1,x,9\n2,,\n")
    sch = schema(id=IntegerType())
    assert read(path, "csv", sch) == [
        {"id": 1, RESCUE: rescued(path, Extra="x", ID="9")},
        {"id": 2, RESCUE: None},
    ]
    assert read(path, "csv", sch, rescue=None) == [{"id": 1}, {"id": 2}]


def test_csv_multiline_quoted_fields(tmp_path):
    path = write(tmp_path, "a.csv", 'id,text\n1,"line one\nline two"\n2,"say ""hi"""\n')
    sch = schema(id=IntegerType(), text=StringType())
    assert read(path, "csv", sch, {"multiLine": "true"}) == [
        {"id": 1, "text": "line one\nline two", RESCUE: None},
        {"id": 2, "text": 'say "hi"', RESCUE: None},
    ]


def test_csv_multiline_ragged_file_goes_row_by_row_in_order(tmp_path):
    path = write(tmp_path, "a.csv", 'id,text\n1,"a\nb"\n2,c,extra\n3,"d"\n')
    sch = schema(id=IntegerType(), text=StringType())
    assert read(path, "csv", sch, {"multiline": "true"}) == [
        {"id": 1, "text": "a\nb", RESCUE: None},
        {"id": 2, "text": "c", RESCUE: rescued(path, _c2="extra")},
        {"id": 3, "text": "d", RESCUE: None},
    ]


def test_csv_delimiter_quote_and_escape_options(tmp_path):
    path = write(tmp_path, "a.csv", "id;text\n1;'a;b'\n2;'it\\'s'\n3;'say #'hi#''\n")
    sch = schema(id=IntegerType(), text=StringType())
    assert read(path, "csv", sch, {"sep": ";", "quote": "'"})[:2] == [
        {"id": 1, "text": "a;b", RESCUE: None},
        {"id": 2, "text": "it's", RESCUE: None},
    ]
    rows = read(path, "csv", sch, {"sep": ";", "quote": "'", "escape": "#"})
    assert rows[2] == {"id": 3, "text": "say 'hi'", RESCUE: None}
    tabbed = write(tmp_path, "b.tsv", "id\ttext\n1\ta b\n")
    assert read(tabbed, "csv", sch, {"delimiter": "\t"}) == [{"id": 1, "text": "a b", RESCUE: None}]


def test_csv_non_utf8_raises_unless_an_encoding_is_given(tmp_path):
    path = write(tmp_path, "latin.csv", "name\ncafé\n".encode("latin-1"))
    with pytest.raises(CorruptFileError, match=r"latin\.csv"):
        read(path, "csv", schema(name=StringType()))
    rows = read(path, "csv", schema(name=StringType()), {"encoding": "latin-1"})
    assert rows == [{"name": "café", RESCUE: None}]


def test_gzip_csv_with_crlf_line_ends(tmp_path):
    path = write(tmp_path, "a.csv.gz", gzip.compress(b"id,name\r\n1,a\r\n2,b\r\n"))
    assert read(path, "csv", schema(id=LongType(), name=StringType())) == [
        {"id": 1, "name": "a", RESCUE: None},
        {"id": 2, "name": "b", RESCUE: None},
    ]


def test_csv_column_of_mostly_bad_values_is_sorted_out_per_value(tmp_path):
    lines = ["id"] + [str(i) if i % 3 else f"x{i}" for i in range(3000)]
    path = write(tmp_path, "a.csv", "\n".join(lines) + "\n")
    rows = read(path, "csv", schema(id=IntegerType()))
    assert [r["id"] for r in rows[:4]] == [None, 1, 2, None]
    assert rows[3][RESCUE] == rescued(path, id="x3")
    assert sum(r[RESCUE] is not None for r in rows) == 1000


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


def cloud_opts(fmt: str, **format_options):
    """The options of ``fmt`` and Auto Loader's default (columns as strings) for inference."""
    return parse_format_options(fmt, format_options), False


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


# ------------------------------------------------------------------------------ binaryFile


def test_binary_file_is_one_row_with_path_time_length_and_content(tmp_path):
    path = write(tmp_path, "img.png", b"\x89PNG\x00\xff")
    os.utime(path, (1_700_000_000.5, 1_700_000_000.5))
    sch = infer_file(path, *cloud_opts("binaryfile"))
    assert sch == BINARY_FILE_SCHEMA
    assert sch.simpleString() == (
        "struct<path:string,modificationTime:timestamp,length:bigint,content:binary>"
    )
    when = datetime.datetime.fromtimestamp(1_700_000_000.5, UTC)
    expected = {"path": path, "modificationTime": when, "length": 6, "content": b"\x89PNG\x00\xff"}
    assert read(path, "binaryfile", sch, rescue=None) == [expected]
    assert read(path, "binaryFile", sch) == [{**expected, RESCUE: None}]  # never rescues
    assert read(path, "binaryfile", schema(length=LongType(), path=StringType()), rescue=None) == [
        {"length": 6, "path": path}
    ]
    empty = write(tmp_path, "empty.bin", b"")
    assert [r["content"] for r in read(empty, "binaryfile", sch, rescue=None)] == [b""]
    with pytest.raises(ValueError, match="value"):
        read(path, "binaryfile", schema(value=StringType()), rescue=None)
    with pytest.raises(FileNotFoundError):
        read(str(tmp_path / "gone.png"), "binaryfile", sch, rescue=None)


# ------------------------------------------------------------------------------ text and misc


def test_text_yields_one_row_per_line_without_line_breaks(tmp_path):
    path = write(tmp_path, "a.txt", "first\r\nsecond\n\n{not json}\nlast")
    assert read(path, "text", schema(value=StringType()), rescue=None) == [
        {"value": "first"},
        {"value": "second"},
        {"value": ""},
        {"value": "{not json}"},
        {"value": "last"},
    ]


def test_text_honours_compression_and_encoding(tmp_path):
    path = write(tmp_path, "a.txt.gz", gzip.compress("café\nb\n".encode("latin-1")))
    sch = schema(value=StringType())
    assert read(path, "text", sch, {"encoding": "latin-1"}, rescue=None) == [
        {"value": "café"},
        {"value": "b"},
    ]
    with pytest.raises(CorruptFileError, match=r"a\.txt\.gz"):
        read(path, "text", sch, rescue=None)


def test_text_rescue_column_is_always_null(tmp_path):
    path = write(tmp_path, "a.txt", "x\n")
    assert read(path, "text", schema(value=StringType())) == [{"value": "x", RESCUE: None}]


def test_unsupported_format_and_bad_options_are_rejected(tmp_path):
    path = write(tmp_path, "a.csv", "a\n1\n")
    assert SUPPORTED_FORMATS == ("json", "csv", "parquet", "text", "avro", "orc", "binaryfile")
    with pytest.raises(ValueError, match="xml"):
        list(read_file(path, schema(a=LongType()), fopts("xml", {}), None))
    with pytest.raises(ValueError, match="sep"):
        list(read_file(path, schema(a=LongType()), fopts("csv", {"sep": "||"}), None))
    with pytest.raises(ValueError, match="klingon"):
        list(read_file(path, schema(a=LongType()), fopts("csv", {"encoding": "klingon"}), None))
    with pytest.raises(ValueError, match=RESCUE):
        list(read_file(path, schema(_rescued_data=StringType()), fopts("csv", {}), RESCUE))


def test_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        list(read_file(str(tmp_path / "gone.json"), schema(a=LongType()), fopts("json", {}), None))
