"""Spark's file metadata column, ``_metadata``, for the rows Auto Loader's readers make.

Spark's file sources (``spark.read.json(p)``) carry a hidden column ``_metadata``: a struct
of ``file_path`` (the file's URI), ``file_name``, ``file_size``, ``file_block_start``,
``file_block_length`` and ``file_modification_time``, which ``SELECT *`` and
``df.columns`` leave out and a query gets by naming it. A Python data source has no hidden
columns, so the ``cloudFiles`` source and ``read_files`` make it themselves when told to
(:data:`OPTION`, set by the reader hook): a last column with Spark's name, type and field
metadata, and :mod:`headwater.autoloader.metadata_plan` moves it out of the DataFrame's
columns into Spark's hidden ones.

This module holds the values (one struct per file, repeated in Arrow for each row of a
batch, on the executors); it needs no Spark session.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa
from pyspark.sql.types import (
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from headwater import storage

NAME = "_metadata"
# A batch read's rows carry this number of their file instead of the column itself (see
# headwater.autoloader.metadata_plan.from_file_index).
INDEX = "__headwater_file_index"
# Set by the reader hook: the source appends the hidden column (see module doc).
OPTION = "headwater.hiddenFileMetadata"
# Spark's own field metadata on its file sources' ``_metadata`` column: the analyzer reads
# ``__metadata_col`` (the logical name) to treat the column as a metadata column.
FIELD_METADATA = {"__metadata_col": NAME, "__file_source_metadata_col": True}
TYPE = StructType(
    [
        StructField("file_path", StringType(), False),
        StructField("file_name", StringType(), False),
        StructField("file_size", LongType(), False),
        StructField("file_block_start", LongType(), False),
        StructField("file_block_length", LongType(), False),
        StructField("file_modification_time", TimestampType(), False),
    ]
)
_ARROW_TYPE = pa.struct(
    [
        pa.field("file_path", pa.string(), False),
        pa.field("file_name", pa.string(), False),
        pa.field("file_size", pa.int64(), False),
        pa.field("file_block_start", pa.int64(), False),
        pa.field("file_block_length", pa.int64(), False),
        pa.field("file_modification_time", pa.timestamp("us", tz="UTC"), False),
    ]
)


def column_name(columns: Iterable[str]) -> str:
    """``_metadata``, or, when the data has a column of that name, ``__metadata`` (and so
    on): Spark's rule for a metadata column whose name the data already uses."""
    taken = {c.lower() for c in columns}
    name = NAME
    while name.lower() in taken:
        name = "_" + name
    return name


def field(name: str = NAME) -> StructField:
    """The column as Spark's file sources declare it."""
    return StructField(name, TYPE, False, dict(FIELD_METADATA))


def is_field(f: StructField) -> bool:
    return f.metadata.get("__metadata_col") == NAME and f.dataType == TYPE


def with_field(schema: StructType) -> StructType:
    """``schema`` plus the column (once), named so that it takes no data column's name."""
    if any(is_field(f) for f in schema):
        return schema
    return StructType([*schema.fields, field(column_name(schema.fieldNames()))])


def with_index(batch: pa.RecordBatch, index: int) -> pa.RecordBatch:
    """``batch`` (rows of one file) plus the :data:`INDEX` column: the file's number."""
    return batch.append_column(
        pa.field(INDEX, pa.int32(), False), pa.repeat(pa.scalar(index, pa.int32()), batch.num_rows)
    )


def index_field() -> StructField:
    return StructField(INDEX, IntegerType(), False)


def table(files: list[tuple[str, int, int]]) -> pa.StructArray:
    """The column's value for each of ``files`` (path, size, mtime in ms), in order."""
    paths, sizes, times = zip(*files, strict=True) if files else ((), (), ())
    uris = [storage.spark_file_uri(p) for p in paths]
    children = [
        pa.array(uris, pa.string()),
        pa.array([u.rsplit("/", 1)[-1] for u in uris], pa.string()),
        pa.array(sizes, pa.int64()),
        pa.array([0] * len(sizes), pa.int64()),
        pa.array(sizes, pa.int64()),
        pa.array([t * 1000 for t in times], pa.timestamp("us", tz="UTC")),
    ]
    return pa.StructArray.from_arrays(children, fields=list(_ARROW_TYPE))


def arrow_column(path: str, size: int, mtime_ms: int, rows: int) -> pa.StructArray:
    """The column for ``rows`` rows of one file (``path`` as the file state spells it,
    ``mtime_ms`` its modification time in ms since the epoch), as Spark's file source
    reports them for a file read whole: ``file_path`` is the file's URI (escaped, as
    ``file_name``, its last part), the block is the whole file."""
    uri = storage.spark_file_uri(path)
    values = [
        pa.scalar(uri, pa.string()),
        pa.scalar(uri.rsplit("/", 1)[-1], pa.string()),
        pa.scalar(size, pa.int64()),
        pa.scalar(0, pa.int64()),
        pa.scalar(size, pa.int64()),
        pa.scalar(mtime_ms * 1000, pa.timestamp("us", tz="UTC")),
    ]
    children = [pa.repeat(v, rows) for v in values]
    return pa.StructArray.from_arrays(children, fields=list(_ARROW_TYPE))
