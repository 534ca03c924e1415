"""The option tables: what each option becomes in the typed options, and how the others are
refused. Spark-free."""

from __future__ import annotations

import pyarrow as pa
import pytest

from headwater.errors import OptionError
from headwater.formats.datetimes import compile_pattern, to_iso
from headwater.formats.options import (
    FORMATS,
    TABLES,
    AvroOptions,
    CsvOptions,
    JsonOptions,
    TextOptions,
    parse_format_options,
)


def test_every_format_has_a_table_and_every_option_one_fate():
    assert set(TABLES) == set(FORMATS)
    for fmt, table in TABLES.items():
        for key, option in table.items():
            assert key == option.name.lower()
            fates = [option.refused is not None, option.only is not None, option.field is not None]
            assert sum(fates) <= 1, f"{fmt}.{option.name}"
            if option.refused:
                assert option.parse is None and option.field is None


def test_csv_options_become_typed_fields():
    opts = parse_format_options(
        "CSV",
        {
            "Header": "false", "delimiter": "\\t", "QUOTE": "'", "escape": "", "comment": "#",
            "nullValue": "NA", "emptyValue": "-", "nanValue": "nan!", "positiveInf": "+oo",
            "negativeInf": "-oo", "ignoreLeadingWhiteSpace": "true",
            "ignoreTrailingWhiteSpace": "TRUE", "charset": "latin-1", "lineSep": ";",
            "multiLine": "true", "mode": "DropMalformed", "columnNameOfCorruptRecord": "bad",
            "inferSchema": "true", "locale": "en-US", "timeZone": "UTC",
            "maxCharsPerColumn": "-1", "mergeSchema": "true",
        },
    )  # fmt: skip
    assert isinstance(opts, CsvOptions)
    assert (opts.header, opts.sep, opts.quote, opts.escape, opts.comment) == (
        False, "\t", "'", "", "#"
    )  # fmt: skip
    assert (opts.null_value, opts.empty_value) == ("NA", "-")
    assert (opts.nan_value, opts.positive_inf, opts.negative_inf) == ("nan!", "+oo", "-oo")
    assert opts.ignore_leading_white_space and opts.ignore_trailing_white_space
    assert (opts.encoding, opts.line_sep, opts.multiline) == ("latin-1", ";", True)
    assert (opts.mode, opts.corrupt_column, opts.infer_schema) == ("dropmalformed", "bad", True)


def test_json_text_and_avro_options_become_typed_fields():
    opts = parse_format_options(
        "json",
        {"allowComments": "true", "primitivesAsString": "true", "lineSep": "|",
         "dateFormat": "dd/MM/yyyy", "timestampNTZFormat": "yyyy-MM-dd HH:mm",
         "allowSingleQuotes": "false", "prefersDecimal": "false"},
    )  # fmt: skip
    assert isinstance(opts, JsonOptions)
    assert opts.allow_comments and opts.primitives_as_string and opts.line_sep == "|"
    assert opts.date_format.text == "dd/MM/yyyy" and opts.timestamp_format is None
    assert opts.timestamp_ntz_format.fields == ("year", "month", "day", "hour", "minute")
    text = parse_format_options(
        "text", {"wholetext": "true", "lineSep": "\r\n", "mode": "FAILFAST"}
    )
    assert text == TextOptions(whole_text=True, line_sep="\r\n")
    avro = parse_format_options("avro", {"avroSchema": '{"type": "long"}', "ignoreExtension": "1"})
    assert avro == AvroOptions(avro_schema='{"type": "long"}')


@pytest.mark.parametrize(
    ("fmt", "options", "match"),
    [
        ("csv", {"samplingRatio": "0.5"}, r"Option 'samplingRatio' is not supported.*inference"),
        ("csv", {"EnforceSchema": "false"}, r"Option 'EnforceSchema' is not supported"),
        ("csv", {"compression": "gzip"}, r"'compression' .*write option"),
        ("json", {"allowSingleQuotes": "true"}, r"'allowSingleQuotes' = 'true' is not supported"),
        ("json", {"timeZone": "Europe/Oslo"}, r"'timeZone' = 'Europe/Oslo'.*read as UTC"),
        ("csv", {"locale": "fr-FR"}, r"'locale' = 'fr-FR'.*English"),
        ("parquet", {"mergeSchema": "false"}, r"'mergeSchema' = 'false'.*set 'true'"),
        ("parquet", {"int96RebaseMode": "LEGACY"}, r"'int96RebaseMode' = 'LEGACY'"),
        ("json", {"header": "true"}, r"'header' does not apply to json files.*csv"),
        ("orc", {"avroSchema": "{}"}, r"'avroSchema' does not apply to orc"),
        ("csv", {"hedaer": "true"}, r"Unknown option 'hedaer'.*Did you mean 'header'\?"),
        ("json", {"multline": "true"}, r"Did you mean 'multiLine'\?"),
        ("csv", {"sep": "||"}, r"'sep' must be a single character"),
        ("csv", {"header": "maybe"}, r"'header' must be true or false, not 'maybe'"),
        ("csv", {"encoding": "klingon"}, r"unknown encoding 'klingon'"),
        ("json", {"mode": "LOOSE"}, r"FAILFAST, PERMISSIVE or DROPMALFORMED, not 'LOOSE'"),
        ("avro", {"avroSchema": "{not json"}, r"'avroSchema' is not a valid Avro schema"),
        ("xml", {}, r"Unsupported format 'xml'"),
    ],
)
def test_options_not_honoured_are_errors_naming_them_as_typed(fmt, options, match):
    with pytest.raises(OptionError, match=match):
        parse_format_options(fmt, options)


