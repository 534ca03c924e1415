"""Many small JSON Lines files of one task read with one parse.

Parsing a file with Arrow's JSON reader costs a set-up of about 150 µs whatever its size,
against a few µs per record once set up: with one-record files the set-up is nearly all
of a file's cost. So a task's small files are read as one text (their bytes one after the
other, each ending with a line break), parsed and conformed once, and each row is given
back its file by the number of records each file holds (``_metadata``, the file metadata
column and partition values are per file).

The fast path is taken only where it gives exactly what reading the files one by one
gives; otherwise (a record Arrow cannot take, a value rescued or malformed, since the
rescue column names the row's file, new columns to report, compressed files or another
encoding, any error) the task reads its files one by one, which reports a problem with
the file it belongs to.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
from pyspark.sql.types import StructType

from headwater import storage
from headwater.autoloader import file_metadata
from headwater.errors import HeadwaterError
from headwater.formats.conform import Conformer
from headwater.formats.json_reader import arrow_plan, arrow_tables
from headwater.formats.options import FormatOptions, JsonOptions

SMALL_FILE = 1 << 20  # bytes: larger files are read one by one (their set-up is amortised)
_COMPRESSED = ("gz", "gzip", "bz2", "zst", "zstd")


def applies(options: FormatOptions, files: Sequence[tuple[str, int, int]]) -> bool:
    """Whether ``files`` may be read together: more than one, all small, uncompressed JSON
    Lines in UTF-8 with the default record separator and no comments."""
    return (
        isinstance(options, JsonOptions)
        and len(files) > 1
        and not options.multiline
        and options.line_sep is None
        and not options.allow_comments
        and options.encoding.lower().replace("_", "-") in ("utf-8", "utf8")
        and all(
            size <= SMALL_FILE and path.rsplit(".", 1)[-1].lower() not in _COMPRESSED
            for path, size, _ in files
        )
    )


def read_together(
    files: Sequence[tuple[str, int, int]],
    schema: StructType,
    options: FormatOptions,
    rescue: str | None,
    detect_new: bool,
) -> tuple[pa.Table, list[int]] | None:
    """The rows of ``files`` (conformed to ``schema`` and the rescue column, as
    :func:`headwater.formats.read_file` gives them) and the number of rows of each file,
    or None when they must be read one by one (see the module)."""
    blobs, counts = [], []
    for path, _, _ in files:
        try:
            data = storage.read_bytes(path)
        except OSError:
            return None  # gone or unreadable: the one-by-one path applies the options
        if data.startswith(codecs.BOM_UTF8):
            data = data[len(codecs.BOM_UTF8) :]
        if not data.isascii():
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                return None
        if data and not data.endswith(b"\n"):
            data += b"\n"
        counts.append(sum(1 for line in data.split(b"\n") if line.strip()))
        blobs.append(data)
    conf = Conformer(files[0][0], schema, rescue, options)
    try:
        tables = arrow_tables(b"".join(blobs), arrow_plan(conf), conf)
        if tables is not None and detect_new:
            conf.check_new()
    except (HeadwaterError, pa.ArrowException, ValueError):
        return None
    if tables is None:
        return None
    table = pa.concat_tables(tables) if tables else conf.schema.empty_table()
    if table.num_rows != sum(counts):
        return None
    for name in (rescue, conf.corrupt):
        if name and name in table.column_names and table.column(name).null_count != len(table):
            return None  # these name the row's file: read one by one
    return table, counts


def per_row(values: pa.Array, counts: list[int]) -> pa.Array:
    """Each file's value (``values[i]`` for file ``i``) repeated for each of its rows."""
    index = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    return values.take(pa.array(index))


def hidden_metadata(files: Sequence[tuple[str, int, int]], counts: list[int]) -> pa.Array:
    """Spark's ``_metadata`` column for the rows of ``files``."""
    one_each = [file_metadata.arrow_column(p, size, mtime, 1) for p, size, mtime in files]
    return per_row(pa.concat_arrays(one_each), counts)
