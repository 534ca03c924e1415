"""Arrow arrays to the declared Spark types, with a mask of the values that did not fit.

Arrow has no null-on-error cast; these build one on Arrow's own casts. Each converter returns
(array of the target type, mask of rows whose value did not fit and is null in the array), so
the caller rescues or reports exactly those values. One routine (:func:`convert`) decides
what fits, for every format and for both the Arrow path and the per-row path
(:func:`from_python`), so a value's fate never depends on which path its neighbours forced.

How strings become values depends on the format (:class:`ValueRules`): CSV text is the wire
form of every value; JSON strings fill only string, temporal, decimal and binary columns; a
``dateFormat``/``timestampFormat`` pattern, or CSV's NaN and infinity spellings, change how
text is parsed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.types as pt

from headwater.formats.datetimes import DatetimePattern, to_iso
from headwater.formats.jsontext import clean, dumps
from headwater.formats.options import CsvOptions, FormatOptions, RecordText

__all__ = ["NESTED", "ValueRules", "convert", "from_python", "rows_bad", "valid", "value_rules"]

_ZONED = r"[T ]\d{1,2}:\d{2}.*([Zz]|[+-]\d{2}(:?\d{2})?)$"  # an ISO time followed by a zone
# Supersets of what Arrow's casts accept. A value failing its gate is surely bad, so a column
# full of bad values is sorted out without bisecting cast errors (see _guard).
_GATES = {
    "int": r"^\s*[+-]?\d+\s*$",
    "num": r"(?i)^\s*([-+.0-9e]+|[-+]?(nan|inf|infinity))\s*$",
    "bool": r"(?i)^(true|false|1|0)$",
    "date": r"^[0-9-]+$",
    "ts": r"^\s*\d{4}-\d",
}
_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError)
NESTED = (pt.is_struct, pt.is_list, pt.is_large_list, pt.is_map)


@dataclass(frozen=True)
class ValueRules:
    """How strings become values. ``text``: strings are the wire form of every value (CSV, a
    Parquet string column), so ``"12"`` fills an int column; otherwise (JSON) only string,
    temporal, decimal and binary columns take strings. Patterns: Spark's ``dateFormat``,
    ``timestampFormat``, ``timestampNTZFormat``; ``specials``: CSV's spellings of NaN and the
    infinities that differ from Arrow's."""

    text: bool
    date: DatetimePattern | None = None
    timestamp: DatetimePattern | None = None
    timestamp_ntz: DatetimePattern | None = None
    specials: tuple[tuple[str, str], ...] = ()

    def pattern(self, t: pa.DataType) -> DatetimePattern | None:
        if pt.is_date(t):
            return self.date
        if pt.is_timestamp(t):
            return self.timestamp if t.tz else self.timestamp_ntz
        return None


def value_rules(options: FormatOptions) -> ValueRules:
    """The rules of a format's reader, from its options."""
    text = options.format != "json"
    if not isinstance(options, RecordText):
        return ValueRules(text)
    specials: tuple[tuple[str, str], ...] = ()
    if isinstance(options, CsvOptions):
        spelled = ((options.nan_value, "NaN"), (options.positive_inf, "inf"),
                   (options.negative_inf, "-inf"))  # fmt: skip
        specials = tuple((v, arrow) for v, arrow in spelled if v not in ("NaN", "Inf", "-Inf"))
    return ValueRules(
        text, options.date_format, options.timestamp_format, options.timestamp_ntz_format,
        specials,
    )  # fmt: skip


def valid(arr: pa.Array) -> np.ndarray:
    return arr.is_valid().to_numpy(zero_copy_only=False)


def _all_bad(arr: pa.Array, t: pa.DataType) -> tuple[pa.Array, np.ndarray]:
    return pa.nulls(len(arr), t), valid(arr)


