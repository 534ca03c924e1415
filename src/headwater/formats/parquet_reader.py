"""Parquet files, batch by batch through pyarrow; the file's types are converted to the
declared ones by the same rules as every format (a lossy cast is a misfit)."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from headwater import storage
from headwater.formats.conform import Conformer
from headwater.formats.errors import CorruptFileError

__all__ = ["read_parquet"]


def read_parquet(conf: Conformer, detect_new: bool, batch_rows: int) -> Iterator[pa.Table]:
    fs, inner = storage.filesystem(conf.path)
    try:
        pf = pq.ParquetFile(fs.open_input_file(inner))
        conf.seen.update(dict.fromkeys(pf.schema_arrow.names))
        if detect_new:
            conf.check_new()
        columns = None if conf.rescue else [name for name in conf.seen if name in conf.types]
        for batch in pf.iter_batches(batch_size=batch_rows, columns=columns):
            yield from conf.assemble_all(batch)
    except FileNotFoundError:
        raise
    except (OSError, pa.ArrowException) as e:
        raise CorruptFileError(conf.path, f"not a readable Parquet file: {e}") from e
