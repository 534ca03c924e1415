"""ORC files, stripe by stripe through pyarrow. Timestamps are truncated to microseconds
(Spark's precision) and an ORC ``timestamp`` without a zone is read as UTC, as Spark reads it;
inference sees the same types (:func:`orc_schema`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa
import pyarrow.types as pt

from headwater import storage
from headwater.formats.conform import Conformer
from headwater.formats.errors import CorruptFileError

__all__ = ["orc_schema", "read_orc"]


def _map_timestamps(t: pa.DataType, fn: Callable[[pa.DataType], pa.DataType]) -> pa.DataType:
    """``t`` with ``fn`` applied to every timestamp type in it, nested ones included."""
    if pt.is_timestamp(t):
        return fn(t)
    if pt.is_struct(t):
        return pa.struct([f.with_type(_map_timestamps(f.type, fn)) for f in t])
    if pt.is_list(t):
        return pa.list_(t.value_field.with_type(_map_timestamps(t.value_type, fn)))
    if pt.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_map_timestamps(t.value_type, fn)))
    if pt.is_map(t):
        key = t.key_field.with_type(_map_timestamps(t.key_type, fn))
        return pa.map_(key, t.item_field.with_type(_map_timestamps(t.item_type, fn)))
    return t


def _orc():
    import pyarrow.orc  # not in every pyarrow build (Windows wheels lack it): only when used

    return pyarrow.orc


def orc_schema(path: str) -> pa.Schema:
    """The Arrow schema inference sees for an ORC file: zone-less timestamps as UTC ones."""
    paorc = _orc()
    fs, inner = storage.filesystem(path)
    with fs.open_input_file(inner) as f:
        schema = paorc.ORCFile(f).schema
    utc = lambda t: pa.timestamp("us", "UTC")  # noqa: E731
    return pa.schema([f.with_type(_map_timestamps(f.type, utc)) for f in schema])


def read_orc(conf: Conformer, detect_new: bool) -> Iterator[pa.Table]:
    paorc = _orc()
    fs, inner = storage.filesystem(conf.path)
    try:
        orc = paorc.ORCFile(fs.open_input_file(inner))
        names = orc.schema.names
    except FileNotFoundError:
        raise
    except (OSError, pa.ArrowException) as e:
        raise CorruptFileError(conf.path, f"not a readable ORC file: {e}") from e
    conf.seen.update(dict.fromkeys(names))
    if detect_new:
        conf.check_new()
    columns = None
    if not conf.rescue:  # read only what lands somewhere (one column at least, for the rows)
        columns = [name for name in names if name in conf.types] or names[:1]
    micros = lambda t: pa.timestamp("us", t.tz)  # noqa: E731
    for stripe in range(orc.nstripes):
        try:
            batch = orc.read_stripe(stripe, columns=columns)
        except (OSError, pa.ArrowException) as e:
            raise CorruptFileError(conf.path, f"cannot read ORC stripe {stripe}: {e}") from e
        arrays = []
        for column in batch.columns:  # Spark keeps microseconds: truncate, never rescue, nanos
            wanted = _map_timestamps(column.type, micros)
            arrays.append(column if wanted == column.type else column.cast(wanted, safe=False))
        yield from conf.assemble_all(pa.RecordBatch.from_arrays(arrays, batch.schema.names))
