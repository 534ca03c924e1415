"""Schema inference over a sample, hints, and the versioned schema store of an Auto Loader
stream.

Inference reads a bounded sample (1000 files or 50 GB, newest first); each file's schema comes
from :func:`headwater.formats.infer_file` (JSON and CSV columns are strings unless
``cloudFiles.inferColumnTypes``; Parquet, ORC and Avro files carry their types; binaryFile's
schema is fixed) and the sample's schemas are merged, as Spark's JSON inference merges a
file's records: a column NULL throughout one file takes the other files' type. The result is stored as
``<schemaLocation>/_schemas/<n>`` (JSON, one file per version, created exclusively so
concurrent writers cannot overwrite each other); later starts read the newest version
instead of inferring again, and evolution writes the next version.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pyarrow as pa
from pyspark.sql.types import ArrayType, DataType, MapType, StringType, StructField, StructType

from headwater import storage
from headwater.autoloader.discovery import Listed, partition_values
from headwater.autoloader.options import CloudFilesOptions
from headwater.errors import HeadwaterError, OptionError
from headwater.formats import BINARY_FILE_SCHEMA, CorruptFileError, infer_file, merge, settle
from headwater.sqltypes import parse_columns

SAMPLE_FILES = 1000
SAMPLE_BYTES = 50 * 1024**3
SCHEMAS_DIR = "_schemas"


class SchemaInferenceError(HeadwaterError):
    """No schema could be inferred (for example: no files yet, and no schema given)."""


# -- inference -----------------------------------------------------------------------------


def sample(files: Sequence[Listed]) -> list[Listed]:
    chosen: list[Listed] = []
    total = 0
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
    schema = BINARY_FILE_SCHEMA if opts.format == "binaryfile" else StructType([])
    for f in files:
        try:
            found = infer_file(f.path, opts.format_options, opts.infer_column_types, True)
            schema = merge(schema, found)
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
    schema = settle(schema, opts.format_options)  # NULL in one file: the others' type
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


# -- hints ---------------------------------------------------------------------------------


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
        self.dir = storage.join(storage.normalize(location), SCHEMAS_DIR)

    def versions(self) -> list[int]:
        names = (f.base_name for f in storage.list_files(self.dir, recursive=False))
        return sorted(int(n) for n in names if n.isdigit())

    def latest(self) -> tuple[int, StructType, list[str]] | None:
        versions = self.versions()
        if not versions:
            return None
        doc = json.loads(storage.read_bytes(storage.join(self.dir, str(versions[-1]))))
        return versions[-1], StructType.fromJson(doc["dataSchema"]), list(doc["partitionColumns"])

    def write(self, schema: StructType, partition_columns: list[str], reason: str) -> int:
        """Store the next version; returns its number (create-if-absent: no lost update)."""
        doc = {
            "dataSchema": schema.jsonValue(),
            "partitionColumns": partition_columns,
            "reason": reason,
        }
        while True:
            versions = self.versions()
            n = versions[-1] + 1 if versions else 0
            if storage.put_if_absent(storage.join(self.dir, str(n)), json.dumps(doc).encode()):
                return n
