"""Each honoured CSV/JSON option reads a file as Spark's own reader reads it, in Auto Loader and
in COPY INTO alike: one file per case, read three ways with the same options and schema, and
the rows compared.

Options that only steer inference (``inferSchema``, ``primitivesAsString``, ``prefersDecimal``,
``dropFieldIfAllNull``, ``mergeSchema``) change nothing once a schema is given, in Spark as
here; they ride along in a case to show all three accept them.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, field

import pytest

from headwater.copyinto import copy_into
from headwater.delta.tables import DeltaTable
from headwater.formats.options import TABLES


@dataclass(frozen=True)
class Case:
    name: str
    fmt: str
    data: bytes | str
    schema: str
    options: dict[str, str] = field(default_factory=dict)
    copy_into: dict = field(default_factory=dict)  # COPY INTO's own arguments

    @property
    def payload(self) -> bytes:
        return self.data if isinstance(self.data, bytes) else self.data.encode()


CSV = [
    Case(
        "header_sep_quote_escape",
        "csv",
        "id;text\n1;'a;b'\n2;'say #'hi#''\n3;plain\n",
        "id int, text string",
        {"header": "true", "sep": ";", "quote": "'", "escape": "#", "inferSchema": "true",
         "mergeSchema": "true"},
    ),
    Case(
        "delimiter_tab_without_header",
        "csv",
        "1\tx\n2\ty\n",
        "id int, text string",
        {"header": "false", "delimiter": "\t"},
        {"by_position": True},
    ),
    Case(
        "charset_latin1_multiline",
        "csv",
        'id,text\n1,"caf\xe9\nau lait"\n2,"na\xefve"\n'.encode("latin-1"),
        "id int, text string",
        {"header": "true", "charset": "ISO-8859-1", "multiLine": "true"},
    ),
    Case(
        "encoding_utf16",
        "csv",
        "id,text\n1,é\n2,ü\n".encode("utf-16"),
        "id int, text string",
        {"header": "true", "encoding": "UTF-16", "multiLine": "true"},  # Spark: UTF-16 whole
    ),
    Case(
        "comment_and_line_sep",
        "csv",
        "#comment|id,text|1,a|#skipped,row|2,b|",
        "id int, text string",
        {"header": "true", "comment": "#", "lineSep": "|"},
    ),
    Case(
        "null_and_empty_values",
        "csv",
        's,t,n\n,1,NA\n"",2,3\nNA,3,\n"NA",4,5\nx,5,"NA"\n',
        "s string, t string, n int",
        {"header": "true", "nullValue": "NA", "emptyValue": "EMPTY"},
    ),
    Case(
        "empty_values_by_default",
        "csv",
        's,t,n\n,1,\n"",2,""\nx,,3\n',
        "s string, t string, n int",
        {"header": "true"},
    ),
    Case(
        "nan_and_infinities",
        "csv",
        "a,b\nnot-a-number,big\nsmall,1.5\n",
        "a double, b double",
        {"header": "true", "nanValue": "not-a-number", "positiveInf": "big",
         "negativeInf": "small"},
    ),
    Case(
        "date_and_timestamp_formats",
        "csv",
        "d,t\n08/04/2024,08/04/2024 10:50\n31/12/1999,01/01/2000 00:00\n",
        "d date, t timestamp",
        {"header": "true", "dateFormat": "dd/MM/yyyy", "timestampFormat": "dd/MM/yyyy HH:mm"},
    ),
    Case(
        "month_names_fractions_and_am_pm",
        "csv",
        "u\nApr 08 2024 01:05:09.12 PM\nJan 01 2000 12:00:00.5 AM\n",
        "u timestamp",
        {"header": "true", "timestampFormat": "MMM dd yyyy hh:mm:ss.SS a", "locale": "en-US",
         "timeZone": "UTC"},
    ),
    Case(
        "timestamp_with_offset_and_fraction",
        "csv",
        "t\n2024-01-02 03:04:05.123+02:00\n2024-06-30 23:59:59.5Z\n",
        "t timestamp",
        {"header": "true", "timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSXXX",
         "maxCharsPerColumn": "-1"},
    ),
    Case(
        "timestamp_ntz_format",
        "csv",
        "t\n2024/01/02 03:04\n1999/12/31 23:59\n",
        "t timestamp_ntz",
        {"header": "true", "timestampNTZFormat": "yyyy/MM/dd HH:mm"},
    ),
    Case(
        "whitespace_trimmed_outside_quotes",
        "csv",
        'a,b,c\n  x  ,  1,"  kept  "\n y , 2 ,  " q "  \n',
        "a string, b int, c string",
        {"header": "true", "ignoreLeadingWhiteSpace": "true",
         "ignoreTrailingWhiteSpace": "true"},
    ),
    Case(
        "leading_whitespace_only",
        "csv",
        "a,b\n  x  ,y \n",
        "a string, b string",
        {"header": "true", "ignoreLeadingWhiteSpace": "true"},
    ),
    Case(
        "permissive_with_corrupt_record_column",
        "csv",
        "a,b\nx,1\n2,3\n4\n5,6,7\n",
        "a int, b int, bad string",
        {"header": "true", "mode": "PERMISSIVE", "columnNameOfCorruptRecord": "bad"},
    ),
    Case(
        "dropmalformed",
        "csv",
        "a,b\nx,1\n2,3\n4\n5,6,7\n8,9\n",
        "a int, b int",
        {"header": "true", "mode": "DROPMALFORMED", "inferSchema": "false"},
    ),
]  # fmt: skip

JSON = [
    Case(
        "multiline_documents",
        "json",
        '[{"id": 1, "s": {"x": "é"}},\n {"id": 2,\n  "s": {"x": "b"}}]'.encode("utf-16"),
        "id int, s struct<x:string>",
        {"multiLine": "true", "encoding": "UTF-16", "primitivesAsString": "true",
         "prefersDecimal": "false", "mergeSchema": "true"},
    ),
    Case(
        "charset_and_line_sep",
        "json",
        '{"id": 1, "s": "caf\xe9"}\n{"id": 2, "s": "b"}\n'.encode("latin-1"),
        "id int, s string",
        {"charset": "ISO-8859-1", "lineSep": "\n", "dropFieldIfAllNull": "false"},
    ),
    Case(
        "custom_line_sep",
        "json",
        '{"id": 1}|{"id": 2,\n "s": "two"}|',
        "id int, s string",
        {"lineSep": "|"},
    ),
    Case(
        "allow_comments",
        "json",
        '{"id": 1, /* inline */ "s": "a // not a comment"}\n// a whole line\n{"id": 2} // end\n',
        "id int, s string",
        {"allowComments": "true", "mode": "PERMISSIVE"},
    ),
    Case(
        "date_and_timestamp_formats",
        "json",
        '{"d": "2024.04.08", "t": "08-Apr-2024 13:05"}\n{"d": "1999.12.31", "t": "1-Jan-2000 0:00"}\n',
        "d date, t timestamp",
        {"dateFormat": "yyyy.MM.dd", "timestampFormat": "d-MMM-yyyy H:mm"},
    ),
    Case(
        "timestamp_ntz_format",
        "json",
        '{"t": "2024/01/02 03:04"}\n',
        "t timestamp_ntz",
        {"timestampNTZFormat": "yyyy/MM/dd HH:mm", "locale": "en-US", "timeZone": "UTC"},
    ),
    Case(
        "strict_json_as_spark_with_these_options_off",
        "json",
        "{'id': 1}\n{id: 2}\n{\"id\": 03}\n{\"id\": 4, \"s\": \"\\q\"}\n{\"id\": 5}\n"
        '{"id": 6, "s": "tab\there"}\n',
        "id int, s string, _corrupt_record string",
        {"mode": "PERMISSIVE", "allowSingleQuotes": "false", "allowUnquotedFieldNames": "false",
         "allowNumericLeadingZeros": "false", "allowBackslashEscapingAnyCharacter": "false",
         "allowUnquotedControlChars": "false"},
    ),
    Case(
        "permissive_with_corrupt_record_column",
        "json",
        '{"a": "x", "b": 1}\n{"a": 2, "b": 3}\nnot json\n{"a": 5, "b": "y"}\n',
        "a int, b int, bad string",
        {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "bad"},
    ),
    Case(
        "dropmalformed",
        "json",
        '{"a": "x", "b": 1}\n{"a": 2, "b": 3}\nnot json\n{"a": 5, "b": "y"}\n',
        "a int, b int",
        {"mode": "DROPMALFORMED", "inferSchema": "true"},
    ),
]  # fmt: skip


def _land(tmp_path, case: Case) -> str:
    src = tmp_path / "src"
    src.mkdir()
    (src / f"data.{case.fmt}").write_bytes(case.payload)
    return str(src)


def _rows(df) -> list[tuple]:
    """The rows, sorted; NaN as a string, so that equal rows compare equal."""
    nan = lambda v: "NaN" if isinstance(v, float) and math.isnan(v) else v  # noqa: E731
    return sorted((tuple(nan(v) for v in r) for r in df.collect()), key=repr)


def spark_rows(spark, case: Case, src: str) -> list[tuple]:
    return _rows(spark.read.format(case.fmt).options(**case.options).schema(case.schema).load(src))


def auto_loader_rows(spark, case: Case, src: str, tmp_path) -> list[tuple]:
    name = f"parity_{uuid.uuid4().hex[:12]}"
    query = (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", case.fmt)
        .option("cloudFiles.schemaLocation", str(tmp_path / "schema"))
        .options(**case.options)
        .schema(case.schema)
        .load(src)
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return _rows(spark.table(name))


def copy_into_rows(spark, case: Case, src: str, tmp_path) -> list[tuple]:
    path = str(tmp_path / "table")
    columns = spark.createDataFrame([], case.schema).schema
    DeltaTable.create(spark).location(path).addColumns(columns).execute()
    target = f"delta.`{path}`"
    copy_into(spark, target, src, case.fmt.upper(), format_options=case.options, **case.copy_into)
    return _rows(spark.read.format("delta").load(path))


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_every_honoured_option_has_a_case(fmt):
    cases = CSV if fmt == "csv" else JSON
    used = {name.lower() for case in cases for name in case.options}
    honoured = {key for key, option in TABLES[fmt].items() if not option.refused}
    assert honoured - used == set()


@pytest.mark.parametrize("case", CSV + JSON, ids=lambda c: f"{c.fmt}-{c.name}")
def test_rows_match_sparks_reader(spark, tmp_path, case):
    src = _land(tmp_path, case)
    expected = spark_rows(spark, case, src)
    assert expected, "the case must read some rows"
    assert auto_loader_rows(spark, case, src, tmp_path) == expected
    assert copy_into_rows(spark, case, src, tmp_path) == expected


@pytest.mark.parametrize(
    "case",
    [
        Case("failfast", "csv", "a,b\n1,2\nx,3\n", "a int, b int",
             {"header": "true", "mode": "FAILFAST"}),
        Case("failfast", "json", '{"a": 1}\nnot json\n', "a int", {"mode": "FAILFAST"}),
    ],
    ids=lambda c: c.fmt,
)  # fmt: skip
def test_failfast_stops_all_three_at_the_malformed_record(spark, tmp_path, case):
    src = _land(tmp_path, case)
    with pytest.raises(Exception, match="(?i)malformed"):
        spark_rows(spark, case, src)
    with pytest.raises(Exception, match=r"MALFORMED_RECORD_IN_PARSING.*data\."):
        auto_loader_rows(spark, case, src, tmp_path)
    with pytest.raises(Exception, match=r"COPY_INTO_BAD_DATA.*data\."):
        copy_into_rows(spark, case, src, tmp_path)
