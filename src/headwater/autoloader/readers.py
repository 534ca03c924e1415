"""Turn one source file into Arrow batches that match a declared Spark schema exactly.

Runs inside Spark's Python workers. Every value either lands in its column with the declared
type or, when it does not fit, is kept as JSON in the rescue column (``_rescued_data``), so a
file never fails a stream because of its contents and nothing is lost silently.

Rules: columns are matched by exact name (a case-only match is rescued, not placed); a value
that does not fit its type (lossy casts included) leaves the column null and is rescued; a
misfit anywhere inside a struct, array or map rescues the whole top-level value, so a column
never holds half a record; nulls (and empty CSV values) are never rescued. The rescue value is
a compact JSON object ``{"<field as in the file>": <original value>, ..., "_file_path": path}``,
or ``{"_corrupt_record": "<line>", "_file_path": path}`` for a line that is not JSON. Avro, ORC
and binaryFile are read in :mod:`.readers_binary`, by the same rules.

Speed comes from Arrow's C++ readers and compute kernels: a clean file never touches Python per
row. Python per row is only the fallback for the pieces Arrow cannot take (malformed JSON lines,
fields whose JSON type changes between rows, ragged CSV rows, multi-line JSON documents) and for
rescued values other than strings, integers and booleans. One routine (:func:`_convert`) decides
what fits, for every format and both paths, so a value's fate never depends on which path its
neighbours forced.
"""

from __future__ import annotations

import base64
import codecs
import csv
import io
import json
import re
from collections.abc import Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq
import pyarrow.types as pt
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import ArrayType, DataType, MapType, StringType, StructField, StructType

from headwater import storage
from headwater.errors import HeadwaterError, OptionError

__all__ = ["SUPPORTED_FORMATS", "CorruptFileError", "NewColumnsFound", "read_file"]

SUPPORTED_FORMATS = ("json", "csv", "parquet", "text", "avro", "orc", "binaryfile")
_CHUNK = 16 << 20  # bytes handed to Arrow at once: enough for its threads, bounded memory
_PIECE = 256 << 10  # a chunk Arrow rejects is retried in pieces this big before going per row
_CODECS = {"gz": "gzip", "gzip": "gzip", "bz2": "bz2", "zst": "zstd", "zstd": "zstd"}
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
_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"))  # JSON's
_HINT = "(set the encoding option, e.g. 'latin-1')"
_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError)
_NESTED = (pt.is_struct, pt.is_list, pt.is_large_list, pt.is_map)


