"""The readers apply the honoured options: CSV empties, whitespace, comments, record
separators; patterns; ``mode`` and the corrupt-record column; JSON comments and separators;
``wholetext``; inference with options. Spark-free; expected values are what Spark's own
readers return for the same files (see test_options_match_spark.py for the comparison)."""

from __future__ import annotations

import datetime
import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql.types import (
    DateType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructType,
    TimestampType,
)

from headwater.formats import (
    CorruptFileError,
    MalformedRecordError,
    csv_reader,
    infer_file,
    json_reader,
    parse_format_options,
    read_file,
)
from tests.formats.helpers import RESCUE, schema, write

UTC = datetime.timezone.utc


def read(path, fmt, sch, options=None, rescue=None) -> list[dict]:
    opts = parse_format_options(fmt, options or {})
    return [row for batch in read_file(path, sch, opts, rescue) for row in batch.to_pylist()]


def values(rows: list[dict], *names: str) -> list[tuple]:
    return [tuple(r[n] for n in names) for r in rows]


def no_slow_path(monkeypatch) -> None:
    """Fail the test if a chunk leaves Arrow's path."""
    monkeypatch.setattr(csv_reader._CsvReader, "slow", lambda *a: pytest.fail("went per row"))
    monkeypatch.setattr(json_reader, "python_rows", lambda *a: pytest.fail("went per row"))


# ------------------------------------------------------------------------------ csv values

EMPTIES = 's,t\n,1\n"",2\nNA,3\n" x ",4\n y ,5\n"NA",6\n'
RAGGED = "7,7,extra\n"  # sends the chunk down the per-row path


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"nullValue": "NA"}, [None, "", None, " x ", " y ", None]),
        ({"emptyValue": "E"}, [None, "E", "NA", " x ", " y ", "NA"]),
        ({"emptyValue": "E", "nullValue": "NA"}, [None, "E", None, " x ", " y ", None]),
        ({"emptyValue": ""}, [None, None, "NA", " x ", " y ", "NA"]),
        ({"ignoreLeadingWhiteSpace": "true", "ignoreTrailingWhiteSpace": "true",
          "nullValue": ""}, [None, None, "NA", " x ", "y", "NA"]),
        ({"ignoreLeadingWhiteSpace": "true"}, [None, None, "NA", " x ", "y ", "NA"]),
        ({"nullValue": "NA", "emptyValue": "NA"}, [None, None, None, " x ", " y ", None]),
        ({}, [None, None, "NA", " x ", " y ", "NA"]),
    ],
)  # fmt: skip
def test_csv_empty_null_and_whitespace_values_alike_on_both_paths(tmp_path, options, expected):
    sch = schema(s=StringType(), t=StringType())
    clean = write(tmp_path, "clean.csv", EMPTIES)
    ragged = write(tmp_path, "ragged.csv", EMPTIES + RAGGED)
    opts = {"header": "true", **options}
    assert [r["s"] for r in read(clean, "csv", sch, opts)] == expected
    assert [r["s"] for r in read(ragged, "csv", sch, opts)][:-1] == expected


def test_csv_whitespace_is_trimmed_on_arrows_path_when_no_quote_is_near_it(tmp_path, monkeypatch):
    path = write(tmp_path, "a.csv", 'a,b\n  x , 1\n"y",2 \n')
    no_slow_path(monkeypatch)
    opts = {"ignoreLeadingWhiteSpace": "true", "ignoreTrailingWhiteSpace": "true"}
    rows = read(path, "csv", schema(a=StringType(), b=IntegerType()), opts)
    assert values(rows, "a", "b") == [("x", 1), ("y", 2)]


