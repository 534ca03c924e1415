"""Avro files, decoded by fastavro into Arrow arrays of the types the file's schema implies.

fastavro decodes rows to Python; each chunk becomes one Arrow array per column, built for the
Arrow type that :class:`_AvroTypes` derives from the file's writer schema (or the
``avroSchema`` option, a compatible reader schema). A union of ``null`` and one type is that
type, nullable; ``int``/``long`` and ``float``/``double`` unions widen; other unions are
structs ``member0, member1, ...`` as in Spark. Logical types: ``date``; ``timestamp-millis``
and ``-micros`` (UTC) and ``local-timestamp-*`` (no zone); ``decimal`` (a string beyond 38
digits); ``uuid`` as a string; ``time-millis``/``-micros`` as integers, as in Spark. Values
that do not fit the declared schema are rescued by the same rules as Parquet's.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import pyarrow as pa
import pyarrow.types as pt

from headwater import storage
from headwater.formats.conform import Conformer
from headwater.formats.errors import CorruptFileError
from headwater.formats.options import AvroOptions, parse_avro_schema

__all__ = ["avro_schema", "read_avro"]

Fix = Callable[[Any], Any]


@dataclass(frozen=True)
class _Avro:
    """How one Avro schema node is read: its Arrow type; ``fix`` turning fastavro's Python
    value into one Arrow takes for that type (None: taken as it is); ``accepts``: whether a
    decoded value is of this node (used to tell which branch of a union a value took)."""

    type: pa.DataType
    fix: Fix | None
    accepts: Callable[[object], bool]


def _is(*kinds: type) -> Callable[[object], bool]:
    return lambda v: isinstance(v, kinds) and not (bool not in kinds and isinstance(v, bool))


def _nullsafe(fix: Fix) -> Fix:
    return lambda v: None if v is None else fix(v)


_PRIMITIVES = {
    "null": _Avro(pa.null(), None, lambda v: v is None),
    "boolean": _Avro(pa.bool_(), None, _is(bool)),
    "int": _Avro(pa.int32(), None, _is(int)),
    "long": _Avro(pa.int64(), None, _is(int)),
    "float": _Avro(pa.float32(), None, _is(float)),
    "double": _Avro(pa.float64(), None, _is(float)),
    "bytes": _Avro(pa.binary(), None, _is(bytes)),
    "string": _Avro(pa.string(), None, _is(str)),
}


def _each(fix: Fix, values: list) -> list:
    return [fix(v) for v in values]


def _each_value(fix: Fix, values: dict) -> list[tuple]:
    return [(k, fix(v)) for k, v in values.items()]


def _since_midnight(unit: int) -> Fix:
    """A ``datetime.time`` (fastavro's time-millis/-micros) as ``unit`` µs since midnight."""
    return lambda v: (
        ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 // unit + (v.microsecond // unit)
    )


def _logical(node: dict, base: str) -> _Avro | None:
    """The logical types fastavro decodes (on the base types it decodes them from)."""
    logical = node.get("logicalType")
    if logical == "decimal" and base in ("bytes", "fixed"):
        precision, scale = int(node.get("precision", 0)), int(node.get("scale", 0))
        accepts = lambda v: type(v).__name__ == "Decimal"  # noqa: E731
        if 0 < precision <= 38 and 0 <= scale <= precision:
            return _Avro(pa.decimal128(precision, scale), None, accepts)
        return _Avro(pa.string(), _nullsafe(str), accepts)  # beyond Spark's decimals: exact text
    if logical == "date" and base == "int":
        return _Avro(pa.date32(), None, lambda v: type(v) is dt.date)
    if logical in ("timestamp-millis", "timestamp-micros") and base == "long":
        return _Avro(pa.timestamp("us", "UTC"), None, _is(dt.datetime))
    if logical in ("local-timestamp-millis", "local-timestamp-micros") and base == "long":
        return _Avro(pa.timestamp("us"), None, _is(dt.datetime))
    if logical == "uuid" and base == "string":
        return _Avro(pa.string(), _nullsafe(str), _is(str, uuid.UUID))
    if logical == "time-millis" and base == "int":
        return _Avro(pa.int32(), _nullsafe(_since_midnight(1000)), _is(dt.time))
    if logical == "time-micros" and base == "long":
        return _Avro(pa.int64(), _nullsafe(_since_midnight(1)), _is(dt.time))
    return None


class _AvroTypes:
    """Avro schema nodes (as fastavro parses them: full names, a named type defined once and
    then referred to by name) to :class:`_Avro`."""

    def __init__(self) -> None:
        self.named: dict[str, _Avro] = {}
        self.fields: dict[str, list[tuple[str, _Avro]]] = {}  # per record name
        self.defining: set[str] = set()

    def node(self, s) -> _Avro:
        if isinstance(s, str):
            if s in _PRIMITIVES:
                return _PRIMITIVES[s]
            if s in self.defining:
                raise ValueError(f"recursive Avro type {s!r} has no Spark equivalent")
            if s in self.named:
                return self.named[s]
            raise ValueError(f"unknown Avro type {s!r}")
        if isinstance(s, list):
            return self._union([self.node(branch) for branch in s], s)
        kind = s.get("type")
        if isinstance(kind, (dict, list)):
            return self.node(kind)
        logical = _logical(s, kind) if "logicalType" in s else None
        if logical is not None:
            if kind == "fixed":
                self.named[s["name"]] = logical
            return logical
        if kind in ("record", "error"):
            return self._record(s)
        if kind in ("enum", "fixed"):
            avro = _PRIMITIVES["string" if kind == "enum" else "bytes"]
            self.named[s["name"]] = avro
            return avro
        if kind == "array":
            items = self.node(s["items"])
            fix = items.fix and _nullsafe(partial(_each, items.fix))
            return _Avro(pa.list_(items.type), fix, _is(list))
        if kind == "map":
            values = self.node(s["values"])
            fix = values.fix and _nullsafe(partial(_each_value, values.fix))
            return _Avro(pa.map_(pa.string(), values.type), fix, _is(dict))
        return self.node(kind)  # {"type": "long"} and the like

    def _record(self, s: dict) -> _Avro:
        name = s["name"]
        self.defining.add(name)
        fields = [(f["name"], self.node(f["type"])) for f in s["fields"]]
        self.defining.discard(name)
        self.fields[name] = fields
        fixes = [(n, a.fix) for n, a in fields if a.fix is not None]

        def fix(v: dict) -> dict:
            v = dict(v)
            for n, f in fixes:
                v[n] = f(v.get(n))
            return v

        names = {n for n, _ in fields}  # fastavro's records hold every field; maps need not
        accepts = lambda v: (  # noqa: E731
            isinstance(v, dict) and v.keys() == names or isinstance(v, tuple) and v[0] == name
        )
        struct = pa.struct([(n, a.type) for n, a in fields])
        avro = _Avro(struct, _nullsafe(fix) if fixes else None, accepts)
        self.named[name] = avro
        return avro

    def _union(self, branches: list[_Avro], schema: list) -> _Avro:
        real = [(b, s) for b, s in zip(branches, schema, strict=True) if not pt.is_null(b.type)]
        if not real:
            return _PRIMITIVES["null"]
        if len(real) == 1:
            return real[0][0]
        plain = {s if isinstance(s, str) else None for _, s in real}
        if plain <= {"int", "long"}:
            return _PRIMITIVES["long"]
        if plain <= {"float", "double"}:
            return _PRIMITIVES["double"]
        members = [b for b, _ in real]

        def fix(v):
            for i, member in enumerate(members):
                if member.accepts(v):
                    v = v[1] if isinstance(v, tuple) else v  # (name, record): 2+ records
                    return {f"member{i}": member.fix(v) if member.fix else v}
            raise ValueError(f"value {v!r} matches no branch of union {schema}")

        struct = pa.struct([(f"member{i}", m.type) for i, m in enumerate(members)])
        return _Avro(struct, _nullsafe(fix), lambda v: any(m.accepts(v) for m in members))


def _columns(schema) -> tuple[list[tuple[str, _Avro]], bool]:
    """The columns of a file schema, and whether it is a record (else one column ``value``)."""
    types = _AvroTypes()
    avro = types.node(schema)
    if isinstance(schema, dict) and schema.get("type") in ("record", "error"):
        return types.fields[schema["name"]], True
    return [("value", avro)], False


def _reader_schema(opts: AvroOptions):
    return parse_avro_schema(opts.avro_schema, "avroSchema") if opts.avro_schema else None


def _avro_error(path: str, e: Exception) -> CorruptFileError:
    return CorruptFileError(path, f"not a readable Avro file: {type(e).__name__}: {e}")


def avro_schema(path: str, opts: AvroOptions) -> pa.Schema:
    """The Arrow schema of an Avro file: the ``avroSchema`` option, else the writer schema in
    the file's header (only the header is read)."""
    reader_schema = _reader_schema(opts)
    if reader_schema is not None:
        schema = reader_schema
    else:
        import fastavro

        fs, inner = storage.filesystem(path)
        try:
            with fs.open_input_file(inner) as f:
                schema = fastavro.reader(f).writer_schema
        except FileNotFoundError:
            raise
        except Exception as e:  # fastavro raises many kinds on a bad header
            raise _avro_error(path, e) from e
    try:
        columns, _ = _columns(schema)
    except ValueError as e:
        raise _avro_error(path, e) from e
    return pa.schema([(name, avro.type) for name, avro in columns])


def _avro_chunks(path: str, reader_schema, size: int) -> Generator[list | tuple, None, None]:
    """First the file's columns, then its records in lists of ``size``; whatever fails while
    decoding (a bad header, block, codec or schema resolution) is a :class:`CorruptFileError`.

    fastavro is imported here, on the first Avro file: this module is on the import path of
    the streaming sources, which Spark loads in a fresh Python process for every stream."""
    import fastavro

    fs, inner = storage.filesystem(path)
    try:
        with fs.open_input_file(inner) as f:
            reader = fastavro.reader(
                f, reader_schema, return_record_name=True, return_record_name_override=True
            )
            yield _columns(reader.reader_schema or reader.writer_schema)
            rows: list = []
            for record in reader:
                rows.append(record)
                if len(rows) >= size:
                    yield rows
                    rows = []
            if rows:
                yield rows
    except FileNotFoundError:
        raise
    except CorruptFileError:
        raise
    except Exception as e:  # decoding errors come as ValueError, EOFError, zlib.error, ...
        raise _avro_error(path, e) from e


def read_avro(
    conf: Conformer, opts: AvroOptions, detect_new: bool, batch_rows: int
) -> Iterator[pa.Table]:
    chunks = _avro_chunks(conf.path, _reader_schema(opts), batch_rows)
    try:
        columns, is_record = next(chunks)
        conf.seen.update(dict.fromkeys(name for name, _ in columns))
        if detect_new:
            conf.check_new()
        if not conf.rescue:
            columns = [(name, avro) for name, avro in columns if name in conf.types]
        for rows in chunks:
            if not is_record:
                rows = [{"value": v} for v in rows]
            arrays: list[tuple[str, pa.Array | list]] = []
            for name, avro in columns:
                values = [row.get(name) for row in rows]
                if avro.fix is not None:
                    values = [avro.fix(v) for v in values]
                try:
                    arrays.append((name, pa.array(values, avro.type)))
                except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
                    arrays.append((name, values))  # the conformer's per-value path sorts it out
            yield conf.assemble(len(rows), arrays)
    finally:
        chunks.close()
