"""Placing a file's named columns into the declared schema, and keeping what does not fit.

Rules: columns are matched by exact name (a case-only match is rescued, not placed); a value
that does not fit its type (lossy casts included) leaves the column null and is rescued; a
misfit anywhere inside a struct, array or map rescues the whole top-level value, so a column
never holds half a record; nulls (and empty CSV values) are never rescued. The rescue value is
a compact JSON object ``{"<field as in the file>": <original value>, ..., "_file_path": path}``,
or ``{"_corrupt_record": "<line>", "_file_path": path}`` for a record that cannot be parsed.

Malformed records and ``mode`` (JSON, CSV; for Parquet, Avro and ORC only misfits count):
with a rescue column a record is malformed when it cannot be parsed at all, or is a CSV row
with fewer values than the header (misfits and a row's extra values are rescued, as in Auto
Loader); without one, also when a value does not fit or a CSV row has too many values (as
in Spark).
``PERMISSIVE`` keeps a malformed record (what fits is placed, the rest null) and puts its
text in the string column named by ``columnNameOfCorruptRecord`` (default
``_corrupt_record``) when the schema has one; ``DROPMALFORMED`` drops it; ``FAILFAST`` raises
:class:`~headwater.formats.errors.MalformedRecordError`. With ``mode`` not set the reader is
permissive, except that a record that cannot be parsed, with neither a rescue nor a
corrupt-record column to keep it, fails the file: a row of nulls would lose it silently.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.types as pt
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import ArrayType, DataType, MapType, StringType, StructField, StructType

from headwater.formats.convert import convert, from_python, valid, value_rules
from headwater.formats.errors import MalformedRecordError, NewColumnsFound
from headwater.formats.jsontext import clean, dumps
from headwater.formats.options import FormatOptions

__all__ = ["Conformer", "NeedsRecordText"]

_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"))  # JSON's
_SHOWN = 200  # characters of a malformed record quoted in an error


class NeedsRecordText(Exception):
    """A malformed row needs its record's text (for the corrupt-record column), which Arrow's
    path does not keep: the reader reads that chunk again row by row."""


def _nullable(dt: DataType) -> DataType:
    if isinstance(dt, StructType):
        return StructType([StructField(f.name, _nullable(f.dataType), True) for f in dt.fields])
    if isinstance(dt, ArrayType):
        return ArrayType(_nullable(dt.elementType), True)
    if isinstance(dt, MapType):
        return MapType(_nullable(dt.keyType), _nullable(dt.valueType), True)
    return dt


class Conformer:
    """Places named source columns (Arrow arrays, or Python lists from the per-row path) into
    the target schema, gathers what does not fit into the rescue column, and applies
    ``mode`` to malformed records. One per file."""

    def __init__(
        self, path: str, schema: StructType, rescue: str | None, options: FormatOptions
    ) -> None:
        fields = [StructField(f.name, _nullable(f.dataType), True) for f in schema.fields]
        if rescue:
            fields.append(StructField(rescue, StringType(), True))
        self.schema = to_arrow_schema(StructType(fields), timezone="UTC")
        self.path, self.rescue, self.fmt = path, rescue, options.format
        self.rules = value_rules(options)
        self.mode = options.mode
        self.fields = list(self.schema)[: len(schema.fields)]
        self.types = {f.name: f.type for f in self.fields}
        corrupt = getattr(options, "corrupt_column", None)
        self.corrupt = corrupt if pt.is_string(self.types.get(corrupt, pa.null())) else None
        self.seen: dict[str, None] = {}  # top-level source names, in order of appearance
        # Misfits make a record malformed only without a rescue column; track them only then,
        # and only when mode or the corrupt-record column acts on them.
        watching = self.mode in ("dropmalformed", "failfast") or self.corrupt is not None
        self.watch_misfits = rescue is None and watching

    @property
    def data_names(self) -> list[str]:
        """The columns values are read into (the corrupt-record column is filled, not read)."""
        return [f.name for f in self.fields if f.name != self.corrupt]

    @property
    def keeps_unparseable(self) -> bool:
        """Whether a record that cannot be parsed has somewhere to go (see the module)."""
        return self.rescue is not None or self.corrupt is not None or self.mode is not None

    def check_new(self) -> None:
        known = {name.lower() for name in self.types}  # a case-only clash is not a new column
        new = [name for name in self.seen if name.lower() not in known]
        if new:
            raise NewColumnsFound(self.path, new)

    def assemble(
        self,
        n: int,
        cols: Iterable[tuple[str, pa.Array | list]],
        corrupt: dict[int, str] | None = None,
        texts: list[str] | None = None,
        widths: np.ndarray | None = None,
        lines: list[int] | None = None,
    ) -> pa.Table:
        """A table of the target schema from source columns. ``corrupt``: {row: raw text} of
        records that could not be parsed; ``texts``: every row's record text, when known;
        ``widths``: CSV rows' number of values less the header's (0: as many); ``lines``:
        each row's line in the file, when known (errors)."""
        out: dict[str, pa.Array] = {}
        parts = []
        misfits = np.zeros(n, bool) if self.watch_misfits else None
        first_misfit: tuple[str, object] | None = None
        if corrupt and self.rescue:
            parts.append(self._part("_corrupt_record", list(corrupt.values()), list(corrupt)))
        for name, src in cols:
            self.seen.setdefault(name)
            target = self.types.get(name) if name != self.corrupt else None  # exact names only
            rows: np.ndarray | None = None  # the rows to rescue; None: every non-null value
            if target is not None and name not in out:
                convert_fn = from_python if isinstance(src, list) else convert
                out[name], bad = convert_fn(src, target, self.rules)
                if not bad.any():
                    continue
                rows = np.flatnonzero(bad)
                if misfits is not None:
                    misfits |= bad
                    value = src[int(rows[0])]
                    first_misfit = first_misfit or (
                        name,
                        value if isinstance(src, list) else value.as_py(),
                    )
            if not self.rescue:
                continue
            if isinstance(src, list):
                if rows is None:
                    rows = np.array([i for i, v in enumerate(src) if v is not None], np.int64)
                parts.append(self._part(name, [src[i] for i in rows], rows))
            else:
                rows = np.flatnonzero(valid(src)) if rows is None else rows
                parts.append(self._part(name, src.take(pa.array(rows, pa.int64())), rows))
        arrays = [out[f.name] if f.name in out else pa.nulls(n, f.type) for f in self.fields]
        if self.rescue:
            arrays.append(self._rescue_json(n, parts))
        table = pa.Table.from_arrays(arrays, schema=self.schema)
        malformed = np.zeros(n, bool) if misfits is None else misfits
        if corrupt:
            malformed[list(corrupt)] = True
        if widths is not None:
            malformed |= (widths < 0) | ((widths > 0) & (self.rescue is None))
        if not malformed.any():
            return table
        if self.mode == "failfast":
            raise MalformedRecordError(
                self.path, self._first(malformed, texts, lines, first_misfit)
            )
        return self._malformed(table, malformed, texts)

    def _first(self, malformed: np.ndarray, texts, lines, first_misfit) -> str:
        """The first malformed record, as FAILFAST names it."""
        row = int(np.flatnonzero(malformed)[0])
        if texts is not None:
            text = texts[row] if len(texts[row]) <= _SHOWN else texts[row][:_SHOWN] + "..."
            return (f"line {lines[row]}: " if lines else "") + f"record {text!r}"
        if first_misfit is not None:
            name, value = first_misfit
            return f"value {value!r} does not fit column '{name}' ({self.types[name]})"
        return "a row with too few or too many values"

    def _malformed(self, table: pa.Table, malformed: np.ndarray, texts) -> pa.Table:
        """DROPMALFORMED drops the rows; otherwise they stay, their text in the corrupt-record
        column when there is one."""
        if self.mode == "dropmalformed":
            return table.filter(pa.array(~malformed))
        if self.corrupt is None:
            return table
        if texts is None:
            raise NeedsRecordText()
        column = pc.if_else(pa.array(malformed), pa.array(texts, pa.string()), None)
        return table.set_column(table.schema.get_field_index(self.corrupt), self.corrupt, column)

    def _part(self, name: str, values: pa.Array | list, rows) -> tuple[pa.Array, np.ndarray]:
        """``"name":<value as JSON>`` for the given rows. Strings, integers and booleans (the
        bulk when a column drifts to another type) are written by Arrow's string kernels, the
        rest by Python. An empty CSV value is null, and nulls are never rescued."""
        rows, key = np.asarray(rows, np.int64), dumps(name) + ":"
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
        return pa.array([key + dumps(clean(v)) for v in values], pa.string()), rows

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
        tail = ',"_file_path":' + dumps(self.path) + "}"
        return pc.binary_join_element_wise("{", pc.binary_join(lists, ","), tail, "")

    def assemble_all(self, table: pa.Table | pa.RecordBatch) -> list[pa.Table]:
        batches = table.to_batches() if isinstance(table, pa.Table) else [table]
        return [
            self.assemble(b.num_rows, zip(b.schema.names, b.columns, strict=True)) for b in batches
        ]
