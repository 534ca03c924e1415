"""Text files: one row per line in a single string column (``value``), or one row per file
(``wholetext``). Lines end at ``\\n`` or ``\\r\\n`` (both stripped; an empty line is a row),
or exactly at ``lineSep`` when it is set."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import StringType, StructType

from headwater.formats.chunks import byte_chunks
from headwater.formats.conform import Conformer
from headwater.formats.options import TextOptions

__all__ = ["read_text"]


def read_text(conf: Conformer, schema: StructType, opts: TextOptions) -> Iterator[pa.Table]:
    if len(schema.fields) != 1 or not isinstance(schema.fields[0].dataType, StringType):
        raise ValueError(f"the text format reads one string column, not {schema.simpleString()}")
    name = schema.fields[0].name
    if opts.whole_text:
        for whole in byte_chunks(conf.path, opts.encoding, whole=True):  # none if empty
            yield conf.assemble(1, [(name, pa.array([whole.decode()], pa.string()))])
        return
    sep = opts.line_sep
    for chunk in byte_chunks(conf.path, opts.encoding, sep=(sep or "\n").encode()):
        end = (sep or "\n").encode()
        chunk = chunk[: -len(end)] if chunk.endswith(end) else chunk
        whole = pa.array([chunk], pa.binary()).cast(pa.string())  # checked by byte_chunks
        lines = pc.split_pattern(whole, sep or "\n")[0].values
        if sep is None:
            lines = pc.replace_substring_regex(lines, r"\r$", "")
        yield conf.assemble(len(lines), [(name, lines)])
