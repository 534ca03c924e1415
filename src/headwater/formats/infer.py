"""The schema of one file, as Auto Loader and COPY INTO infer it, and how schemas merge.

JSON and CSV columns are strings unless types are inferred (the caller's default, overridden
by the ``inferSchema`` option; ``primitivesAsString`` keeps JSON's nesting with string
leaves); Parquet, ORC and Avro files carry their types; text and binaryFile have fixed
schemas. The file is read through the same chunking, transcoding and option handling as the
readers, so inference sees the values the readers will read. Integers are ``bigint`` and
fractions ``double``; columns differing only in case are one column.

As in Spark's JSON and CSV inference, a value that is NULL everywhere in a file gives no
type: merged with other files it takes theirs, and only a column no file types settles as
string (:func:`settle`, which also orders a JSON file's nested struct fields by name, as
Spark's JSON inference does).
"""

from __future__ import annotations

import io
import itertools
import json

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_type
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    StringType,
    StructField,
    StructType,
)

from headwater import storage
from headwater.formats import options as o
from headwater.formats.avro_reader import avro_schema
from headwater.formats.binary_file import BINARY_FILE_SCHEMA
from headwater.formats.chunks import byte_chunks
from headwater.formats.csv_reader import cell
from headwater.formats.csv_records import Dialect
from headwater.formats.json_reader import as_json_lines, strip_comments
from headwater.formats.orc_reader import orc_schema

__all__ = ["infer_file", "merge", "settle", "widen"]

_CSV_SAMPLE_RECORDS = 10_000  # CSV types come from the first records, as Arrow's first block


def infer_file(
    path: str, options: o.FormatOptions, infer_types: bool, unsettled: bool = False
) -> StructType:
    """The schema of the file at ``path``. ``infer_types``: whether JSON/CSV columns get
    types (Auto Loader: ``cloudFiles.inferColumnTypes``; COPY INTO: typed, CSV strings).
    ``unsettled``: a column NULL throughout the file stays ``NullType``, for a caller that
    merges several files' schemas and then calls :func:`settle`."""
    schema = _infer_file(path, options, infer_types)
    return schema if unsettled else settle(schema, options)


def settle(schema: StructType, options: o.FormatOptions) -> StructType:
    """The merged schema as Spark's inference ends it: a type no file gave (``NullType``,
    also as an array's element) is string; JSON's nested struct fields sorted by name (the
    top-level columns keep the files' order)."""
    by_name = isinstance(options, o.JsonOptions)
    return StructType(
        [StructField(f.name, _settled(f.dataType, by_name), f.nullable) for f in schema]
    )


def _settled(t: DataType, by_name: bool) -> DataType:
    if isinstance(t, NullType):
        return StringType()
    if isinstance(t, StructType):
        fields = [StructField(f.name, _settled(f.dataType, by_name), f.nullable) for f in t]
        return StructType(sorted(fields, key=lambda f: f.name) if by_name else fields)
    if isinstance(t, ArrayType):
        return ArrayType(_settled(t.elementType, by_name), t.containsNull)
    if isinstance(t, MapType):
        return MapType(
            _settled(t.keyType, by_name), _settled(t.valueType, by_name), t.valueContainsNull
        )
    return t


def _infer_file(path: str, options: o.FormatOptions, infer_types: bool) -> StructType:
    if isinstance(options, o.RecordText) and options.infer_schema is not None:
        infer_types = options.infer_schema
    if isinstance(options, o.TextOptions):
        return StructType([StructField("value", StringType(), True)])
    if isinstance(options, o.ParquetOptions):
        fs, inner = storage.filesystem(path)
        with fs.open_input_file(inner) as f:
            return _to_spark(pq.read_schema(f), strings=False)
    if isinstance(options, o.OrcOptions):
        return _to_spark(orc_schema(path), strings=False)
    if isinstance(options, o.AvroOptions):
        return _to_spark(avro_schema(path, options), strings=False)
    if isinstance(options, o.BinaryFileOptions):
        return BINARY_FILE_SCHEMA
    if isinstance(options, o.JsonOptions):
        arrow = pa.schema(
            [f.with_type(_no_timestamps(f.type)) for f in _json_schema(path, options)]
        )
        if options.primitives_as_string and infer_types:
            return _to_spark(arrow, strings=True)
        return _to_spark(arrow, strings=not infer_types, top_level_strings=True)
    if isinstance(options, o.CsvOptions):
        return _csv_schema(path, options, infer_types)
    raise TypeError(f"not the options of a file format: {options!r}")


def _no_timestamps(t: pa.DataType) -> pa.DataType:
    """Arrow reads ISO-looking JSON strings as timestamps; Spark's JSON inference (and the
    known platform's, ``inferTimestamp`` false by default) keeps them strings."""
    if pa.types.is_timestamp(t):
        return pa.string()
    if pa.types.is_struct(t):
        return pa.struct(
            [t.field(i).with_type(_no_timestamps(t.field(i).type)) for i in range(t.num_fields)]
        )
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(_no_timestamps(t.value_type))
    return t


