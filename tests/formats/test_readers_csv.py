"""headwater.formats, CSV: columns by header or position, types cast, misfits rescued.

Pure pyarrow: these tests never start Spark (the reader runs inside Python workers).
"""

from __future__ import annotations

import datetime
import gzip

import pytest
from pyspark.sql.types import BooleanType, DateType, DoubleType, IntegerType, LongType, StringType

from headwater.formats import CorruptFileError
from tests.formats.helpers import RESCUE, schema, write
from tests.formats.reading import read, rescued

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
        {"id": None, "day": day, "ok": True, "name": None, RESCUE: rescued(path, id="x")},
        {
            "id": 2,
            "day": None,
            "ok": None,
            "name": "b",
            RESCUE: rescued(path, day="someday", ok="maybe"),
        },
        {"id": None, "day": None, "ok": None, "name": None, RESCUE: None},
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