def test_csv_comment_lines_are_skipped_anywhere_also_in_multiline_files(tmp_path):
    sch = schema(a=StringType(), b=StringType())
    path = write(tmp_path, "a.csv", '#top\na,b\n1,x\n#1,y\n 2,"z\n#not a comment"\n')
    assert values(read(path, "csv", sch, {"comment": "#", "multiLine": "true"}), "a", "b") == [
        ("1", "x"),
        (" 2", "z\n#not a comment"),
    ]
    flat = write(tmp_path, "b.csv", "#top\na,b\n1,x\n#1,y\n2,z\n")
    assert values(read(flat, "csv", sch, {"comment": "#"}), "a", "b") == [("1", "x"), ("2", "z")]


@pytest.mark.parametrize(
    ("data", "line_sep", "expected"),
    [
        ("a,b;1,x;2,y;", ";", [("1", "x"), ("2", "y")]),
        ("a,b;1,x\ny;2,z", ";", [("1", "x\ny"), ("2", "z")]),  # \n is data here
        ("a,b\r\n1,x\r\n2,y\r\n", "\n", [("1", "x\r"), ("2", "y\r")]),  # as Spark
        ("a,b\r\n1,x\r\n2,y", "\r\n", [("1", "x"), ("2", "y")]),
        ("a,b\r1,x\r2,y\r", "\r", [("1", "x"), ("2", "y")]),
    ],
)
def test_csv_line_sep_ends_records_exactly_there(tmp_path, data, line_sep, expected):
    path = write(tmp_path, "a.csv", data)
    rows = read(path, "csv", schema(a=StringType(), b=StringType()), {"lineSep": line_sep})
    assert values(rows, "a", "b") == expected


def test_csv_nan_and_infinity_spellings(tmp_path):
    path = write(tmp_path, "a.csv", "a\nnope\nbig\nsmall\n1.5\nNaN\n")
    opts = {"nanValue": "nope", "positiveInf": "big", "negativeInf": "small"}
    got = [r["a"] for r in read(path, "csv", schema(a=DoubleType()), opts)]
    assert math.isnan(got[0]) and got[1:4] == [math.inf, -math.inf, 1.5] and math.isnan(got[4])


def test_csv_date_and_timestamp_patterns_and_their_misfits(tmp_path, monkeypatch):
    path = write(tmp_path, "a.csv", "d,t\n08/04/2024,08/04/2024 10:50\n30/02/2024,8/4/2024 10:50\n")
    sch = schema(d=DateType(), t=TimestampType())
    opts = {"dateFormat": "dd/MM/yyyy", "timestampFormat": "dd/MM/yyyy HH:mm"}
    no_slow_path(monkeypatch)
    rows = read(path, "csv", sch, opts, rescue=RESCUE)
    assert rows[0] == {
        "d": datetime.date(2024, 4, 8),
        "t": datetime.datetime(2024, 4, 8, 10, 50, tzinfo=UTC),
        RESCUE: None,
    }
    assert (rows[1]["d"], rows[1]["t"]) == (None, None)  # no February 30th; dd is two digits
    assert '"d":"30/02/2024","t":"8/4/2024 10:50"' in rows[1][RESCUE]


# ------------------------------------------------------------------------------ mode


BAD_CSV = "a,b\nx,1\n2,3\n4\n5,6,7\n"


def test_csv_permissive_fills_the_corrupt_record_column_with_each_malformed_line(tmp_path):
    path = write(tmp_path, "a.csv", BAD_CSV)
    sch = schema(a=IntegerType(), b=IntegerType(), _corrupt_record=StringType())
    assert values(read(path, "csv", sch, {"mode": "PERMISSIVE"}), "a", "b", "_corrupt_record") == [
        (None, 1, "x,1"),
        (2, 3, None),
        (4, None, "4"),
        (5, 6, "5,6,7"),
    ]


