"""One option table per file format: every Spark reader option of the format, and what
headwater does with it. Auto Loader and COPY INTO both parse format options here, so a name is
honoured or refused the same way in both.

Each option is one of:

* honoured: the reader applies it (the value is parsed into a field of the format's typed
  options, which is all the readers see);
* refused: an error names it, says it is not supported and what happens instead, because an
  option accepted and ignored reads silently wrong data; some options are honoured for the
  values headwater's reader already follows (``allowSingleQuotes=false``) and refused for
  the others;
* pass-through: accepted and unused, only where it has no effect on the values read (``mode``
  for text files, which have no malformed records).

Names are case-insensitive; errors quote them as the user typed them and suggest the closest
known name for a misspelling.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from headwater.errors import OptionError
from headwater.formats.datetimes import DatetimePattern, compile_pattern
from headwater.options import as_bool, unknown_option

__all__ = [
    "FORMATS",
    "AvroOptions",
    "BinaryFileOptions",
    "CsvOptions",
    "FormatOptions",
    "JsonOptions",
    "Option",
    "OrcOptions",
    "ParquetOptions",
    "TABLES",
    "TextOptions",
    "parse_avro_schema",
    "parse_format_options",
]

FORMATS = ("json", "csv", "parquet", "text", "avro", "orc", "binaryfile")
MODES = ("permissive", "dropmalformed", "failfast")


# ------------------------------------------------------------------------------ typed options


@dataclass(frozen=True)
class FormatOptions:
    """What every reader takes. ``mode`` None: not set (see :mod:`headwater.formats.conform`
    for how that differs from PERMISSIVE)."""

    format: ClassVar[str] = ""
    mode: str | None = None


@dataclass(frozen=True)
class TextInput(FormatOptions):
    """Formats read as text: transcoded from ``encoding``; records end at ``line_sep`` (None:
    ``\\n`` or ``\\r\\n``)."""

    encoding: str = "utf-8"
    line_sep: str | None = None


@dataclass(frozen=True)
class RecordText(TextInput):
    """JSON and CSV: records of named values parsed from text."""

    multiline: bool = False
    corrupt_column: str = "_corrupt_record"
    date_format: DatetimePattern | None = None
    timestamp_format: DatetimePattern | None = None
    timestamp_ntz_format: DatetimePattern | None = None
    infer_schema: bool | None = None  # None: the caller's default (typed or strings)


@dataclass(frozen=True)
class JsonOptions(RecordText):
    format: ClassVar[str] = "json"
    allow_comments: bool = False
    primitives_as_string: bool = False


@dataclass(frozen=True)
class CsvOptions(RecordText):
    format: ClassVar[str] = "csv"
    header: bool = True
    sep: str = ","
    quote: str = '"'
    escape: str = "\\"
    comment: str | None = None
    null_value: str | None = None  # None: not set (empty values: see the CSV reader)
    empty_value: str | None = None
    nan_value: str = "NaN"
    positive_inf: str = "Inf"
    negative_inf: str = "-Inf"
    ignore_leading_white_space: bool = False
    ignore_trailing_white_space: bool = False


@dataclass(frozen=True)
class TextOptions(TextInput):
    format: ClassVar[str] = "text"
    whole_text: bool = False


@dataclass(frozen=True)
class ParquetOptions(FormatOptions):
    format: ClassVar[str] = "parquet"


@dataclass(frozen=True)
class AvroOptions(FormatOptions):
    format: ClassVar[str] = "avro"
    avro_schema: str | None = None


@dataclass(frozen=True)
class OrcOptions(FormatOptions):
    format: ClassVar[str] = "orc"


@dataclass(frozen=True)
class BinaryFileOptions(FormatOptions):
    format: ClassVar[str] = "binaryfile"


_TYPES: dict[str, type[FormatOptions]] = {
    t.format: t
    for t in (JsonOptions, CsvOptions, TextOptions, ParquetOptions, AvroOptions, OrcOptions,
              BinaryFileOptions)
}  # fmt: skip


# ------------------------------------------------------------------------------ value parsers

Parse = Callable[[str, str], object]  # (value, name as typed) -> field value


def _text(value: str, name: str) -> str:
    return value


def _flag(value: str, name: str) -> bool:
    return as_bool(value, name)


def _char(value: str, name: str) -> str:
    value = "\t" if value == "\\t" else value
    if len(value) != 1:
        raise OptionError(f"Option '{name}' must be a single character, not {value!r}.")
    return value


def _char_or_none(value: str, name: str) -> str:
    """``quote``/``escape``: one character, or empty to turn quoting/escaping off."""
    return value if value == "" else _char(value, name)


def _encoding(value: str, name: str) -> str:
    try:
        codecs.lookup(value)
    except LookupError:
        raise OptionError(f"Option '{name}': unknown encoding {value!r}.") from None
    return value


def _mode(value: str, name: str) -> str:
    mode = value.strip().lower()
    if mode not in MODES:
        raise OptionError(
            f"Option '{name}' must be FAILFAST, PERMISSIVE or DROPMALFORMED, not '{value}'."
        )
    return mode


def _nonempty(value: str, name: str) -> str:
    if not value:
        raise OptionError(f"Option '{name}' must not be empty.")
    return value


def _csv_line_sep(value: str, name: str) -> str:
    if value not in ("\n", "\r", "\r\n") and len(value) != 1:
        raise OptionError(f"Option '{name}' of CSV must be one character or \\r\\n, not {value!r}.")
    return value


def parse_avro_schema(value: str, name: str) -> object:
    """The parsed schema of the ``avroSchema`` option (fastavro's form)."""
    import fastavro  # here, not at the top: most streams read no Avro (see avro_reader)

    try:
        return fastavro.parse_schema(json.loads(value))
    except (ValueError, TypeError, KeyError, fastavro.schema.SchemaParseException) as e:
        raise OptionError(f"Option '{name}' is not a valid Avro schema: {e}") from e


def _avro_schema(value: str, name: str) -> str:
    parse_avro_schema(value, name)
    return value


def _pattern(zone_allowed: bool = True) -> Parse:
    return lambda value, name: compile_pattern(value, name, zone_allowed)


_UTC = "UTC|Z|GMT|Etc/UTC|+00:00|UTC+00:00|GMT+00:00|0"
_EN = "en-US|en|en_US"


# ------------------------------------------------------------------------------ the tables


@dataclass(frozen=True)
class Option:
    """One Spark reader option: ``field`` of the typed options it sets (None: pass-through or
    refused), ``parse`` its value, or ``refused``: why not, and what happens instead."""

    name: str
    field: str | None = None
    parse: Parse | None = None
    refused: str | None = None
    only: str | None = None  # honoured only for these values ("a|b"); refused for others


def _honour(name: str, field: str | None, parse: Parse) -> Option:
    return Option(name, field, parse)


def _only(name: str, allowed: str, instead: str) -> Option:
    """Honoured for the value the reader follows anyway (compared case-insensitively),
    refused for any other, saying what the reader does instead."""

    def parse(value: str, given: str) -> None:
        if allowed in ("true", "false"):
            honoured = as_bool(value, given) == (allowed == "true")
        else:
            honoured = value.strip().lower() in allowed.lower().split("|")
        if not honoured:
            raise OptionError(
                f"Option '{given}' = '{value}' is not supported: {instead}. Remove it, or set "
                f"'{allowed.split('|')[0]}'."
            )

    return Option(name, None, parse, only=allowed)


def _refuse(name: str, why: str) -> Option:
    return Option(name, refused=why)


def _write_only(*names: str) -> list[Option]:
    return [_refuse(n, "it is a write option (compressed files are read by extension)")
            for n in names]  # fmt: skip


_MERGE = _only("mergeSchema", "true", "inference always merges every file's schema")
_PASS_MODE = Option("mode", None, lambda v, n: _mode(v, n) and None)  # nothing is malformed
_TEXT_INPUT = [
    _honour("encoding", "encoding", _encoding),
    _honour("charset", "encoding", _encoding),
]
_RECORDS = _TEXT_INPUT + [
    _honour("multiLine", "multiline", _flag),
    _honour("mode", "mode", _mode),
    _honour("columnNameOfCorruptRecord", "corrupt_column", _nonempty),
    _honour("dateFormat", "date_format", _pattern()),
    _honour("timestampFormat", "timestamp_format", _pattern()),
    _honour("timestampNTZFormat", "timestamp_ntz_format", _pattern(zone_allowed=False)),
    _honour("inferSchema", "infer_schema", _flag),
    _only("locale", _EN, "month names are read in English (en-US)"),
    _only("timeZone", _UTC, "timestamps without an offset are read as UTC"),
    _refuse("enableDateTimeParsingFallback", "with dateFormat/timestampFormat set, a value "
            "that does not match the pattern does not fit its column (Spark's default)"),
    _refuse("samplingRatio", "schema inference reads whole sampled files"),
    _MERGE,
]  # fmt: skip
_JSON = _RECORDS + [
    _honour("lineSep", "line_sep", _nonempty),
    _honour("allowComments", "allow_comments", _flag),
    _honour("primitivesAsString", "primitives_as_string", _flag),
    _only("allowSingleQuotes", "false", "single-quoted JSON is malformed"),
    _only("allowUnquotedFieldNames", "false", "unquoted names are malformed"),
    _only("allowNumericLeadingZeros", "false", "numbers like 007 are malformed"),
    _only("allowBackslashEscapingAnyCharacter", "false", "only JSON's escapes are read"),
    _only("allowUnquotedControlChars", "false", "raw control characters are malformed"),
    _only("prefersDecimal", "false", "inference reads fractions as double"),
    _only("dropFieldIfAllNull", "false", "inference keeps all-null fields as strings"),
    _refuse("allowNonNumericNumbers", "NaN, Infinity and -Infinity are always read as numbers"),
    _refuse("singleVariantColumn", "variant columns are not supported"),
    *_write_only("compression", "ignoreNullFields"),
]  # fmt: skip
_CSV = _RECORDS + [
    _honour("lineSep", "line_sep", _csv_line_sep),
    _honour("header", "header", _flag),
    _honour("sep", "sep", _char),
    _honour("delimiter", "sep", _char),
    _honour("quote", "quote", _char_or_none),
    _honour("escape", "escape", _char_or_none),
    _honour("comment", "comment", _char_or_none),
    _honour("nullValue", "null_value", _text),
    _honour("emptyValue", "empty_value", _text),
    _honour("nanValue", "nan_value", _text),
    _honour("positiveInf", "positive_inf", _text),
    _honour("negativeInf", "negative_inf", _text),
    _honour("ignoreLeadingWhiteSpace", "ignore_leading_white_space", _flag),
    _honour("ignoreTrailingWhiteSpace", "ignore_trailing_white_space", _flag),
    _only("maxCharsPerColumn", "-1", "values of any length are read"),
    _refuse("maxColumns", "rows of any width are read"),
    _refuse("enforceSchema", "with a header, columns are matched to the schema by name; "
            "without one, by position"),
    _refuse("preferDate", "inference does not infer dates from CSV text"),
    _refuse("charToEscapeQuoteEscaping", "only 'escape' escapes quotes"),
    _refuse("unescapedQuoteHandling", "a stray quote is read as Arrow's parser reads it"),
    *_write_only("compression", "quoteAll", "escapeQuotes"),
]  # fmt: skip
_AVRO = [
    _honour("avroSchema", "avro_schema", _avro_schema),
    _honour("mode", "mode", _mode),
    _MERGE,
    _only("ignoreExtension", "true", "every file is read, whatever its extension"),
    _only("positionalFieldMatching", "false", "fields are matched by name"),
    _only("datetimeRebaseMode", "CORRECTED", "dates are read as written"),
    _only("enableStableIdentifiersForUnionType", "false", "union members are member0, ..."),
    _refuse("stableIdentifierPrefixForUnionType", "union members are named member0, ..."),
    _refuse("recursiveFieldMaxDepth", "recursive Avro types are refused"),
    *_write_only("compression", "recordName", "recordNamespace"),
]  # fmt: skip
_REBASE = "dates and timestamps are read as written (proleptic Gregorian)"
_PARQUET = [
    _honour("mode", "mode", _mode),
    _MERGE,
    _only("datetimeRebaseMode", "CORRECTED", _REBASE),
    _only("int96RebaseMode", "CORRECTED", _REBASE),
    *_write_only("compression"),
]
_ORC = [_honour("mode", "mode", _mode), _MERGE, *_write_only("compression")]
_TEXT = _TEXT_INPUT + [
    _honour("lineSep", "line_sep", _nonempty),
    _honour("wholetext", "whole_text", _flag),
    _PASS_MODE,
    Option("mergeSchema"),  # one column, always
    *_write_only("compression"),
]
_BINARY = [_PASS_MODE, Option("mergeSchema")]

TABLES: dict[str, dict[str, Option]] = {
    fmt: {o.name.lower(): o for o in table}
    for fmt, table in (("json", _JSON), ("csv", _CSV), ("text", _TEXT), ("parquet", _PARQUET),
                       ("avro", _AVRO), ("orc", _ORC), ("binaryfile", _BINARY))
}  # fmt: skip


# ------------------------------------------------------------------------------ parsing


def parse_format_options(
    fmt: str,
    options: Mapping[str, object],
    *,
    own: Mapping[str, str] | None = None,
    context: str | None = None,
    label: str | None = None,
    strict: bool = True,
) -> FormatOptions:
    """The typed options of ``fmt`` from ``options`` as given (any case). Names in ``own``
    (lower case -> spelling) belong to the caller and are skipped here, but count as known
    in the suggestion for a misspelling. ``context`` names where options are given and
    ``label`` the format, in the caller's words (errors). ``strict`` False
    (``cloudFiles.validateOptions=false``): unknown, refused and other formats' options are
    dropped unchecked; a bad value of an honoured option is still an error."""
    kind = _TYPES.get(str(fmt).lower())
    if kind is None:
        raise OptionError(f"Unsupported format '{fmt}'; use one of {', '.join(FORMATS)}.")
    table, own = TABLES[kind.format], own or {}
    values: dict[str, Any] = {}
    for given, raw in options.items():
        if raw is None or str(given).lower() in own:
            continue
        name, value = str(given), str(raw)
        option = table.get(name.lower())
        if option is None or option.refused:
            if strict:
                where = (context or f"{kind.format} files", label or f"{kind.format} files")
                raise _not_honoured(name, kind.format, option, own, *where)
            continue
        parsed = option.parse(value, name) if option.parse else None
        if option.field:
            values[option.field] = parsed
    return kind(**values)


def _not_honoured(
    name: str, fmt: str, option: Option | None, own: Mapping[str, str], context: str, label: str
) -> OptionError:
    if option is not None:
        return OptionError(
            f"Option '{name}' is not supported by headwater's {fmt} reader: {option.refused}. "
            "Remove it."
        )
    others = [f for f, t in TABLES.items() if f != fmt and name.lower() in t]
    if others:
        return OptionError(
            f"Option '{name}' does not apply to {label}; it is an option of "
            f"{', '.join(others)} files."
        )
    usable = {k: o.name for k, o in TABLES[fmt].items() if not o.refused}
    return unknown_option(name, {*usable, *own}, context, {**usable, **own})