def _json_schema(path: str, opts: o.JsonOptions) -> pa.Schema:
    if opts.multiline:
        data = b"".join(byte_chunks(path, opts.encoding, whole=True))
        doc = json.loads(strip_comments(data, True) if opts.allow_comments else data)
        rows = doc if isinstance(doc, list) else [doc]
        return pa.Table.from_pylist([r for r in rows if isinstance(r, dict)]).schema
    sep = (opts.line_sep or "\n").encode()
    data = b"".join(byte_chunks(path, opts.encoding, sep=sep))
    data = as_json_lines(data, sep) if sep != b"\n" else data
    data = strip_comments(data, False) if opts.allow_comments else data
    try:
        return pajson.read_json(io.BytesIO(data)).schema
    except pa.ArrowInvalid:
        pass
    # Malformed lines or fields whose type changes: infer from the lines that parse.
    fields: dict[str, DataType] = {}
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        for key, value in row.items() if isinstance(row, dict) else ():
            try:
                dtype = _to_spark_type(pa.array([value]).type, strings=False)
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                dtype = StringType()
            fields[key] = widen(fields[key], dtype) if key in fields else dtype
    return pa.schema([(k, to_arrow_type(v)) for k, v in fields.items()])


def _csv_schema(path: str, opts: o.CsvOptions, infer_types: bool) -> StructType:
    """Names from the header (or ``_c<i>``); types, when asked for, inferred by Arrow from the
    first records as the reader reads them (quotes, trimming, ``nullValue`` applied)."""
    sep = (opts.line_sep or "\n").encode()
    chunk = next(byte_chunks(path, opts.encoding, whole=opts.multiline, sep=sep), b"")
    records = Dialect.of(opts).records(chunk.decode())
    first = next(records, None)
    if first is None:
        return StructType([])
    width = len(first.values)
    names = first.values if opts.header else [f"_c{i}" for i in range(width)]
    if not infer_types:
        return StructType([StructField(n, StringType(), True) for n in names])
    sample = list(itertools.islice(records, _CSV_SAMPLE_RECORDS))
    if not opts.header:
        sample.insert(0, first)
    lines = []
    for record in sample:  # the values as the reader takes them, rewritten as plain CSV
        values = [cell(record, i, opts) for i in range(width)]
        lines.append(",".join("" if not v else '"' + v.replace('"', '""') + '"' for v in values))
    plain = ("\n".join(lines) + "\n").encode()
    columns = [f"c{i}" for i in range(width)]
    read = pacsv.ReadOptions(column_names=columns)
    typed = pacsv.read_csv(io.BytesIO(plain), read).schema if lines else None
    return StructType(
        [
            StructField(
                n, _to_spark_type(typed.field(i).type, False) if typed else StringType(), True
            )
            for i, n in enumerate(names)
        ]
    )


def _to_spark(arrow: pa.Schema, strings: bool, top_level_strings: bool = False) -> StructType:
    fields: list[StructField] = []
    seen: set[str] = set()
    for f in arrow:
        if f.name.lower() in seen:
            continue  # case-only duplicates are one column; the clash is rescued at read time
        seen.add(f.name.lower())
        dtype = StringType() if (strings and top_level_strings) else _to_spark_type(f.type, strings)
        fields.append(StructField(f.name, dtype, True))
    return StructType(fields)


def _to_spark_type(t: pa.DataType, strings: bool) -> DataType:
    if pa.types.is_struct(t):
        return StructType(
            [
                StructField(t.field(i).name, _to_spark_type(t.field(i).type, strings), True)
                for i in range(t.num_fields)
            ]
        )
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return ArrayType(_to_spark_type(t.value_type, strings), True)
    if pa.types.is_map(t):
        return MapType(
            _to_spark_type(t.key_type, strings), _to_spark_type(t.item_type, strings), True
        )
    if strings:
        return StringType()
    if pa.types.is_null(t):
        return NullType()  # no type from this file: the others' (see settle)
    if pa.types.is_integer(t):
        return LongType()
    if pa.types.is_floating(t):
        return DoubleType()
    if pa.types.is_boolean(t):
        return BooleanType()
    if pa.types.is_large_string(t):
        return StringType()
    return from_arrow_type(t)


def widen(a: DataType, b: DataType) -> DataType:
    """The type both ``a`` and ``b`` fit in (the widest wins; otherwise string)."""
    if a == b or isinstance(b, NullType):
        return a
    if isinstance(a, NullType):
        return b
    if isinstance(a, StructType) and isinstance(b, StructType):
        return merge(a, b)
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        return ArrayType(widen(a.elementType, b.elementType), True)
    numeric = (LongType, DoubleType)
    if isinstance(a, numeric) and isinstance(b, numeric):
        return DoubleType()
    if isinstance(a, (IntegerType, LongType)) and isinstance(b, (IntegerType, LongType)):
        return LongType()
    if isinstance(a, DecimalType) and isinstance(b, DecimalType):
        scale = max(a.scale, b.scale)
        return DecimalType(
            min(38, max(a.precision - a.scale, b.precision - b.scale) + scale), scale
        )
    return StringType()


def merge(a: StructType, b: StructType) -> StructType:
    """``a`` with ``b``'s columns merged in (by name, case-insensitive); new columns appended."""
    fields = list(a.fields)
    index = {f.name.lower(): i for i, f in enumerate(fields)}
    for f in b:
        i = index.get(f.name.lower())
        if i is None:
            index[f.name.lower()] = len(fields)
            fields.append(StructField(f.name, f.dataType, True))
        else:
            old = fields[i]
            fields[i] = StructField(old.name, widen(old.dataType, f.dataType), True)
    return StructType(fields)
