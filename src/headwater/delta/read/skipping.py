"""File skipping: which files of a snapshot can hold rows matching the pushed filters.

Uses partition values and min/max/null-count stats from the log, vectorised over the
snapshot's add-actions table. Conservative by construction: a file is dropped only when
its stats prove no row can match. Spark still applies every filter afterwards.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
)


def keep_mask(
    actions: pa.Table, filters: Sequence[Filter], partition_columns: list[str]
) -> pa.Array:
    """Boolean mask over ``actions`` rows: True where the file may hold matching rows."""
    mask = pa.array([True] * actions.num_rows)
    for flt in filters:
        try:
            m = _may_match(actions, flt, partition_columns)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError, ValueError):
            m = None  # a filter we cannot evaluate over stats keeps every file
        if m is not None:
            mask = pc.and_(mask, pc.fill_null(m, True))
    return mask


def _column(actions: pa.Table, name: str) -> pa.ChunkedArray | None:
    return actions.column(name) if name in actions.column_names else None


def _scalar_like(arr: pa.ChunkedArray, value) -> pa.Scalar:
    if isinstance(value, dt.datetime) and pa.types.is_timestamp(arr.type):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return pa.scalar(value, pa.timestamp("us", tz="UTC")).cast(arr.type)
    return pa.scalar(value).cast(arr.type)


def _may_match(actions: pa.Table, flt: Filter, parts: list[str]) -> pa.ChunkedArray | None:
    attr = getattr(flt, "attribute", None)
    if attr is None or len(attr) != 1:
        return None
    col = attr[0]
    if col in parts:
        values = _column(actions, f"partition.{col}")
        if values is None:
            return None
        return _eval_exact(values, flt)
    lo, hi = _column(actions, f"min.{col}"), _column(actions, f"max.{col}")
    nulls, rows = _column(actions, f"null_count.{col}"), _column(actions, "num_records")
    if isinstance(flt, IsNull):
        return pc.greater(nulls, 0) if nulls is not None else None
    if isinstance(flt, IsNotNull):
        return pc.less(nulls, rows) if nulls is not None and rows is not None else None
    if lo is None or hi is None:
        return None
    if isinstance(flt, (EqualTo, EqualNullSafe)):
        if flt.value is None:
            return None
        v = _scalar_like(lo, flt.value)
        return pc.and_(pc.less_equal(lo, v), pc.greater_equal(hi, v))
    if isinstance(flt, GreaterThan):
        return pc.greater(hi, _scalar_like(hi, flt.value))
    if isinstance(flt, GreaterThanOrEqual):
        return pc.greater_equal(hi, _scalar_like(hi, flt.value))
    if isinstance(flt, LessThan):
        return pc.less(lo, _scalar_like(lo, flt.value))
    if isinstance(flt, LessThanOrEqual):
        return pc.less_equal(lo, _scalar_like(lo, flt.value))
    if isinstance(flt, In):
        result = None
        for value in flt.value:
            if value is None:
                continue
            v = _scalar_like(lo, value)
            m = pc.and_(pc.less_equal(lo, v), pc.greater_equal(hi, v))
            result = m if result is None else pc.or_(result, m)
        return result
    return None


def _eval_exact(values: pa.ChunkedArray, flt: Filter) -> pa.ChunkedArray | None:
    if isinstance(flt, IsNull):
        return pc.is_null(values)
    if isinstance(flt, IsNotNull):
        return pc.is_valid(values)
    if isinstance(flt, EqualNullSafe) and flt.value is None:
        return pc.is_null(values)
    ops = {
        EqualTo: pc.equal,
        EqualNullSafe: pc.equal,
        GreaterThan: pc.greater,
        GreaterThanOrEqual: pc.greater_equal,
        LessThan: pc.less,
        LessThanOrEqual: pc.less_equal,
    }
    for kind, op in ops.items():
        if type(flt) is kind:
            value = getattr(flt, "value", None)  # every comparison filter has one
            if value is None:
                return None
            result = op(values, _scalar_like(values, value))
            return pc.fill_null(result, False)
    if isinstance(flt, In):
        wanted = [v for v in flt.value if v is not None]
        return pc.fill_null(pc.is_in(values, value_set=pa.array(wanted).cast(values.type)), False)
    return None