class CorruptFileError(HeadwaterError):
    """A file that cannot be read (bad compression or encoding, a malformed record without a
    rescue column). Names the file so users and ``ignoreCorruptFiles`` can act on it."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"corrupt or unreadable file {path}: {reason}")
        self.path, self.reason = path, reason


class NewColumnsFound(HeadwaterError):
    """Raised (only when detect_new=True) when a file has columns the schema lacks."""

    def __init__(self, path: str, columns: list[str]):
        super().__init__(f"file {path} has columns not in the schema: {', '.join(columns)}")
        self.path, self.columns = path, list(columns)


def read_file(
    path: str,
    fmt: str,
    schema: StructType,
    options: dict[str, str],
    rescue_column: str | None,
    detect_new: bool = False,
    batch_rows: int = 65536,
) -> Iterator[pa.RecordBatch]:
    """Yield batches whose schema is exactly ``to_arrow_schema(schema + rescue col as string,
    timezone="UTC")`` with every field nullable (any file can lack a value; Spark's file
    sources do the same), timestamps ``timestamp[us, tz=UTC]``, the rescue column a string.
    """
    fmt = fmt.lower()
    if fmt not in SUPPORTED_FORMATS:
        raise ValueError(f"unsupported format {fmt!r}; expected one of {SUPPORTED_FORMATS}")
    if rescue_column and rescue_column in schema.names:
        raise ValueError(f"rescue column {rescue_column!r} is also a data column")
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be positive, got {batch_rows}")
    opts = {k.lower(): v for k, v in options.items()}
    conf = _Conformer(path, schema, rescue_column, fmt)
    if fmt == "json":
        tables: Iterable[pa.Table] = _read_json(conf, opts, batch_rows)
        if detect_new:  # a new field can appear on any line: read the whole file first
            tables = list(tables)
            conf.check_new()
    elif fmt == "csv":
        tables = _read_csv(conf, opts, detect_new)
    elif fmt == "parquet":
        tables = _read_parquet(conf, detect_new, batch_rows)
    elif fmt == "text":
        tables = _read_text(conf, schema, opts)
    else:  # avro, orc, binaryfile; that module builds on this one, so it is imported here
        from headwater.autoloader import readers_binary

        tables = readers_binary.read(conf, fmt, opts, detect_new, batch_rows)
    yield from _rebatch(tables, batch_rows)


# ------------------------------------------------------------------------------ placing values


def _nullable(dt: DataType) -> DataType:
    if isinstance(dt, StructType):
        return StructType([StructField(f.name, _nullable(f.dataType), True) for f in dt.fields])
    if isinstance(dt, ArrayType):
        return ArrayType(_nullable(dt.elementType), True)
    if isinstance(dt, MapType):
        return MapType(_nullable(dt.keyType), _nullable(dt.valueType), True)
    return dt


class _Conformer:
    """Places named source columns (Arrow arrays, or Python lists from the per-row path) into
    the target schema and gathers what does not fit into the rescue column."""

    def __init__(self, path: str, schema: StructType, rescue: str | None, fmt: str):
        fields = [StructField(f.name, _nullable(f.dataType), True) for f in schema.fields]
        if rescue:
            fields.append(StructField(rescue, StringType(), True))
        self.schema = to_arrow_schema(StructType(fields), timezone="UTC")
        self.path, self.rescue, self.fmt = path, rescue, fmt
        self.text = fmt != "json"  # strings are the wire form of values: parse them
        self.fields = list(self.schema)[: len(schema.fields)]
        self.types = {f.name: f.type for f in self.fields}
        self.seen: dict[str, None] = {}  # top-level source names, in order of appearance

    def check_new(self) -> None:
        known = {name.lower() for name in self.types}  # a case-only clash is not a new column
        new = [name for name in self.seen if name.lower() not in known]
        if new:
            raise NewColumnsFound(self.path, new)

    def assemble(self, n: int, cols: Iterable[tuple[str, pa.Array | list]], corrupt=None):
        """A table of the target schema from source columns; ``corrupt``: {row: raw line}."""
        out: dict[str, pa.Array] = {}
        parts = []
        if corrupt:
            parts.append(self._part("_corrupt_record", list(corrupt.values()), list(corrupt)))
        for name, src in cols:
            self.seen.setdefault(name)
            target = self.types.get(name)  # exact names only: a case-only match is rescued
            rows = None  # the rows to rescue; None: every non-null value
            if target is not None and name not in out:
                convert = _from_python if isinstance(src, list) else _convert
                out[name], bad = convert(src, target, self.text)
                if not bad.any():
                    continue
                rows = np.flatnonzero(bad)
            if self.rescue and isinstance(src, list):
                rows = [i for i, v in enumerate(src) if v is not None] if rows is None else rows
                parts.append(self._part(name, [src[i] for i in rows], rows))
            elif self.rescue:
                rows = np.flatnonzero(_valid(src)) if rows is None else rows
                parts.append(self._part(name, src.take(pa.array(rows, pa.int64())), rows))
        arrays = [out[f.name] if f.name in out else pa.nulls(n, f.type) for f in self.fields]
        if self.rescue:
            arrays.append(self._rescue_json(n, parts))
        return pa.Table.from_arrays(arrays, schema=self.schema)

    def _part(self, name: str, values: pa.Array | list, rows) -> tuple[pa.Array, np.ndarray]:
        """``"name":<value as JSON>`` for the given rows. Strings, integers and booleans (the
        bulk when a column drifts to another type) are written by Arrow's string kernels, the
        rest by Python. An empty CSV value is null, and nulls are never rescued."""
        rows, key = np.asarray(rows, np.int64), _dumps(name) + ":"
        if isinstance(values, pa.Array) and self.fmt == "csv":
            keep = pc.fill_null(pc.not_equal(values, ""), False)
            values, rows = values.filter(keep), rows[keep.to_numpy(zero_copy_only=False)]
        if isinstance(values, pa.Array) and pt.is_string(values.type):
            text = values
            for raw, escaped in _ESCAPES:
                text = pc.replace_substring(text, raw, escaped)
            if not pc.any(pc.match_substring_regex(text, r"[\x00-\x1f]")).as_py():
                return pc.binary_join_element_wise(key, '"', text, '"', ""), rows
        elif isinstance(values, pa.Array) and (
            pt.is_integer(values.type) or pt.is_boolean(values.type)
        ):
            return pc.binary_join_element_wise(key, values.cast(pa.string()), ""), rows
        values = values.to_pylist() if isinstance(values, pa.Array) else values
        return pa.array([key + _dumps(_clean(v)) for v in values], pa.string()), rows

    def _rescue_json(self, n: int, parts: list[tuple[pa.Array, np.ndarray]]) -> pa.Array:
        """Each row's parts (in column order) joined into one JSON object, plus ``_file_path``;
        null where nothing was rescued."""
        if not parts:
            return pa.nulls(n, pa.string())
        rows = np.concatenate([r for _, r in parts])
        order = pa.array(np.argsort(rows, kind="stable"))
        texts = pa.concat_arrays([t for t, _ in parts]).take(order)
        counts = np.bincount(rows, minlength=n)
        offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]), pa.int32())
        lists = pa.ListArray.from_arrays(offsets, texts, mask=pa.array(counts == 0))
        tail = ',"_file_path":' + _dumps(self.path) + "}"
        return pc.binary_join_element_wise("{", pc.binary_join(lists, ","), tail, "")

    def assemble_all(self, table: pa.Table | pa.RecordBatch) -> list[pa.Table]:
        batches = table.to_batches() if isinstance(table, pa.Table) else [table]
        return [
            self.assemble(b.num_rows, zip(b.schema.names, b.columns, strict=True)) for b in batches
        ]


def _rebatch(tables: Iterable[pa.Table], size: int) -> Iterator[pa.RecordBatch]:
    """Even out batch sizes: Arrow's blocks and the per-row pieces come in any size."""
    pending: list[pa.Table] = []
    count = 0
    for table in tables:
        pending.append(table)
        count += table.num_rows
        if count >= size:
            merged = pa.concat_tables(pending).combine_chunks()
            full = count - count % size
            yield from merged.slice(0, full).to_batches(max_chunksize=size)
            pending, count = [merged.slice(full)], count - full
    if count:
        yield from pa.concat_tables(pending).combine_chunks().to_batches(max_chunksize=size)


