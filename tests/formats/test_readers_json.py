"""headwater.formats, JSON: one file to Arrow batches of the declared schema, with rescue;
the Arrow path and the per-row path agree.

Pure pyarrow: these tests never start Spark (the reader runs inside Python workers).
"""

from __future__ import annotations

import datetime
import decimal
import json

import pyarrow as pa
import pytest
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

from headwater.formats import CorruptFileError, chunks, json_reader, read_file
from tests.formats.helpers import RESCUE, schema, write
from tests.formats.reading import fopts, jsonl, read, rescued, ts

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
        "e": None,
        RESCUE: rescued(clean, a="q"),
    }
    assert slow_rows[-1] == {
        "a": 3,
        "b": None,
        "c": None,
        "d": None,
        "e": None,
        RESCUE: rescued(clean, _c5="extra"),
    }