def rows_bad(offsets: pa.Array, bad: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Which lists/maps hold a bad element, from the element mask and the offsets."""
    sums = np.concatenate([[0], np.cumsum(bad)])
    off = offsets.to_numpy(zero_copy_only=False)
    return ((sums[off[1:]] - sums[off[:-1]]) > 0) & present


def _guard(arr: pa.Array, fn: Callable, t: pa.DataType) -> tuple[pa.Array, np.ndarray]:
    """``fn(arr)``; when Arrow rejects some values, bisect down to them, so the others keep
    Arrow's exact semantics and only the rejected ones become null and bad."""
    try:
        return fn(arr), np.zeros(len(arr), bool)
    except pa.ArrowNotImplementedError:
        return _all_bad(arr, t)
    except _ARROW_ERRORS:
        if len(arr) <= 1:
            return _all_bad(arr, t)
    half = len(arr) // 2
    (a, bad_a), (b, bad_b) = _guard(arr.slice(0, half), fn, t), _guard(arr.slice(half), fn, t)
    return pa.concat_arrays([a, b]), np.concatenate([bad_a, bad_b])


def _cast(t: pa.DataType, safe: bool = True) -> Callable:
    return lambda a: pc.cast(a, t, safe=safe)


def _strings_to_ts(a: pa.Array, t: pa.DataType) -> pa.Array:
    """ISO-8601 strings to timestamps; no zone means UTC (Arrow wants all or none zoned)."""
    if t.tz is None:
        return pc.cast(a, t)
    naive = pa.timestamp(t.unit)
    zoned = pc.match_substring_regex(a, _ZONED)
    if pc.all(zoned).as_py() is not False:
        return pc.cast(a, t)
    if not pc.any(zoned).as_py():
        return pc.cast(pc.cast(a, naive), t)
    with_zone, without = pc.if_else(zoned, a, None), pc.if_else(zoned, None, a)
    return pc.if_else(zoned, pc.cast(with_zone, t), pc.cast(pc.cast(without, naive), t))


def _parse_strings(a: pa.Array, t: pa.DataType, rules: ValueRules) -> tuple[pa.Array, np.ndarray]:
    """Strings to a scalar type; an empty string is null, not a mismatch."""
    pattern = rules.pattern(t)
    if pattern is not None:  # Spark's pattern, as ISO text; a value it does not match is bad
        a = pc.if_else(pc.equal(a, ""), None, a)
        iso = to_iso(pattern, a, pt.is_date(t))
        parse = _cast(t)
        if pt.is_timestamp(t) and t.tz and not pattern.zoned:  # no offset: UTC
            parse = lambda x: pc.cast(pc.cast(x, pa.timestamp(t.unit)), t)  # noqa: E731
        result, bad = _guard(iso, parse, t)
        return result, bad | (valid(a) & ~valid(iso))
    if rules.specials and pt.is_floating(t):
        for spelled, arrow in rules.specials:
            a = pc.if_else(pc.equal(a, spelled), arrow, a)
    fn = (lambda x: _strings_to_ts(x, t)) if pt.is_timestamp(t) else _cast(t)
    kinds = [(pt.is_integer, "int"), (pt.is_floating, "num"), (pt.is_decimal, "num")]
    kinds += [(pt.is_boolean, "bool"), (pt.is_date, "date"), (pt.is_timestamp, "ts")]
    gate = next((g for test, g in kinds if test(t)), None)
    try:
        return fn(a), np.zeros(len(a), bool)  # the common case: every value parses
    except pa.ArrowNotImplementedError:
        return _all_bad(a, t)
    except _ARROW_ERRORS:
        a = pc.if_else(pc.equal(a, ""), None, a)
        if gate is None:
            return _guard(a, fn, t)
    ok = pc.fill_null(pc.match_substring_regex(a, _GATES[gate]), False)
    result, bad = _guard(pc.if_else(ok, a, None), fn, t)
    return result, bad | (valid(a) & ~ok.to_numpy(zero_copy_only=False))


def convert(arr: pa.Array, t: pa.DataType, rules: ValueRules) -> tuple[pa.Array, np.ndarray]:
    """``arr`` as type ``t``. With ``rules.text``, strings are the wire form of every value and
    get parsed; otherwise (JSON) strings only fill string, timestamp, date, decimal and binary
    columns (``"12"`` for an int is drift worth rescuing, as in Spark)."""
    s = arr.type
    if s == t:
        return arr, np.zeros(len(arr), bool)
    if pt.is_null(s) or pt.is_null(t):
        return pa.nulls(len(arr), t), np.zeros(len(arr), bool)
    if pt.is_dictionary(s):
        return convert(arr.dictionary_decode(), t, rules)
    if pt.is_large_string(s) or pt.is_large_binary(s) or pt.is_large_list(s):
        small = {pa.large_string(): pa.string(), pa.large_binary(): pa.binary()}.get(s)
        return convert(arr.cast(small or pa.list_(s.value_field)), t, rules)
    if pt.is_string(t) and any(test(s) for test in NESTED):  # an object or array as JSON text
        values = [None if v is None else dumps(v) for v in arr.to_pylist()]
        return pa.array(values, pa.string()), np.zeros(len(arr), bool)
    if pt.is_struct(t):
        return _convert_struct(arr, t, rules) if pt.is_struct(s) else _all_bad(arr, t)
    if pt.is_list(t):
        if not pt.is_list(s):
            return _all_bad(arr, t)
        values, bad = convert(arr.values, t.value_type, rules)
        present = valid(arr)
        rows = rows_bad(arr.offsets, bad, present)
        mask = pa.array(~present | rows)
        return pa.ListArray.from_arrays(arr.offsets, values, type=t, mask=mask), rows
    if pt.is_map(t):
        if not (pt.is_map(s) or pt.is_struct(s)):
            return _all_bad(arr, t)
        maps = [v if v is None or isinstance(v, dict) else dict(v) for v in arr.to_pylist()]
        return from_python([None if v is None else clean(v) for v in maps], t, rules)
    if pt.is_string(s) and not pt.is_string(t):
        if rules.text or pt.is_timestamp(t) or pt.is_date(t) or pt.is_decimal(t) or pt.is_binary(t):
            return _parse_strings(arr, t, rules)
        return _all_bad(arr, t)
    numeric = pt.is_integer(s) or pt.is_floating(s) or pt.is_decimal(s)
    if pt.is_floating(t) and numeric:
        return _guard(arr, _cast(t, safe=False), t)  # rounding is what float columns do
    if pt.is_decimal(t) and numeric and not pt.is_decimal(s):  # Arrow's int->decimal overflows
        return _guard(pc.cast(arr, pa.string()), _cast(t), t)
    temporal = pt.is_timestamp(s) or pt.is_date(s)
    if (
        pt.is_string(t)
        or (pt.is_integer(t) and numeric)
        or (pt.is_decimal(t) and pt.is_decimal(s))
        or ((pt.is_timestamp(t) or pt.is_date(t)) and temporal)
        or (pt.is_binary(t) and pt.is_binary(s))
    ):
        return _guard(arr, _cast(t), t)  # safe: a lossy cast is a mismatch
    return _all_bad(arr, t)


def _convert_struct(
    arr: pa.StructArray, t: pa.DataType, rules: ValueRules
) -> tuple[pa.Array, np.ndarray]:
    """Field by field; a field the type lacks or a nested misfit rejects the whole value, so
    a struct column never holds half a record."""
    present = valid(arr)
    children = dict(zip([f.name for f in arr.type], arr.flatten(), strict=True))
    bad = np.zeros(len(arr), bool)
    out = []
    for field in t:
        child = children.pop(field.name, pa.nulls(len(arr)))
        converted, child_bad = convert(child, field.type, rules)
        out.append(converted)
        bad |= child_bad
    for extra in children.values():
        bad |= valid(extra)
    bad &= present
    return pa.StructArray.from_arrays(out, fields=list(t), mask=pa.array(~present | bad)), bad


def from_python(values: list, t: pa.DataType, rules: ValueRules) -> tuple[pa.Array, np.ndarray]:
    """Parsed JSON values to ``t``: grouped by JSON type so each group goes through
    :func:`convert` vectorised; objects and arrays are taken apart structurally, so a mixed
    array such as ``[1, "a"]`` still fits ``array<string>``."""
    groups: dict[str, list[int]] = {}
    for i, v in enumerate(values):
        kind = "none" if v is None else type(v).__name__
        kind = "bigint" if kind == "int" and not -(2**63) <= v < 2**63 else kind
        groups.setdefault(kind, []).append(i)
    parts, order = [], []
    bad = np.zeros(len(values), bool)
    for kind, idx in groups.items():
        arr, bad[idx] = _python_group(kind, [values[i] for i in idx], t, rules)
        parts.append(arr)
        order.extend(idx)
    if len(parts) != 1:
        parts = [pa.concat_arrays(parts).take(np.argsort(order))] if parts else [pa.nulls(0, t)]
    return parts[0], bad


def _python_group(
    kind: str, vals: list, t: pa.DataType, rules: ValueRules
) -> tuple[pa.Array, np.ndarray]:
    n = len(vals)
    if kind == "none":
        return pa.nulls(n, t), np.zeros(n, bool)
    if kind == "bigint":  # beyond 64 bits: a float for float columns, else its digits
        as_float = pt.is_floating(t)
        return convert(pa.array([float(v) if as_float else str(v) for v in vals]), t, rules)
    if kind not in ("dict", "list"):
        return convert(pa.array(vals), t, rules)
    if pt.is_string(t):  # the exact JSON text, members in file order
        return pa.array([dumps(v) for v in vals], pa.string()), np.zeros(n, bool)
    offsets = pa.array(np.cumsum([0] + [len(v) for v in vals]), pa.int32())
    if kind == "list" and pt.is_list(t):
        values, bad = from_python([e for v in vals for e in v], t.value_type, rules)
        rows = rows_bad(offsets, bad, np.ones(n, bool))
        return pa.ListArray.from_arrays(offsets, values, type=t, mask=pa.array(rows)), rows
    if kind == "dict" and pt.is_struct(t):
        names = {f.name for f in t}
        bad = np.array([any(k not in names and x is not None for k, x in v.items()) for v in vals])
        out = []
        for field in t:
            child, child_bad = from_python([v.get(field.name) for v in vals], field.type, rules)
            out.append(child)
            bad |= child_bad
        return pa.StructArray.from_arrays(out, fields=list(t), mask=pa.array(bad)), bad
    if kind == "dict" and pt.is_map(t):
        keys, key_bad = from_python([k for v in vals for k in v], t.key_type, rules)
        items, item_bad = from_python([x for v in vals for x in v.values()], t.item_type, rules)
        rows = rows_bad(offsets, key_bad | item_bad, np.ones(n, bool))
        if not rows.any():
            return pa.MapArray.from_arrays(offsets, keys, items, type=t), rows
        fitting = [{} if r else v for r, v in zip(rows, vals, strict=True)]
        fits, _ = _python_group(kind, fitting, t, rules)  # map keys cannot be null: rebuild
        mask = pa.array(rows)
        return pa.MapArray.from_arrays(fits.offsets, fits.keys, fits.items, t, mask=mask), rows
    return pa.nulls(n, t), np.ones(n, bool)
