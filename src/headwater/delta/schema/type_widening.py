"""Delta's type widening rules: which column type changes a table may take, and how they
are recorded.

A widening changes only the schema: files written before keep their narrower physical
type and every reader must convert their values on read. So a change is allowed only
where that conversion is exact for every value (PROTOCOL.md "Type Widening"): integers
to wider integers, ``float`` to ``double``, small integers to ``double``, ``date`` to
``timestamp_ntz``, and decimals (and integers) to decimals with room for every digit.
Each applied change is appended to the column's ``delta.typeChanges`` metadata, which
readers check before reading: a recorded change outside that list means files whose
values this reader would convert wrongly, so the table is refused rather than misread.

The rules are pure (schema in, schema out) so the log reader can check recorded changes
without importing the commit machinery.
"""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StructField,
    StructType,
    TimestampNTZType,
    _parse_datatype_json_value,
)

from headwater.errors import UnsupportedFeatureError

FEATURE = "typeWidening"
PREVIEW_FEATURE = "typeWidening-preview"
ENABLE = "delta.enableTypeWidening"
TYPE_CHANGES = "delta.typeChanges"

_INTEGRAL_ORDER = (ByteType, ShortType, IntegerType, LongType)
# Decimal digits left of the point an integer type needs (Decimal(10, 0) holds any int).
_INTEGRAL_DIGITS: dict[type[DataType], int] = {
    ByteType: 10,
    ShortType: 10,
    IntegerType: 10,
    LongType: 20,
}


def _integral_rank(t: DataType) -> int | None:
    for rank, cls in enumerate(_INTEGRAL_ORDER):
        if type(t) is cls:
            return rank
    return None


def is_widening(old: DataType, new: DataType) -> bool:
    """True when every value of ``old`` converts exactly to ``new`` and Delta lists the
    change as a supported widening (equal types are not a widening)."""
    if old == new:
        return False
    old_rank, new_rank = _integral_rank(old), _integral_rank(new)
    if old_rank is not None and new_rank is not None:
        return new_rank > old_rank
    if isinstance(old, FloatType) and isinstance(new, DoubleType):
        return True
    if old_rank is not None and old_rank <= 2 and isinstance(new, DoubleType):
        return True  # byte, short, int: 32 bits fit a double's 53-bit mantissa; long does not
    if isinstance(old, DateType) and isinstance(new, TimestampNTZType):
        return True
    if isinstance(new, DecimalType):
        if isinstance(old, DecimalType):
            return new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale
        if old_rank is not None:
            return new.precision - new.scale >= _INTEGRAL_DIGITS[type(old)]
    return False


def allowed_widenings(old: DataType) -> str:
    """The types ``old`` may widen to, as a sentence for error messages."""
    name = old.simpleString()
    rank = _integral_rank(old)
    if rank is not None:
        wider = [cls().simpleString() for cls in _INTEGRAL_ORDER[rank + 1 :]]
        if rank <= 2:
            wider.append("double")
        digits = _INTEGRAL_DIGITS[type(old)]
        wider.append(f"decimal(p, s) with p - s >= {digits}")
        return f"{name} can widen to {', '.join(wider)}"
    if isinstance(old, FloatType):
        return "float can widen to double"
    if isinstance(old, DateType):
        return "date can widen to timestamp_ntz"
    if isinstance(old, DecimalType):
        return (
            f"{name} can widen to decimal({old.precision} + k1, {old.scale} + k2) with "
            "k1 >= k2 >= 0"
        )
    return f"{name} has no wider type Delta allows"


def type_name(t: DataType) -> str:
    """The type as Delta's schema JSON names it (``integer``, ``decimal(12,2)``)."""
    value = t.jsonValue()
    return value if isinstance(value, str) else json.dumps(value)


def record_change(
    field: StructField, new_type: DataType, table_version: int | None = None
) -> StructField:
    """``field`` retyped to ``new_type``, its ``delta.typeChanges`` history extended (with
    the table version, as the preview feature recorded it, when given)."""
    entry: dict[str, Any] = {}
    if table_version is not None:
        entry["tableVersion"] = table_version
    entry["fromType"] = type_name(field.dataType)
    entry["toType"] = type_name(new_type)
    history = list(field.metadata.get(TYPE_CHANGES) or [])
    metadata = {**field.metadata, TYPE_CHANGES: [*history, entry]}
    return StructField(field.name, new_type, field.nullable, metadata)


def _parse_type(name: str) -> DataType:
    return _parse_datatype_json_value(name)


def _fields(dtype: DataType, prefix: str) -> list[tuple[str, StructField]]:
    """Every struct field under ``dtype`` with its dotted path (arrays and maps entered)."""
    found: list[tuple[str, StructField]] = []
    if isinstance(dtype, StructType):
        for f in dtype.fields:
            path = f"{prefix}{f.name}"
            found.append((path, f))
            found.extend(_fields(f.dataType, path + "."))
    elif isinstance(dtype, ArrayType):
        found.extend(_fields(dtype.elementType, prefix))
    elif isinstance(dtype, MapType):
        found.extend(_fields(dtype.keyType, prefix))
        found.extend(_fields(dtype.valueType, prefix))
    return found


def check_recorded(schema: StructType, root: str) -> None:
    """Refuse a table whose schema records a type change this reader cannot apply to the
    files written before it (the spec requires readers to fail rather than misread)."""
    for path, f in _fields(schema, ""):
        for change in f.metadata.get(TYPE_CHANGES) or []:
            try:
                old = _parse_type(str(change["fromType"]))
                new = _parse_type(str(change["toType"]))
            except (KeyError, TypeError, ValueError) as e:
                raise UnsupportedFeatureError(
                    f"Delta table at {root}: column {path} records a type change headwater "
                    f"cannot read ({change!r}); nothing was read. Read it with delta-spark."
                ) from e
            if not is_widening(old, new):
                raise UnsupportedFeatureError(
                    f"Delta table at {root}: column {path} records a type change from "
                    f"{change['fromType']} to {change['toType']}, which is not a widening "
                    "headwater can apply to the files written before it; nothing was read. "
                    "Read it with delta-spark."
                )
