"""File skipping: which files of a snapshot can hold rows matching the pushed filters.

Uses partition values and min/max/null-count stats from the log, vectorised over the
snapshot's add-actions table. Conservative by construction: a file is dropped only when
its stats prove no row can match, whichever writer wrote them. So bounds another writer
may have left loose are read as loose: a string maximum of the prefix length or longer may
be a cut-short prefix (no upper bound), timestamps may be truncated to milliseconds (each
bound widened by one), floating-point maxima say nothing about NaN (which Spark orders
above every number), and a file without stats is kept. Spark still applies every filter
afterwards.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

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
    Not,
    StringStartsWith,
)

# Strings whose stats may be a prefix: delta-spark and delta-rs cut them at 32 characters
# (delta-spark then appends a tie-breaker, others may not), so a maximum this long or
# longer bounds nothing.
STRING_PREFIX = 32
_ONE_MS = dt.timedelta(milliseconds=1)
_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError, ValueError)


@dataclass(frozen=True)
class AllOf(Filter):
    """Both filters hold (Spark's ``And``, which Python sources never receive)."""

    left: Filter | None
    right: Filter | None


@dataclass(frozen=True)
class AnyOf(Filter):
    """Either filter holds (Spark's ``Or``)."""

    left: Filter | None
    right: Filter | None


def keep_mask(
    actions: pa.Table, filters: Sequence[Filter], partition_columns: list[str]
) -> pa.Array:
    """Boolean mask over ``actions`` rows: True where the file may hold matching rows."""
    mask = pa.array([True] * actions.num_rows)
    for flt in filters:
        m = _mask(actions, flt, partition_columns)
        if m is not None:
            mask = pc.and_(mask, m)
    return mask


def _mask(actions: pa.Table, flt: Filter | None, parts: list[str]):
    """True where a file may hold a row matching ``flt``; None when every file may."""
    if flt is None:
        return None
    if isinstance(flt, AllOf):
        left, right = _mask(actions, flt.left, parts), _mask(actions, flt.right, parts)
        if left is None or right is None:
            return right if left is None else left
        return pc.and_(left, right)
    if isinstance(flt, AnyOf):
        left, right = _mask(actions, flt.left, parts), _mask(actions, flt.right, parts)
        return None if left is None or right is None else pc.or_(left, right)
    try:
        if isinstance(flt, Not):
            m = _negated(actions, flt.child, parts)
        else:
            m = _may_match(actions, flt, parts)
    except _ERRORS:
        m = None  # a filter we cannot evaluate over stats keeps every file
    return None if m is None else pc.fill_null(m, True)


def _negated(actions: pa.Table, flt: Filter, parts: list[str]):
    """``NOT flt``: decided only over partition values, which are exact for every row of a
    file (a NULL partition value matches neither a comparison nor its negation: kept)."""
    col = _single_column(flt)
    if col is None or col not in parts:
        return None
    values = _column(actions, f"partition.{col}")
    exact = None if values is None else _eval_exact(values, flt)
    return None if exact is None else pc.invert(exact)


def _single_column(flt: Filter) -> str | None:
    attr = getattr(flt, "attribute", None)
    return attr[0] if attr is not None and len(attr) == 1 else None


def _column(actions: pa.Table, name: str) -> pa.ChunkedArray | None:
    return actions.column(name) if name in actions.column_names else None


def _scalar_like(arr: pa.ChunkedArray, value) -> pa.Scalar:
    if isinstance(value, dt.datetime) and pa.types.is_timestamp(arr.type):
        if value.tzinfo is None and arr.type.tz is not None:
            value = value.replace(tzinfo=dt.timezone.utc)
        unit = pa.timestamp("us", tz="UTC" if value.tzinfo is not None else None)
        return pa.scalar(value, unit).cast(arr.type)
    return pa.scalar(value).cast(arr.type)


def _bounds(actions: pa.Table, col: str):
    """The file's lower and upper bounds of ``col`` as a reader may trust them (None: no
    bound), or None when the log has none."""
    lo, hi = _column(actions, f"min.{col}"), _column(actions, f"max.{col}")
    if lo is None or hi is None:
        return None
    if pa.types.is_timestamp(lo.type):
        lo, hi = pc.subtract(lo, _ONE_MS), pc.add(hi, _ONE_MS)
    elif pa.types.is_string(hi.type) or pa.types.is_large_string(hi.type):
        cut = pc.greater_equal(pc.utf8_length(hi), STRING_PREFIX)
        hi = pc.if_else(cut, pa.scalar(None, hi.type), hi)
    elif pa.types.is_floating(lo.type):
        lo = pc.if_else(pc.is_nan(lo), pa.scalar(None, lo.type), lo)
        hi = pc.if_else(pc.is_nan(hi), pa.scalar(None, hi.type), hi)
    return lo, hi


def _may_match(actions: pa.Table, flt: Filter, parts: list[str]):
    col = _single_column(flt)
    if col is None:
        return None
    if col in parts:
        values = _column(actions, f"partition.{col}")
        if values is None:
            return None
        return _eval_exact(values, flt)
    nulls, rows = _column(actions, f"null_count.{col}"), _column(actions, "num_records")
    if isinstance(flt, IsNull) or (isinstance(flt, EqualNullSafe) and flt.value is None):
        return pc.greater(nulls, 0) if nulls is not None else None
    if isinstance(flt, IsNotNull):
        return pc.less(nulls, rows) if nulls is not None and rows is not None else None
    bounds = _bounds(actions, col)
    if bounds is None:
        return None
    lo, hi = bounds
    value = getattr(flt, "value", None)
    if pa.types.is_floating(lo.type):
        if isinstance(flt, (GreaterThan, GreaterThanOrEqual)):
            return None  # NaN rows match, and no stat bounds them
        if isinstance(value, float) and value != value:
            return None  # every number is below NaN
    if isinstance(flt, (EqualTo, EqualNullSafe)):
        return _within(lo, hi, value)
    if isinstance(flt, GreaterThan):
        return pc.greater(hi, _scalar_like(hi, value))
    if isinstance(flt, GreaterThanOrEqual):
        return pc.greater_equal(hi, _scalar_like(hi, value))
    if isinstance(flt, LessThan):
        return pc.less(lo, _scalar_like(lo, value))
    if isinstance(flt, LessThanOrEqual):
        return pc.less_equal(lo, _scalar_like(lo, value))
    if isinstance(flt, In):
        result = None
        for v in flt.value:
            if v is None:
                continue
            if isinstance(v, float) and v != v:
                return None
            m = _within(lo, hi, v)
            result = m if result is None else pc.or_(result, m)
        return result if result is not None else pa.array([False] * actions.num_rows)
    if isinstance(flt, StringStartsWith) and pa.types.is_string(lo.type):
        n = len(flt.value)
        low = pc.less_equal(pc.utf8_slice_codeunits(lo, 0, n), value)
        return pc.and_(low, pc.greater_equal(pc.utf8_slice_codeunits(hi, 0, n), value))
    return None


def _within(lo: pa.ChunkedArray, hi: pa.ChunkedArray, value) -> pa.ChunkedArray | None:
    if value is None:
        return None
    return pc.and_(
        pc.less_equal(lo, _scalar_like(lo, value)), pc.greater_equal(hi, _scalar_like(hi, value))
    )


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
