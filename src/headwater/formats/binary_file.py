"""binaryFile: one row per file, ``path, modificationTime, length, content``. Nothing is ever
rescued (a rescue column, if asked for, is null). ``path`` is the path the caller lists, the
same string as ``_file_path`` in other formats' rescued data."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.fs as pafs
from pyspark.sql.types import (
    BinaryType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from headwater import storage
from headwater.formats.conform import Conformer
from headwater.formats.errors import CorruptFileError

__all__ = ["BINARY_FILE_SCHEMA", "read_binary_file"]

BINARY_FILE_SCHEMA = StructType(
    [
        StructField("path", StringType(), True),
        StructField("modificationTime", TimestampType(), True),
        StructField("length", LongType(), True),
        StructField("content", BinaryType(), True),
    ]
)
_MAX_BINARY = 2**31 - 1  # an Arrow binary value (and a Spark one) holds at most this many bytes


def read_binary_file(conf: Conformer) -> Iterator[pa.Table]:
    unknown = [f.name for f in conf.fields if f.name not in BINARY_FILE_SCHEMA.names]
    if unknown:
        raise ValueError(
            f"binaryFile has the columns {', '.join(BINARY_FILE_SCHEMA.names)}; not "
            f"{', '.join(unknown)}"
        )
    fs, inner = storage.filesystem(conf.path)
    try:
        info = fs.get_file_info(inner)
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(conf.path)
        if (info.size or 0) > _MAX_BINARY:
            raise CorruptFileError(conf.path, f"{info.size} bytes is over binaryFile's 2 GiB")
        content = b""
        if "content" in conf.types:  # a schema without it does not read the bytes
            with fs.open_input_stream(inner) as stream:
                content = stream.read()
    except (FileNotFoundError, CorruptFileError):
        raise
    except (OSError, pa.ArrowException) as e:
        raise CorruptFileError(conf.path, f"cannot read it: {e}") from e
    length = len(content) if "content" in conf.types else (info.size or 0)
    mtime = pa.array([info.mtime_ns], pa.timestamp("ns", "UTC")).cast(
        pa.timestamp("us", "UTC"), safe=False
    )
    columns = {
        "path": pa.array([conf.path], pa.string()),
        "modificationTime": mtime,
        "length": pa.array([length], pa.int64()),
        "content": pa.array([content], pa.binary()),
    }
    yield conf.assemble(1, [(name, columns[name]) for name in conf.types])
