"""Per-file Delta statistics (numRecords, minValues, maxValues, nullCount) from Parquet footers.

Readers skip files with these bounds, so a wrong bound loses rows. Every value written here
is a *safe* bound for any reader: strings are cut to a prefix (min only), timestamps are
widened to whole milliseconds, and types whose Parquet ordering differs from Spark's
(floats with NaN, binary, INT96 timestamps) get null counts only, and so do dates and
timestamps outside Python's years 1 to 9999, whose footer values cannot be converted.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from typing import Any

import pyarrow.parquet as pq
from pyspark.sql.types import (
    ByteType,
    DataType,
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

STRING_PREFIX = 32
_BOUNDED = (ByteType, ShortType, IntegerType, LongType, DateType, StringType, DecimalType,
            TimestampType, TimestampNTZType)  # fmt: skip


def file_stats(meta: pq.FileMetaData, schema: StructType) -> str:
    """The Delta ``stats`` JSON for one Parquet file holding columns of ``schema``."""
    columns: dict[str, list[Any]] = {}  # dotted path -> [min, max, nulls, has_bounds]
    for rg in range(meta.num_row_groups):
        group = meta.row_group(rg)
        for ci in range(group.num_columns):
            chunk = group.column(ci)
            path = chunk.path_in_schema
            entry = columns.setdefault(path, [None, None, 0, True])
            st = chunk.statistics
            if st is None or not st.has_null_count:
                entry[2] = None
            elif entry[2] is not None:
                entry[2] += st.null_count
            if chunk.physical_type == "INT96" or st is None or not st.has_min_max:
                # A row group with nulls only has no min/max and needs none.
                if st is None or st.null_count != group.num_rows:
                    entry[3] = False
                continue
            try:
                lo, hi = st.min, st.max
            except (OverflowError, ValueError):
                # A date or timestamp past Python's year 1..9999 (Spark writes them): the
                # column keeps its null count and no bounds, which no reader can misuse.
                entry[3] = False
                continue
            entry[0] = lo if entry[0] is None else min(entry[0], lo)
            entry[1] = hi if entry[1] is None else max(entry[1], hi)
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    _fill(schema, "", columns, mins, maxs, nulls)
    return json.dumps(
        {"numRecords": meta.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls},
        separators=(",", ":"),
    )


def _fill(schema: StructType, prefix: str, columns, mins, maxs, nulls) -> None:
    for f in schema:
        path = prefix + f.name
        if isinstance(f.dataType, StructType):
            sub_min: dict[str, Any] = {}
            sub_max: dict[str, Any] = {}
            sub_nulls: dict[str, Any] = {}
            _fill(f.dataType, path + ".", columns, sub_min, sub_max, sub_nulls)
            if sub_min:
                mins[f.name] = sub_min
            if sub_max:
                maxs[f.name] = sub_max
            if sub_nulls:
                nulls[f.name] = sub_nulls
            continue
        entry = columns.get(path)
        if entry is None:
            continue  # nested lists/maps: Delta keeps no stats for them
        lo, hi, null_count, has_bounds = entry
        if null_count is not None:
            nulls[f.name] = null_count
        if not has_bounds or lo is None or not isinstance(f.dataType, _BOUNDED):
            continue
        lo_json, hi_json = _bound(f.dataType, lo, low=True), _bound(f.dataType, hi, low=False)
        if lo_json is not None:
            mins[f.name] = lo_json
        if hi_json is not None:
            maxs[f.name] = hi_json


def _bound(dtype: DataType, value: Any, low: bool) -> Any:
    if isinstance(dtype, StringType):
        if isinstance(value, bytes):
            value = value.decode("utf-8", errors="replace")
        if len(value) <= STRING_PREFIX:
            return value
        return value[:STRING_PREFIX] if low else None
    if isinstance(dtype, DecimalType):
        if not isinstance(value, decimal.Decimal) or dtype.precision > 15:
            return None
        return float(value)
    if isinstance(dtype, DateType):
        return value.isoformat() if isinstance(value, dt.date) else None
    if isinstance(dtype, (TimestampType, TimestampNTZType)):
        if not isinstance(value, dt.datetime):
            return None
        naive = value.astimezone(dt.timezone.utc).replace(tzinfo=None) if value.tzinfo else value
        return _millis(naive, up=not low) + ("Z" if isinstance(dtype, TimestampType) else "")
    return value


def _millis(value: dt.datetime, up: bool) -> str:
    """ISO text at millisecond precision, rounded outward so it stays a bound."""
    extra = value.microsecond % 1000
    value = value - dt.timedelta(microseconds=extra)
    if up and extra:
        value += dt.timedelta(milliseconds=1)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}"
