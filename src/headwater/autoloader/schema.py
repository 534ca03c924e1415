"""Schema inference, hints, and the versioned schema store of an Auto Loader stream.

Inference reads a bounded sample (1000 files or 50 GB, newest first) with pyarrow's own
readers (fastavro for Avro headers); JSON and CSV columns are strings unless
``cloudFiles.inferColumnTypes``; Parquet, ORC and Avro files carry their types; binaryFile's
schema is fixed. The result is stored as ``<schemaLocation>/_schemas/<n>`` (JSON, one file
per version, created exclusively so concurrent writers cannot overwrite each other); later
starts read the newest version instead of inferring again, and evolution writes the next
version.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq
from pyspark.sql.pandas.types import from_arrow_type
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DoubleType,
    LongType,
    MapType,
    NullType,
    StringType,
    StructField,
    StructType,
)

from headwater.autoloader import readers_binary
from headwater.autoloader.discovery import Listed, partition_values
from headwater.autoloader.options import CloudFilesOptions
from headwater.autoloader.readers import CorruptFileError
from headwater.errors import HeadwaterError, OptionError
from headwater.sqltypes import parse_columns

SAMPLE_FILES = 1000
SAMPLE_BYTES = 50 * 1024**3
SCHEMAS_DIR = "_schemas"


class SchemaInferenceError(HeadwaterError):
    """No schema could be inferred (for example: no files yet, and no schema given)."""


# -- inference -----------------------------------------------------------------------------


def sample(files: Sequence[Listed]) -> list[Listed]:
    chosen, total = [], 0
    for f in sorted(files, key=lambda f: f.mtime_ms, reverse=True):
        if len(chosen) >= SAMPLE_FILES or (chosen and total + f.size > SAMPLE_BYTES):
            break
        chosen.append(f)
        total += f.size
    return chosen


def infer(
    files: Sequence[Listed], opts: CloudFilesOptions, root: str
) -> tuple[StructType, list[str]]:
    """The data schema and the partition columns of ``files`` (a sample)."""
    schema = readers_binary.BINARY_FILE_SCHEMA if opts.format == "binaryfile" else StructType([])
    for f in files:
        try:
            schema = merge(schema, infer_file(f.path, opts))
        except (
            pa.ArrowInvalid,
            OSError,
            UnicodeDecodeError,
            json.JSONDecodeError,
            CorruptFileError,
        ) as e:
            if opts.ignore_corrupt:
                continue
            raise SchemaInferenceError(
                f"Cannot infer a schema from {f.path}: {e}. Fix or remove the file, set "
                "ignoreCorruptFiles=true, or give the schema with .schema() or cloudFiles.schemaHints."
            ) from e
    parts = opts.partition_columns
    if parts is None:
        parts = []
        if not opts.recursive:
            for f in files:
                for key in partition_values(root, f.path):
                    if key not in parts:
                        parts.append(key)
    lower = {p.lower() for p in parts}
    schema = StructType([f for f in schema if f.name.lower() not in lower])
    return schema, parts


def infer_file(path: str, opts: CloudFilesOptions) -> StructType:
    fmt = opts.format
    if fmt == "text":
        return StructType([StructField("value", StringType(), True)])
    if fmt == "parquet":
        return _to_spark(pq.read_schema(path), strings=False)
    if fmt == "orc":
        return _to_spark(readers_binary.orc_schema(path), strings=False)
    if fmt == "avro":
        return _to_spark(readers_binary.avro_schema(path, opts.format_options), strings=False)
    if fmt == "binaryfile":
        return readers_binary.BINARY_FILE_SCHEMA
    if fmt == "json":
        arrow = _json_schema(path, opts)
        return _to_spark(arrow, strings=not opts.infer_column_types, top_level_strings=True)
    return _csv_schema(path, opts)


def _json_schema(path: str, opts: CloudFilesOptions) -> pa.Schema:
    if opts.format_options.get("multiline", "false").lower() == "true":
        with pa.input_stream(path, compression="detect") as stream:
            doc = json.loads(stream.read().decode(opts.format_options.get("encoding", "utf-8")))
        rows = doc if isinstance(doc, list) else [doc]
        return pa.Table.from_pylist([r for r in rows if isinstance(r, dict)]).schema
    try:
        return pajson.read_json(path).schema
    except pa.ArrowInvalid:
        # Malformed lines or fields whose type changes: infer from the lines that parse.
        rows = []
        with pa.input_stream(path, compression="detect") as stream:
            for line in (
                stream.read()
                .decode(opts.format_options.get("encoding", "utf-8"), "replace")
                .splitlines()
            ):
                try:
                    value = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(value, dict):
                    rows.append(value)
        fields: dict[str, DataType] = {}
        for row in rows:
            for key, value in row.items():
                try:
                    dtype = _to_spark_type(pa.array([value]).type, strings=False)
                except (pa.ArrowInvalid, pa.ArrowTypeError):
                    dtype = StringType()
                fields[key] = widen(fields[key], dtype) if key in fields else dtype
        return _from_spark_fields(fields)


def _from_spark_fields(fields: dict[str, DataType]) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_type

    return pa.schema(
        [
            (k, to_arrow_type(v if not isinstance(v, NullType) else StringType()))
            for k, v in fields.items()
        ]
    )


def _csv_schema(path: str, opts: CloudFilesOptions) -> StructType:
    o = opts.format_options
    header = o.get("header", "true").lower() == "true"
    parse = pacsv.ParseOptions(
        delimiter=o.get("sep", o.get("delimiter", ",")),
        quote_char=o.get("quote", '"') or False,
        escape_char=o.get("escape", "\\") or False,
        newlines_in_values=o.get("multiline", "false").lower() == "true",
        invalid_row_handler=lambda row: "skip",
    )
    read = pacsv.ReadOptions(
        autogenerate_column_names=not header, encoding=o.get("encoding", "utf8")
    )
    infer_types = opts.infer_column_types or o.get("inferschema", "false").lower() == "true"
    with pacsv.open_csv(path, read_options=read, parse_options=parse) as reader:
        arrow = reader.schema
    names = arrow.names if header else [f"_c{i}" for i in range(len(arrow.names))]
    if not infer_types:
        return StructType([StructField(n, StringType(), True) for n in names])
    typed = _to_spark(arrow, strings=False)
    return StructType(
        [StructField(n, f.dataType, True) for n, f in zip(names, typed.fields, strict=True)]
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
    if strings or pa.types.is_null(t) or pa.types.is_timestamp(t) and strings:
        return StringType()
    if pa.types.is_integer(t):
        return LongType()
    if pa.types.is_floating(t):
        return DoubleType()
    if pa.types.is_boolean(t):
        return BooleanType()
    if pa.types.is_large_string(t):
        return StringType()
    return from_arrow_type(t)


# -- merging and hints ---------------------------------------------------------------------


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
    from pyspark.sql.types import DecimalType, IntegerType

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


def apply_hints(schema: StructType, hints: str | None) -> StructType:
    """Override types with ``cloudFiles.schemaHints`` (``a int, s.b string, arr.element long``).

    A hint may name a column not seen yet: it is added.
    """
    if not hints:
        return schema
    for path, dtype in parse_columns(hints):
        schema = _set_path(schema, path, dtype, hints)
    return schema


def _set_path(struct: StructType, path: list[str], dtype: DataType, hints: str) -> StructType:
    head, rest = path[0], path[1:]
    fields = list(struct.fields)
    i = next((j for j, f in enumerate(fields) if f.name.lower() == head.lower()), None)
    if not rest:
        if i is None:
            fields.append(StructField(head, dtype, True))
        else:
            fields[i] = StructField(fields[i].name, dtype, True)
        return StructType(fields)
    current = fields[i].dataType if i is not None else StructType([])
    new = _set_nested(current, rest, dtype, hints)
    if i is None:
        fields.append(StructField(head, new, True))
    else:
        fields[i] = StructField(fields[i].name, new, True)
    return StructType(fields)


def _set_nested(current: DataType, rest: list[str], dtype: DataType, hints: str) -> DataType:
    step = rest[0].lower()
    if isinstance(current, ArrayType) and step == "element":
        inner = (
            dtype if len(rest) == 1 else _set_nested(current.elementType, rest[1:], dtype, hints)
        )
        return ArrayType(inner, True)
    if isinstance(current, MapType) and step in ("key", "value"):
        target = current.keyType if step == "key" else current.valueType
        inner = dtype if len(rest) == 1 else _set_nested(target, rest[1:], dtype, hints)
        return (
            MapType(inner, current.valueType, True)
            if step == "key"
            else MapType(current.keyType, inner, True)
        )
    if isinstance(current, StructType):
        return _set_path(current, rest, dtype, hints)
    if isinstance(current, StringType) and step not in ("element", "key", "value"):
        return _set_path(StructType([]), rest, dtype, hints)
    raise OptionError(
        f"cloudFiles.schemaHints '{hints}': cannot apply '{'.'.join(rest)}' to a column of type "
        f"{current.simpleString()}."
    )


# -- the schema store ----------------------------------------------------------------------


class SchemaStore:
    """``<location>/_schemas/<n>``: every schema version a stream has used."""

    def __init__(self, location: str) -> None:
        self.dir = os.path.join(location, SCHEMAS_DIR)

    def versions(self) -> list[int]:
        if not os.path.isdir(self.dir):
            return []
        return sorted(int(n) for n in os.listdir(self.dir) if n.isdigit())

    def latest(self) -> tuple[int, StructType, list[str]] | None:
        versions = self.versions()
        if not versions:
            return None
        with open(os.path.join(self.dir, str(versions[-1]))) as f:
            doc = json.load(f)
        return versions[-1], StructType.fromJson(doc["dataSchema"]), list(doc["partitionColumns"])

    def write(self, schema: StructType, partition_columns: list[str], reason: str) -> int:
        """Store the next version; returns its number (exclusive create: no lost update)."""
        os.makedirs(self.dir, exist_ok=True)
        while True:
            versions = self.versions()
            n = versions[-1] + 1 if versions else 0
            doc = {
                "dataSchema": schema.jsonValue(),
                "partitionColumns": partition_columns,
                "reason": reason,
            }
            tmp = os.path.join(self.dir, f".{n}.{os.getpid()}.{id(doc)}.tmp")
            with open(tmp, "w") as f:
                json.dump(doc, f)
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, os.path.join(self.dir, str(n)))  # atomic, fails if taken
                return n
            except FileExistsError:
                continue
            finally:
                os.unlink(tmp)