def test_csv_dropmalformed_and_failfast(tmp_path):
    path = write(tmp_path, "a.csv", BAD_CSV)
    sch = schema(a=IntegerType(), b=IntegerType())
    assert values(read(path, "csv", sch, {"mode": "DROPMALFORMED"}), "a", "b") == [(2, 3)]
    with pytest.raises(MalformedRecordError, match=r"a\.csv: record 'x,1'") as info:
        read(path, "csv", sch, {"mode": "FAILFAST"})
    assert not isinstance(info.value, CorruptFileError)  # ignoreCorruptFiles does not skip it


def test_csv_with_a_rescue_column_extra_values_are_rescued_and_short_rows_malformed(tmp_path):
    path = write(tmp_path, "a.csv", BAD_CSV)
    sch = schema(a=IntegerType(), b=IntegerType())
    rows = read(path, "csv", sch, {"mode": "DROPMALFORMED"}, rescue=RESCUE)
    assert values(rows, "a", "b") == [(None, 1), (2, 3), (5, 6)]
    assert '"a":"x"' in rows[0][RESCUE] and '"_c2":"7"' in rows[2][RESCUE]


def test_csv_without_header_leaves_the_corrupt_record_column_out_of_the_positions(tmp_path):
    path = write(tmp_path, "a.csv", "1,x\ny,2\n")
    sch = schema(a=IntegerType(), _corrupt_record=StringType(), b=StringType())
    rows = read(path, "csv", sch, {"header": "false", "mode": "PERMISSIVE"})
    assert values(rows, "a", "b", "_corrupt_record") == [(1, "x", None), (None, "2", "y,2")]


JSON_LINES = '{"a": "x", "b": 1}\n{"a": 2, "b": 3}\nnot json\n{"a": 5, "b": "y"}\n'


def test_json_modes_and_the_corrupt_record_column(tmp_path):
    path = write(tmp_path, "a.json", JSON_LINES)
    sch = schema(a=IntegerType(), b=IntegerType())
    with_column = schema(a=IntegerType(), b=IntegerType(), bad=StringType())
    opts = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "bad"}
    assert values(read(path, "json", with_column, opts), "a", "b", "bad") == [
        (None, 1, '{"a": "x", "b": 1}'),
        (2, 3, None),
        (None, None, "not json"),
        (5, None, '{"a": 5, "b": "y"}'),
    ]
    assert values(read(path, "json", sch, {"mode": "PERMISSIVE"}), "a", "b") == [
        (None, 1), (2, 3), (None, None), (5, None)
    ]  # fmt: skip
    assert values(read(path, "json", sch, {"mode": "DROPMALFORMED"}), "a", "b") == [(2, 3)]
    with pytest.raises(MalformedRecordError, match=r"line 1: record '\{\"a\": \"x\", \"b\": 1\}'"):
        read(path, "json", sch, {"mode": "FAILFAST"})
    with pytest.raises(CorruptFileError, match="line 3: malformed JSON record"):
        read(path, "json", sch)  # mode not set, nowhere to keep the line: not lost silently
    misfit = write(tmp_path, "b.json", '{"a": "x"}\n{"a": "y"}\n')  # Arrow's path: no text
    with pytest.raises(MalformedRecordError, match=r"value 'x' does not fit column 'a'"):
        read(misfit, "json", sch, {"mode": "FAILFAST"})


def test_json_with_a_rescue_column_only_unparseable_lines_are_malformed(tmp_path):
    path = write(tmp_path, "a.json", JSON_LINES)
    sch = schema(a=IntegerType(), b=IntegerType())
    rows = read(path, "json", sch, {"mode": "DROPMALFORMED"}, rescue=RESCUE)
    assert values(rows, "a", "b") == [(None, 1), (2, 3), (5, None)]
    with pytest.raises(MalformedRecordError, match=r"line 3: record 'not json'"):
        read(path, "json", sch, {"mode": "FAILFAST"}, rescue=RESCUE)


