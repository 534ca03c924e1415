"""File formats to Arrow: everything about reading one file of one format, Spark-free.

Auto Loader and COPY INTO read files through here and nowhere else, so a file reads the same
in both. Modules, each with one job:

* :mod:`.options` — one option table per format (honoured, refused by name, or pass-through)
  and the typed options the readers take;
* :mod:`.datetimes` — Spark datetime patterns, parsed exactly with Arrow;
* :mod:`.convert` — Arrow arrays to the declared types, with a mask of misfits;
* :mod:`.conform` — placing columns into the schema, the rescue column, ``mode``;
* :mod:`.chunks` — text files as chunks of UTF-8 for Arrow, per-row fallback;
* :mod:`.json_reader`, :mod:`.csv_reader` (+ :mod:`.csv_records`), :mod:`.parquet_reader`,
  :mod:`.text_reader`, :mod:`.avro_reader`, :mod:`.orc_reader`, :mod:`.binary_file`;
* :mod:`.read` — :func:`read_file`, the entry point; :mod:`.infer` — one file's schema.
"""

from __future__ import annotations

from headwater.formats.binary_file import BINARY_FILE_SCHEMA
from headwater.formats.errors import CorruptFileError, MalformedRecordError, NewColumnsFound
from headwater.formats.infer import infer_file, merge, settle, widen
from headwater.formats.options import FORMATS, FormatOptions, parse_format_options
from headwater.formats.read import read_file

__all__ = [
    "BINARY_FILE_SCHEMA",
    "FORMATS",
    "CorruptFileError",
    "FormatOptions",
    "MalformedRecordError",
    "NewColumnsFound",
    "infer_file",
    "merge",
    "parse_format_options",
    "read_file",
    "settle",
    "widen",
]