def _clean(value):
    """Drop null members of objects: Arrow cannot tell a missing member from a null one."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _json_default(value):
    """Parquet values JSON lacks: temporal ones as ISO text, decimals exactly, bytes base64."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, tuple):  # a map entry from Arrow
        return list(value)
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


# One encoder for all: json.dumps with options builds a new encoder per call (3x slower).
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=_json_default).encode


# ------------------------------------------------------------------------------ converting
# Each converter returns (array of the target type, mask of rows whose value did not fit and
# is null in the array). Arrow has no null-on-error cast; these build one on Arrow's own casts.


def _valid(arr: pa.Array) -> np.ndarray:
    return arr.is_valid().to_numpy(zero_copy_only=False)


def _all_bad(arr: pa.Array, t: pa.DataType) -> tuple[pa.Array, np.ndarray]:
    return pa.nulls(len(arr), t), _valid(arr)


def _rows_bad(offsets: pa.Array, bad: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Which lists/maps hold a bad element, from the element mask and the offsets."""
    sums = np.concatenate([[0], np.cumsum(bad)])
    off = offsets.to_numpy(zero_copy_only=False)
    return ((sums[off[1:]] - sums[off[:-1]]) > 0) & valid


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


def _parse_strings(a: pa.Array, t: pa.DataType) -> tuple[pa.Array, np.ndarray]:
    """Strings to a scalar type; an empty string is null, not a mismatch."""
    fn = (lambda x: _strings_to_ts(x, t)) if pt.is_timestamp(t) else _cast(t)
    kinds = ((pt.is_integer, "int"), (pt.is_floating, "num"), (pt.is_decimal, "num"))
    kinds += ((pt.is_boolean, "bool"), (pt.is_date, "date"), (pt.is_timestamp, "ts"))
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
    return result, bad | (_valid(a) & ~ok.to_numpy(zero_copy_only=False))


def _convert(arr: pa.Array, t: pa.DataType, text: bool) -> tuple[pa.Array, np.ndarray]:
    """``arr`` as type ``t``. ``text``: strings are the wire form of every value (CSV, a
    Parquet string column) and get parsed; JSON strings only fill string, timestamp, date,
    decimal and binary columns (``"12"`` for an int is drift worth rescuing, as in Spark)."""
    s = arr.type
    if s == t:
        return arr, np.zeros(len(arr), bool)
    if pt.is_null(s) or pt.is_null(t):
        return pa.nulls(len(arr), t), np.zeros(len(arr), bool)
    if pt.is_dictionary(s):
        return _convert(arr.dictionary_decode(), t, text)
    if pt.is_large_string(s) or pt.is_large_binary(s) or pt.is_large_list(s):
        small = {pa.large_string(): pa.string(), pa.large_binary(): pa.binary()}.get(s)
        return _convert(arr.cast(small or pa.list_(s.value_field)), t, text)
    if pt.is_string(t) and any(test(s) for test in _NESTED):  # an object or array as JSON text
        values = [None if v is None else _dumps(v) for v in arr.to_pylist()]
        return pa.array(values, pa.string()), np.zeros(len(arr), bool)
    if pt.is_struct(t):
        return _convert_struct(arr, t, text) if pt.is_struct(s) else _all_bad(arr, t)
    if pt.is_list(t):
        if not pt.is_list(s):
            return _all_bad(arr, t)
        values, bad = _convert(arr.values, t.value_type, text)
        valid = _valid(arr)
        rows = _rows_bad(arr.offsets, bad, valid)
        mask = pa.array(~valid | rows)
        return pa.ListArray.from_arrays(arr.offsets, values, type=t, mask=mask), rows
    if pt.is_map(t):
        if not (pt.is_map(s) or pt.is_struct(s)):
            return _all_bad(arr, t)
        rows = [v if v is None or isinstance(v, dict) else dict(v) for v in arr.to_pylist()]
        return _from_python([None if v is None else _clean(v) for v in rows], t, text)
    if pt.is_string(s) and not pt.is_string(t):
        if text or pt.is_timestamp(t) or pt.is_date(t) or pt.is_decimal(t) or pt.is_binary(t):
            return _parse_strings(arr, t)
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


def _convert_struct(arr: pa.StructArray, t: pa.DataType, text: bool) -> tuple[pa.Array, np.ndarray]:
    """Field by field; a field the type lacks or a nested misfit rejects the whole value, so
    a struct column never holds half a record."""
    valid = _valid(arr)
    children = dict(zip([f.name for f in arr.type], arr.flatten(), strict=True))
    bad = np.zeros(len(arr), bool)
    out = []
    for field in t:
        child = children.pop(field.name, pa.nulls(len(arr)))
        converted, child_bad = _convert(child, field.type, text)
        out.append(converted)
        bad |= child_bad
    for extra in children.values():
        bad |= _valid(extra)
    bad &= valid
    return pa.StructArray.from_arrays(out, fields=list(t), mask=pa.array(~valid | bad)), bad


def _from_python(values: list, t: pa.DataType, text: bool) -> tuple[pa.Array, np.ndarray]:
    """Parsed JSON values to ``t``: grouped by JSON type so each group goes through
    :func:`_convert` vectorised; objects and arrays are taken apart structurally, so a mixed
    array such as ``[1, "a"]`` still fits ``array<string>``."""
    groups: dict[str, list[int]] = {}
    for i, v in enumerate(values):
        kind = "none" if v is None else type(v).__name__
        kind = "bigint" if kind == "int" and not -(2**63) <= v < 2**63 else kind
        groups.setdefault(kind, []).append(i)
    parts, order = [], []
    bad = np.zeros(len(values), bool)
    for kind, idx in groups.items():
        arr, bad[idx] = _python_group(kind, [values[i] for i in idx], t, text)
        parts.append(arr)
        order.extend(idx)
    if len(parts) != 1:
        parts = [pa.concat_arrays(parts).take(np.argsort(order))] if parts else [pa.nulls(0, t)]
    return parts[0], bad


def _python_group(kind: str, vals: list, t: pa.DataType, text: bool) -> tuple[pa.Array, np.ndarray]:
    n = len(vals)
    if kind == "none":
        return pa.nulls(n, t), np.zeros(n, bool)
    if kind == "bigint":  # beyond 64 bits: a float for float columns, else its digits
        as_float = pt.is_floating(t)
        return _convert(pa.array([float(v) if as_float else str(v) for v in vals]), t, text)
    if kind not in ("dict", "list"):
        return _convert(pa.array(vals), t, text)
    if pt.is_string(t):  # the exact JSON text, members in file order
        return pa.array([_dumps(v) for v in vals], pa.string()), np.zeros(n, bool)
    offsets = pa.array(np.cumsum([0] + [len(v) for v in vals]), pa.int32())
    if kind == "list" and pt.is_list(t):
        values, bad = _from_python([e for v in vals for e in v], t.value_type, text)
        rows = _rows_bad(offsets, bad, np.ones(n, bool))
        return pa.ListArray.from_arrays(offsets, values, type=t, mask=pa.array(rows)), rows
    if kind == "dict" and pt.is_struct(t):
        names = {f.name for f in t}
        bad = np.array([any(k not in names and x is not None for k, x in v.items()) for v in vals])
        out = []
        for field in t:
            child, child_bad = _from_python([v.get(field.name) for v in vals], field.type, text)
            out.append(child)
            bad |= child_bad
        return pa.StructArray.from_arrays(out, fields=list(t), mask=pa.array(bad)), bad
    if kind == "dict" and pt.is_map(t):
        keys, key_bad = _from_python([k for v in vals for k in v], t.key_type, text)
        items, item_bad = _from_python([x for v in vals for x in v.values()], t.item_type, text)
        rows = _rows_bad(offsets, key_bad | item_bad, np.ones(n, bool))
        if not rows.any():
            return pa.MapArray.from_arrays(offsets, keys, items, type=t), rows
        fitting = [{} if r else v for r, v in zip(rows, vals, strict=True)]
        fits, _ = _python_group(kind, fitting, t, text)  # map keys cannot be null: rebuild
        mask = pa.array(rows)
        return pa.MapArray.from_arrays(fits.offsets, fits.keys, fits.items, t, mask=mask), rows
    return pa.nulls(n, t), np.ones(n, bool)


# ------------------------------------------------------------------------------ bytes in


def _utf8(encoding: str | None) -> bool:
    return (encoding or "utf-8").lower().replace("_", "-") in ("utf-8", "utf8")


def _byte_chunks(path: str, encoding: str | None, whole: bool = False) -> Iterator[bytes]:
    """The decompressed file as chunks of valid UTF-8 ending at a line break (the last may
    not): other encodings are transcoded here and a leading BOM dropped, so no later step
    worries about bytes. Decompression and decoding errors become :class:`CorruptFileError`."""
    try:
        decoder = None if _utf8(encoding) else codecs.getincrementaldecoder(encoding)()
    except LookupError as e:
        raise OptionError(f"unknown encoding {encoding!r} in option 'encoding'") from e
    carry, first, line, parts = b"", True, 1, []

    def checked(data: bytes) -> bytes:  # Arrow's JSON reader does not check UTF-8 itself
        nonlocal line
        if decoder is None and not data.isascii():
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as e:
                bad_line = line + data.count(b"\n", 0, e.start)
                raise CorruptFileError(path, f"line {bad_line} is not valid UTF-8 {_HINT}") from e
        line += data.count(b"\n")
        return data

    fs, inner = storage.filesystem(path)
    codec = _CODECS.get(path.rsplit(".", 1)[-1].lower())
    try:
        with fs.open_input_stream(inner, compression=codec) as stream:
            while True:
                raw = stream.read(_CHUNK)
                block = raw if decoder is None else decoder.decode(raw, final=not raw).encode()
                if first and block.startswith(codecs.BOM_UTF8):
                    block = block[len(codecs.BOM_UTF8) :]
                first = False
                if not raw:
                    break
                if whole:
                    parts.append(block)
                    continue
                data = carry + block
                cut = data.rfind(b"\n") + 1
                carry = data[cut:]
                if cut:
                    yield checked(data[:cut])
    except FileNotFoundError:
        raise
    except UnicodeDecodeError as e:
        raise CorruptFileError(path, f"not valid {encoding} text ({e.reason})") from e
    except (OSError, pa.ArrowException) as e:
        raise CorruptFileError(path, f"cannot read or decompress it: {e}") from e
    carry = b"".join(parts) if whole else carry
    if carry:
        yield checked(carry)


def _drive(chunks: Iterable[bytes], fast, slow, split: bool = True) -> Iterator[pa.Table]:
    """Arrow takes each chunk; a chunk it rejects is retried in pieces, and only the pieces it
    still rejects go through the per-row ``slow(piece, first_line)``."""
    line = 1
    for chunk in chunks:
        tables = fast(chunk)
        if tables is not None:
            yield from tables
        elif not split or len(chunk) <= _PIECE:
            yield slow(chunk, line)
        else:
            start, piece_line = 0, line
            while start < len(chunk):
                end = chunk.find(b"\n", start + _PIECE) + 1 or len(chunk)
                piece, start = chunk[start:end], end
                tables = fast(piece)
                yield from [slow(piece, piece_line)] if tables is None else tables
                piece_line += piece.count(b"\n")
        line += chunk.count(b"\n")


# ------------------------------------------------------------------------------ json


def _wire(t: pa.DataType) -> pa.DataType | None:
    """The type to ask Arrow's JSON reader for (None: let it infer). Dates and zone-less
    timestamps come as strings and are parsed by :func:`_convert`."""
    if pt.is_struct(t):
        fields = [(f.name, _wire(f.type)) for f in t]
        return None if any(w is None for _, w in fields) else pa.struct(fields)
    if pt.is_list(t):
        inner = _wire(t.value_type)
        return None if inner is None else pa.list_(t.value_field.with_type(inner))
    if pt.is_date(t) or (pt.is_timestamp(t) and t.tz is None):
        return pa.string()
    return None if pt.is_map(t) or pt.is_null(t) else t


def _retype(t: pa.DataType, fn: Callable) -> pa.DataType:
    if pt.is_struct(t):
        return pa.struct([f.with_type(_retype(f.type, fn)) for f in t])
    if pt.is_list(t):
        return pa.list_(t.value_field.with_type(_retype(t.value_type, fn)))
    return fn(t)


def _has(t: pa.DataType, test: Callable) -> bool:
    if pt.is_struct(t):
        return any(_has(f.type, test) for f in t)
    return _has(t.value_type, test) if pt.is_list(t) else test(t)


def _lossy_text(actual: pa.DataType, target: pa.DataType | None) -> bool:
    """An object or array parsed by Arrow where the target wants its JSON text: the exact text
    (member order, null members) only survives in the per-row path."""
    if target is None:
        return False
    if pt.is_string(target):
        return any(test(actual) for test in _NESTED)
    if pt.is_struct(target) and pt.is_struct(actual):
        sub = {f.name: f.type for f in target}
        return any(_lossy_text(f.type, sub.get(f.name)) for f in actual)
    if pt.is_list(target) and pt.is_list(actual):
        return _lossy_text(actual.value_type, target.value_type)
    return False


def _lossy_ints(field: pa.Field, column: pa.ChunkedArray, plan: dict) -> bool:
    """Arrow infers integers beyond 64 bits (or mixed with fractions) as doubles, losing
    digits: only the per-row path keeps them exact."""
    if plan.get(field.name) is not None or not pt.is_floating(field.type):
        return False
    big = pc.and_(pc.greater_equal(pc.abs(column), 2.0**53), pc.equal(pc.floor(column), column))
    return bool(pc.any(big).as_py())


def _json_fast(chunk: bytes, plan: dict, conf: _Conformer) -> list[pa.Table] | None:
    """Arrow's JSON reader on a chunk, or None when it cannot take it. ``plan`` (one per file)
    holds the type to ask Arrow for per column, None to let it infer; it learns from Arrow's
    complaints (a string column holding numbers, an int column holding strings)."""
    block = 1 << 20
    for _ in range(2 * len(plan) + 4):
        explicit = pa.schema([(k, w) for k, w in plan.items() if w is not None])
        opts = pajson.ParseOptions(explicit_schema=explicit, unexpected_field_behavior="infer")
        try:
            table = pajson.read_json(
                io.BytesIO(chunk), pajson.ReadOptions(block_size=block), parse_options=opts
            )
        except pa.ArrowException as e:
            msg = str(e)
            if "straddl" in msg and block < len(chunk):  # a line longer than a block
                block = len(chunk) + 1
                continue
            # A column whose values do not fit its declared type: let Arrow infer it instead
            # and _convert sort the values out, vectorised. Anything else goes per row.
            named = re.findall(r"Column\(/([^/)]*)", msg) or [
                k for k, w in plan.items() if re.search(f"JSON to {re.escape(str(w))}[,:]", msg)
            ]
            named = [k for k in named if plan.get(k) is not None]
            if not named:
                return None
            plan.update(dict.fromkeys(named))
            continue
        retry = False
        for field, column in zip(table.schema, table.columns, strict=True):
            if _lossy_text(field.type, conf.types.get(field.name)) or _lossy_ints(
                field, column, plan
            ):
                return None
            if plan.get(field.name) is None and _has(field.type, pt.is_timestamp):
                # Arrow made timestamps of strings: read them as the strings they are
                plan[field.name] = _retype(
                    field.type, lambda x: pa.string() if pt.is_timestamp(x) else x
                )
                retry = True
        if not retry:
            return conf.assemble_all(table)
    return None


def _json_rows(objs: list, raws: list[str], lines: list[int], conf: _Conformer) -> pa.Table:
    """The per-row path: parsed objects (None when malformed) to a table."""
    rows, corrupt = [], {}
    for obj, raw, line in zip(objs, raws, lines, strict=True):
        if isinstance(obj, list) and obj and all(isinstance(o, dict) for o in obj):
            rows.extend(obj)  # a line holding an array of records, read as Spark does
        elif isinstance(obj, dict):
            rows.append(obj)
        elif conf.rescue is None:
            raise CorruptFileError(conf.path, f"line {line}: malformed JSON record")
        else:
            corrupt[len(rows)] = raw
            rows.append({})
    names = dict.fromkeys(key for row in rows for key in row)
    return conf.assemble(len(rows), [(k, [row.get(k) for row in rows]) for k in names], corrupt)


def _json_slow(piece: bytes, first_line: int, conf: _Conformer) -> pa.Table:
    objs, raws, lines = [], [], []
    for k, raw in enumerate(piece.split(b"\n")):
        if raw.strip():
            text = raw.decode().rstrip("\r")
            try:
                objs.append(json.loads(text))
            except ValueError:
                objs.append(None)
            raws.append(text)
            lines.append(first_line + k)
    return _json_rows(objs, raws, lines, conf)


def _read_json(conf: _Conformer, opts: dict, batch_rows: int) -> Iterator[pa.Table]:
    encoding = opts.get("encoding")
    if opts.get("multiline", "false").lower() != "true":
        plan = {f.name: _wire(f.type) for f in conf.fields}
        yield from _drive(
            _byte_chunks(conf.path, encoding),
            lambda chunk: _json_fast(chunk, plan, conf),
            lambda piece, line: _json_slow(piece, line, conf),
        )
        return
    text = b"".join(_byte_chunks(conf.path, encoding, whole=True)).decode()
    if not text.strip():
        return
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    objs = doc if isinstance(doc, list) else [doc]
    raws = [text] if doc is None else [_dumps(o) for o in objs]
    for start in range(0, len(objs), batch_rows):
        end = start + batch_rows
        yield _json_rows(objs[start:end], raws[start:end], [1] * len(objs[start:end]), conf)


# ------------------------------------------------------------------------------ csv


def _read_csv(conf: _Conformer, opts: dict, detect_new: bool) -> Iterator[pa.Table]:
    sep = opts.get("sep", opts.get("delimiter", ","))
    sep = "\t" if sep == "\\t" else sep
    quote, escape = opts.get("quote", '"'), opts.get("escape", "\\")
    for key, value in (("sep", sep), ("quote", quote), ("escape", escape)):
        if len(value) > 1 or (key == "sep" and not value):
            raise OptionError(f"CSV option {key}={value!r} must be a single character")
    header = opts.get("header", "true").lower() == "true"
    multiline = opts.get("multiline", "false").lower() == "true"
    dialect = {"delimiter": sep, "quotechar": quote or None, "escapechar": escape or None}
    dialect["quoting"] = csv.QUOTE_MINIMAL if quote else csv.QUOTE_NONE
    parse = pacsv.ParseOptions(
        delimiter=sep, quote_char=quote or False, escape_char=escape or False,
        newlines_in_values=multiline,
    )  # fmt: skip
    names: list[str] = []
    skip_header = False  # whether the chunk at hand still starts with the header record

    def records(chunk: bytes) -> list[list[str]]:
        text = chunk.decode()
        if multiline:
            return [r for r in csv.reader(io.StringIO(text, newline=""), **dialect) if r]
        lines = (line.rstrip("\r") for line in text.split("\n"))
        return [r for r in (next(csv.reader([ln], **dialect), []) for ln in lines) if r]

    def fast(chunk: bytes) -> list[pa.Table] | None:
        ragged: list = []
        cols = [f"f{i}" for i in range(len(names))]
        parse.invalid_row_handler = lambda row: ragged.append(row) or "skip"
        convert = pacsv.ConvertOptions(
            column_types=dict.fromkeys(cols, pa.string()), strings_can_be_null=False
        )
        try:
            table = pacsv.read_csv(
                io.BytesIO(chunk), pacsv.ReadOptions(column_names=cols, block_size=1 << 22),
                parse, convert,
            )  # fmt: skip
        except pa.ArrowException:
            return None
        if ragged:
            return None
        return conf.assemble_all(table.slice(int(skip_header)).rename_columns(names))

    def slow(chunk: bytes, _line: int) -> pa.Table:
        rows = records(chunk)[int(skip_header) :]
        width = max([len(names), *map(len, rows)])  # fields beyond the header: "_c<index>"
        col = lambda i: [r[i] if i < len(r) else None for r in rows]  # noqa: E731
        cols = [(names[i] if i < len(names) else f"_c{i}", col(i)) for i in range(width)]
        cols = [(name, pa.array(values, pa.string())) for name, values in cols]
        return conf.assemble(len(rows), cols)

    for chunk in _byte_chunks(conf.path, opts.get("encoding"), whole=multiline):
        if not names:
            chunk = chunk.lstrip(b"\r\n")
            text = (chunk if multiline else chunk.split(b"\n", 1)[0]).decode()
            reader = csv.reader(io.StringIO(text.rstrip("\r"), newline=""), **dialect)
            first = next((r for r in reader if r), None)  # lazily: only the first record
            if first is None:
                continue
            known = [f.name for f in conf.fields]
            positional = [known[i] if i < len(known) else f"_c{i}" for i in range(len(first))]
            names = first if header else positional
            conf.seen.update(dict.fromkeys(names))
            if detect_new:
                conf.check_new()
            if header and not multiline:
                chunk = chunk.split(b"\n", 1)[1] if b"\n" in chunk else b""
            skip_header = header and multiline
        if chunk.strip():
            yield from _drive([chunk], fast, slow, split=not multiline)
        skip_header = False


# ------------------------------------------------------------------------------ parquet, text


def _read_parquet(conf: _Conformer, detect_new: bool, batch_rows: int) -> Iterator[pa.Table]:
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


def _read_text(conf: _Conformer, schema: StructType, opts: dict) -> Iterator[pa.Table]:
    """One row per line, line breaks (\\n or \\r\\n) stripped; empty lines are rows."""
    if len(schema.fields) != 1 or not isinstance(schema.fields[0].dataType, StringType):
        raise ValueError(f"the text format reads one string column, not {schema.simpleString()}")
    for chunk in _byte_chunks(conf.path, opts.get("encoding")):
        chunk = chunk[:-1] if chunk.endswith(b"\n") else chunk
        whole = pa.array([chunk], pa.binary()).cast(pa.string())  # checked by _byte_chunks
        lines = pc.replace_substring_regex(pc.split_pattern(whole, "\n")[0].values, r"\r$", "")
        yield conf.assemble(len(lines), [(schema.fields[0].name, lines)])