def test_parquet_dropmalformed_without_a_rescue_column_drops_rows_that_do_not_fit(tmp_path):
    path = str(tmp_path / "a.parquet")
    pq.write_table(pa.table({"n": ["1", "two", None]}), path)
    sch = schema(n=IntegerType())
    assert [r["n"] for r in read(path, "parquet", sch, {"mode": "DROPMALFORMED"})] == [1, None]


# ------------------------------------------------------------------------------ json, text


def test_json_comments_are_stripped_on_arrows_path(tmp_path, monkeypatch):
    data = '{"id": 1, /* c */ "url": "http://x//y"} // end\n// whole line\n{"id": 2}\n'
    path = write(tmp_path, "a.json", data)
    no_slow_path(monkeypatch)
    rows = read(path, "json", schema(id=LongType(), url=StringType()), {"allowComments": "true"})
    assert values(rows, "id", "url") == [(1, "http://x//y"), (2, None)]


def test_json_line_sep_splits_records_and_line_breaks_inside_are_whitespace(tmp_path):
    path = write(tmp_path, "a.json", '{"id": 1}|{"id":\n 2}|{"id": 3}')
    assert [r["id"] for r in read(path, "json", schema(id=LongType()), {"lineSep": "|"})] == [
        1,
        2,
        3,
    ]


def test_json_timestamp_pattern_on_arrows_path(tmp_path, monkeypatch):
    path = write(tmp_path, "a.json", '{"t": "02.01.2024 03:04"}\n{"t": "2024-01-02"}\n')
    no_slow_path(monkeypatch)
    rows = read(
        path, "json", schema(t=TimestampType()), {"timestampFormat": "dd.MM.yyyy HH:mm"}, RESCUE
    )
    assert rows[0]["t"] == datetime.datetime(2024, 1, 2, 3, 4, tzinfo=UTC)
    assert rows[1]["t"] is None and '"t":"2024-01-02"' in rows[1][RESCUE]


def test_text_wholetext_and_a_custom_line_sep(tmp_path):
    path = write(tmp_path, "a.txt", "one\ntwo;three")
    sch = schema(value=StringType())
    assert read(path, "text", sch, {"wholetext": "true"}) == [{"value": "one\ntwo;three"}]
    assert read(path, "text", sch, {"lineSep": ";"}) == [{"value": "one\ntwo"}, {"value": "three"}]


# ------------------------------------------------------------------------------ inference


def test_csv_inference_sees_values_as_the_reader_reads_them(tmp_path):
    path = write(tmp_path, "a.csv", "#note\nn;x;s\n1;NA;a\nNA;2.5;' b '\n")
    opts = parse_format_options(
        "csv", {"comment": "#", "sep": ";", "quote": "'", "nullValue": "NA", "inferSchema": "true"}
    )
    assert infer_file(path, opts, False).simpleString() == "struct<n:bigint,x:double,s:string>"
    assert infer_file(write(tmp_path, "empty.csv", ""), opts, True) == StructType([])


def test_json_inference_with_comments_separators_and_primitives_as_strings(tmp_path):
    path = write(tmp_path, "a.json", '{"id": 1, "s": {"x": 2.5}} // c|{"id": 2}|')
    opts = {"allowComments": "true", "lineSep": "|"}
    typed = infer_file(path, parse_format_options("json", opts), True)
    assert typed.simpleString() == "struct<id:bigint,s:struct<x:double>>"
    strings = parse_format_options("json", {**opts, "primitivesAsString": "true"})
    assert infer_file(path, strings, True).simpleString() == "struct<id:string,s:struct<x:string>>"
    assert infer_file(path, strings, False).simpleString() == "struct<id:string,s:string>"


def test_csv_per_row_path_keeps_one_record_per_line_with_an_unclosed_quote(tmp_path):
    path = write(tmp_path, "a.csv", 'a,b\n"open,1\n2,3\n4,5,extra\n')
    rows = read(path, "csv", schema(a=StringType(), b=StringType()))
    assert values(rows, "a", "b")[1:] == [("2", "3"), ("4", "5")]
