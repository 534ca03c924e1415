"""Turn one source file into Arrow batches that match a declared Spark schema exactly.

Runs inside Spark's Python workers (Auto Loader's executors, COPY INTO's tasks). Every value
either lands in its column with the declared type or, when it does not fit, is kept as JSON
in the rescue column (``_rescued_data``), so nothing is lost silently; see
:mod:`headwater.formats.conform` for the rules and for ``mode``. Speed comes from Arrow's C++
readers and compute kernels: a clean file never touches Python per row.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa
from pyspark.sql.types import StructType

from headwater.formats import options as o
from headwater.formats.avro_reader import read_avro
from headwater.formats.binary_file import read_binary_file
from headwater.formats.conform import Conformer
from headwater.formats.csv_reader import read_csv
from headwater.formats.json_reader import read_json
from headwater.formats.orc_reader import read_orc
from headwater.formats.parquet_reader import read_parquet
from headwater.formats.text_reader import read_text

__all__ = ["read_file"]


def read_file(
    path: str,
    schema: StructType,
    options: o.FormatOptions,
    rescue_column: str | None,
    detect_new: bool = False,
    batch_rows: int = 65536,
) -> Iterator[pa.RecordBatch]:
    """Yield batches whose schema is exactly ``to_arrow_schema(schema + rescue col as string,
    timezone="UTC")`` with every field nullable (any file can lack a value; Spark's file
    sources do the same), timestamps ``timestamp[us, tz=UTC]``, the rescue column a string.
    The format is the options' (:func:`headwater.formats.options.parse_format_options`).
    ``detect_new``: raise :class:`~headwater.formats.errors.NewColumnsFound` before yielding
    anything when the file has columns the schema lacks."""
    if rescue_column and rescue_column in schema.names:
        raise ValueError(f"rescue column {rescue_column!r} is also a data column")
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be positive, got {batch_rows}")
    conf = Conformer(path, schema, rescue_column, options)
    tables: Iterable[pa.Table]
    if isinstance(options, o.JsonOptions):
        tables = read_json(conf, options, batch_rows)
        if detect_new:  # a new field can appear on any line: read the whole file first
            tables = list(tables)
            conf.check_new()
    elif isinstance(options, o.CsvOptions):
        tables = read_csv(conf, options, detect_new)
    elif isinstance(options, o.ParquetOptions):
        tables = read_parquet(conf, detect_new, batch_rows)
    elif isinstance(options, o.TextOptions):
        tables = read_text(conf, schema, options)
    elif isinstance(options, o.AvroOptions):
        tables = read_avro(conf, options, detect_new, batch_rows)
    elif isinstance(options, o.OrcOptions):
        tables = read_orc(conf, detect_new)
    elif isinstance(options, o.BinaryFileOptions):
        tables = read_binary_file(conf)
    else:
        raise TypeError(f"not the options of a file format: {options!r}")
    yield from _rebatch(tables, batch_rows)


def _rebatch(tables: Iterable[pa.Table], size: int) -> Iterator[pa.RecordBatch]:
    """Even out batch sizes: Arrow's blocks and the per-row pieces come in any size."""
    pending: list[pa.Table] = []
    count = 0
    for table in tables:
        pending.append(table)
        count += table.num_rows
        if count >= size:
            merged = pa.concat_tables(pending).combine_chunks()
            full = count - count % size
            yield from merged.slice(0, full).to_batches(max_chunksize=size)
            pending, count = [merged.slice(full)], count - full
    if count:
        yield from pa.concat_tables(pending).combine_chunks().to_batches(max_chunksize=size)
