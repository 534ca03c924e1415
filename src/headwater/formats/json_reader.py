"""JSON Lines (and multi-line JSON documents) to tables of the declared schema.

Arrow's C++ JSON reader takes each chunk; it learns per column which type to ask Arrow for
(``plan``) from Arrow's complaints, so a column whose values drift goes on being read by Arrow
and sorted out by :func:`~headwater.formats.convert.convert`, vectorised. Only what Arrow
cannot take goes per row (:func:`python_rows`): malformed lines, fields whose JSON type
changes between rows within a chunk, integers beyond 64 bits, objects wanted as their exact
text, and a chunk with a malformed record whose text the corrupt-record column needs.

Options: ``multiLine`` (one document or an array of records per file), ``encoding``,
``lineSep`` (records end there; line breaks inside a record are whitespace, as in Spark),
``allowComments`` (``//`` and ``/* */`` outside strings), patterns, ``mode`` and the
corrupt-record column (see :mod:`headwater.formats.conform`).
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson
import pyarrow.types as pt

from headwater.formats.chunks import byte_chunks, drive
from headwater.formats.conform import Conformer, NeedsRecordText
from headwater.formats.convert import NESTED, ValueRules
from headwater.formats.errors import CorruptFileError
from headwater.formats.jsontext import dumps
from headwater.formats.options import JsonOptions

__all__ = [
    "arrow_plan",
    "arrow_tables",
    "as_json_lines",
    "python_rows",
    "read_json",
    "strip_comments",
]

_COMMENTS = re.compile(rb'("(?:[^"\\\n]|\\.)*")|//[^\n]*|/\*.*?\*/')
_COMMENTS_MULTILINE = re.compile(rb'("(?:[^"\\]|\\.)*")|//[^\n]*|/\*.*?\*/', re.DOTALL)
_BLANK_LINE_BREAKS = bytes.maketrans(b"\r\n", b"  ")


def as_json_lines(chunk: bytes, sep: bytes) -> bytes:
    """Records separated by ``sep`` as JSON Lines: a line break inside a record is
    whitespace (Spark's reader splits at ``sep`` only)."""
    return chunk.replace(sep, b"\x00").translate(_BLANK_LINE_BREAKS).replace(b"\x00", b"\n")


def strip_comments(chunk: bytes, multiline: bool) -> bytes:
    if b"//" not in chunk and b"/*" not in chunk:
        return chunk
    return (_COMMENTS_MULTILINE if multiline else _COMMENTS).sub(rb"\1", chunk)


def _wire(t: pa.DataType, rules: ValueRules) -> pa.DataType | None:
    """The type to ask Arrow's JSON reader for (None: let it infer). Dates, zone-less
    timestamps and timestamps with a pattern come as strings, parsed by ``convert``."""
    if pt.is_struct(t):
        fields = [(f.name, _wire(f.type, rules)) for f in t]
        return None if any(w is None for _, w in fields) else pa.struct(fields)
    if pt.is_list(t):
        inner = _wire(t.value_type, rules)
        return None if inner is None else pa.list_(t.value_field.with_type(inner))
    if pt.is_date(t) or (pt.is_timestamp(t) and (t.tz is None or rules.timestamp)):
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
        return any(test(actual) for test in NESTED)
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


def arrow_plan(conf: Conformer) -> dict:
    """The first plan of :func:`arrow_tables` for the columns of ``conf``."""
    return {f.name: _wire(f.type, conf.rules) for f in conf.fields}


def arrow_tables(chunk: bytes, plan: dict, conf: Conformer) -> list[pa.Table] | None:
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
            # and convert() sort the values out, vectorised. Anything else goes per row.
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
            try:
                return conf.assemble_all(table)
            except NeedsRecordText:
                return None
    return None


def _rows(objs: list, raws: list[str], lines: list[int], conf: Conformer) -> pa.Table:
    """The per-row path: parsed objects (None when malformed) to a table."""
    rows, corrupt, texts, numbers = [], {}, [], []
    for obj, raw, line in zip(objs, raws, lines, strict=True):
        if isinstance(obj, list) and obj and all(isinstance(o, dict) for o in obj):
            rows.extend(obj)  # a line holding an array of records, read as Spark does
            texts.extend([raw] * len(obj))
            numbers.extend([line] * len(obj))
            continue
        if isinstance(obj, dict):
            rows.append(obj)
        elif not conf.keeps_unparseable:
            raise CorruptFileError(conf.path, f"line {line}: malformed JSON record")
        else:
            corrupt[len(rows)] = raw
            rows.append({})
        texts.append(raw)
        numbers.append(line)
    names = dict.fromkeys(key for row in rows for key in row)
    cols = [(k, [row.get(k) for row in rows]) for k in names]
    return conf.assemble(len(rows), cols, corrupt, texts, lines=numbers)


def python_rows(piece: bytes, first_line: int, conf: Conformer) -> pa.Table:
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
    return _rows(objs, raws, lines, conf)


def read_json(conf: Conformer, opts: JsonOptions, batch_rows: int) -> Iterator[pa.Table]:
    sep = (opts.line_sep or "\n").encode()
    if not opts.multiline:
        plan = arrow_plan(conf)
        chunks = byte_chunks(conf.path, opts.encoding, sep=sep)
        if sep != b"\n":
            chunks = (as_json_lines(chunk, sep) for chunk in chunks)
        if opts.allow_comments:
            chunks = (strip_comments(chunk, False) for chunk in chunks)
        yield from drive(
            chunks,
            lambda chunk: arrow_tables(chunk, plan, conf),
            lambda piece, line: python_rows(piece, line, conf),
        )
        return
    data = b"".join(byte_chunks(conf.path, opts.encoding, whole=True))
    text = (strip_comments(data, True) if opts.allow_comments else data).decode()
    if not text.strip():
        return
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    objs = doc if isinstance(doc, list) else [doc]
    raws = [text] if doc is None else [dumps(o) for o in objs]
    for start in range(0, len(objs), batch_rows):
        end = start + batch_rows
        yield _rows(objs[start:end], raws[start:end], [1] * len(objs[start:end]), conf)