def test_callers_own_options_are_skipped_and_suggested():
    own = {"cloudfiles.format": "cloudFiles.format", "pathglobfilter": "pathGlobFilter"}
    opts = parse_format_options("csv", {"cloudFiles.format": "csv", "pathGlobFilter": "*"}, own=own)
    assert opts == CsvOptions()
    with pytest.raises(OptionError, match=r"for the source\. Did you mean 'pathGlobFilter'\?"):
        parse_format_options("csv", {"pathGlobFiltr": "*"}, own=own, context="the source")
    with pytest.raises(OptionError, match=r"does not apply to FILEFORMAT = CSV"):
        parse_format_options("csv", {"allowComments": "true"}, label="FILEFORMAT = CSV")


def test_not_strict_drops_what_it_would_refuse_but_still_checks_honoured_values():
    lax = {"samplingRatio": "0.1", "header": "false", "nonsense": "1", "allowComments": "true"}
    assert parse_format_options("csv", lax, strict=False) == CsvOptions(header=False)
    with pytest.raises(OptionError, match="header"):
        parse_format_options("csv", {"header": "maybe"}, strict=False)


# ------------------------------------------------------------------------------ patterns


@pytest.mark.parametrize(
    ("pattern", "value", "date_only", "iso"),
    [
        ("dd/MM/yyyy", "08/04/2024", True, "2024-04-08"),
        ("d/M/yyyy", "8/4/2024", True, "2024-04-08"),
        ("yy-MM-dd", "24-01-05", True, "2024-01-05"),
        ("MM/dd/yyyy HH:mm", "01/05/2024 13:02", False, "2024-01-05 13:02:00"),
        ("MMM d, yyyy", "jan 5, 2024", True, "2024-01-05"),
        ("MMMM d yyyy", "September 30 2024", True, "2024-09-30"),
        ("hh:mm a", "12:30 AM", False, "1970-01-01 00:30:00"),
        ("hh:mm a", "01:30 pm", False, "1970-01-01 13:30:00"),
        ("yyyy-MM-dd'T'HH:mm:ss.SSSSSSSSSXXX", "2024-01-02T03:04:05.123456789z", False,
         "2024-01-02 03:04:05.123456Z"),
        ("yyyyMMddHHmmssZ", "20240102030405+0200", False, "2024-01-02 03:04:05+0200"),
        ("''yyyy''", "'2024'", True, "2024-01-01"),
        ("dd/MM/yyyy", "8/04/2024", True, None),  # dd is two digits
        ("dd/MM/yyyy", "08/04/2024 10:00", True, None),  # the whole value must match
        ("hh:mm a", "13:30 pm", False, None),  # h is 1 to 12
        ("MMM d, yyyy", "Foo 5, 2024", True, None),
    ],
)  # fmt: skip
def test_patterns_become_iso_text_or_null(pattern, value, date_only, iso):
    compiled = compile_pattern(pattern, "timestampFormat")
    assert to_iso(compiled, pa.array([value, None]), date_only).to_pylist() == [iso, None]


@pytest.mark.parametrize(
    ("pattern", "match"),
    [
        ("EEE, dd MMM yyyy", r"'EEE' \(the day of the week\)"),
        ("yyyy-MM-dd[ HH:mm]", r"'\[' \(optional sections\)"),
        ("yyyy-DDD", r"'DDD' \(the day of the year\)"),
        ("yyy-MM", r"'yyy'"),
        ("dd/MM/yyyy hh:mm", r"'h' and 'a'"),
        ("yyyy-MM-dd HH:mm z", r"'z' \(a time-zone name\)"),
        ("MM MMM", r"sets one field twice"),
        ("yyyy-MM-dd'T", r"unclosed quote"),
        ("", r"is empty"),
    ],
)
def test_patterns_that_cannot_be_parsed_exactly_are_refused(pattern, match):
    with pytest.raises(OptionError, match=match):
        compile_pattern(pattern, "dateFormat")


def test_a_zone_in_a_timestamp_ntz_pattern_is_refused():
    with pytest.raises(OptionError, match="zone offset"):
        parse_format_options("csv", {"timestampNTZFormat": "yyyy-MM-dd HH:mmXXX"})
