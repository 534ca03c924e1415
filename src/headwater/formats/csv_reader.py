"""CSV files to tables of the declared schema.

Every value is read as text by Arrow's C++ CSV reader and parsed into its column's type by
:func:`~headwater.formats.convert.convert`, so a misfit is rescued, never a parse failure.
With a header, columns are matched by name (a header name the schema lacks is rescued as
such); without, by position (``_c<i>`` beyond the schema). Fields beyond the header are named
``_c<index>``. A chunk goes per row (:mod:`headwater.formats.csv_records`) only where Arrow
would not read it exactly (see there).

Empty values follow Spark's CSV reader: an unquoted empty value is null, a quoted one
(``""``) is ``emptyValue``, and a value equal to ``nullValue`` is null. Both default to
``""``, so by default an empty value, quoted or not, is null in every column, strings too.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from headwater.formats.chunks import byte_chunks, drive
from headwater.formats.conform import Conformer, NeedsRecordText
from headwater.formats.csv_records import WHITESPACE, Dialect, Record
from headwater.formats.options import CsvOptions

__all__ = ["cell", "read_csv"]


def cell(record: Record, i: int, opts: CsvOptions) -> str | None:
    """Value ``i`` of a record as the reader takes it (None: null; see the module on empty
    values)."""
    return _cell(record.values, record.quoted, i, opts)


def _quotes_matter(opts: CsvOptions) -> bool:
    """Whether an empty value's quotes change what it reads as (``emptyValue`` is not
    ``nullValue``); when not, the per-row path need not track them."""
    return (opts.empty_value or "") != (opts.null_value or "")


def _cell(values: list[str], quoted: list[bool] | None, i: int, opts: CsvOptions) -> str | None:
    """``quoted`` may be None only where quotes do not matter (see :func:`_quotes_matter`)."""
    if i >= len(values):
        return None
    value = values[i]
    if value == "":
        if quoted is None or not quoted[i]:
            return None  # unquoted: nullValue, as univocity reads it
        value = opts.empty_value or ""
    return None if value == (opts.null_value or "") else value


class _CsvReader:
    """One file: its options, its header once read, and the two paths for its chunks."""

    def __init__(self, conf: Conformer, opts: CsvOptions) -> None:
        self.conf, self.opts = conf, opts
        self.dialect = Dialect.of(opts)
        self.sep = (opts.line_sep or "\n").encode()
        self.trims = opts.ignore_leading_white_space or opts.ignore_trailing_white_space
        self.names: list[str] = []
        q = opts.quote.encode()
        self.spaced_quotes = [b" " + q, b"\t" + q, q + b" ", q + b"\t"] if q else []
        self.comment = opts.comment and re.compile(
            rb"(?:^|(?<=[\r\n]))" + re.escape(opts.comment.encode()) + rb"[^\r\n]*(?:\r?\n|\r|\Z)"
        )
        self.parse = pacsv.ParseOptions(
            delimiter=opts.sep, quote_char=opts.quote or False,
            escape_char=opts.escape or False, newlines_in_values=opts.multiline,
        )  # fmt: skip

    # -- the header ----------------------------------------------------------------------

    def take_header(self, chunk: bytes, detect_new: bool) -> bytes | None:
        """Read the column names from the first record; the chunk without it (None: the
        chunk holds no record yet)."""
        first: Record | None = None
        for size in (1 << 16, len(chunk)):  # the header is near the start: decode only that
            text = chunk[:size].decode(errors="ignore" if size < len(chunk) else "strict")
            first = next(self.dialect.records(text), None)
            if size >= len(chunk) or (first is not None and first.end < len(text)):
                break
        if first is None:
            return None
        known = self.conf.data_names
        positional = [known[i] if i < len(known) else f"_c{i}" for i in range(len(first.values))]
        # A header ending in \r (a CRLF file read with lineSep \n) names the column without it
        header = [name.rstrip("\r") for name in first.values]
        self.names = header if self.opts.header else positional
        self.conf.seen.update(dict.fromkeys(self.names))
        if detect_new:
            self.conf.check_new()
        return chunk[len(text[: first.end].encode()) :] if self.opts.header else chunk

    # -- Arrow's path --------------------------------------------------------------------

    def _for_arrow(self, chunk: bytes) -> bytes | None:
        """The chunk as Arrow reads it exactly, or None when only the per-row path does."""
        if self.opts.multiline and (self.opts.comment or self.opts.line_sep):
            return None
        if self.trims and any(spaced in chunk for spaced in self.spaced_quotes):
            return None  # whitespace next to a quote: inside quotes it is kept
        line_sep = self.opts.line_sep
        if line_sep is not None:  # Arrow ends records at every \r, \n or \r\n, and only there
            breaks = chunk.count(b"\r") + chunk.count(b"\n")
            if line_sep == "\r\n":
                exact = breaks == 2 * chunk.count(b"\r\n")
            elif line_sep in ("\n", "\r"):
                exact = breaks == chunk.count(self.sep)
            else:
                exact = breaks == 0
            if not exact:
                return None
            if line_sep not in ("\n", "\r", "\r\n"):
                chunk = chunk.replace(self.sep, b"\n")
        if self.comment:
            chunk = self.comment.sub(b"", chunk)
        return chunk

    def _column(self, values: pa.Array) -> pa.Array:
        if self.trims:
            trimmed = values
            if self.opts.ignore_leading_white_space:
                trimmed = pc.utf8_ltrim(trimmed, characters=WHITESPACE)
            if self.opts.ignore_trailing_white_space:
                trimmed = pc.utf8_rtrim(trimmed, characters=WHITESPACE)
            # an unquoted value of whitespace only: empty, so null
            blank = pc.and_(pc.equal(trimmed, ""), pc.not_equal(values, ""))
            trimmed = pc.if_else(blank, None, trimmed)
            values = trimmed
        return self._empties(values)

    def _empties(self, values: pa.Array) -> pa.Array:
        """Quoted empty values (unquoted ones are null already) and ``nullValue``."""
        if self.opts.empty_value:
            values = pc.if_else(pc.equal(values, ""), self.opts.empty_value, values)
        null_value = self.opts.null_value if self.opts.null_value is not None else ""
        if null_value:
            values = pc.if_else(pc.equal(values, null_value), None, values)
        elif not self.opts.empty_value:
            values = pc.if_else(pc.equal(values, ""), None, values)  # "" is nullValue
        return values

    def fast(self, chunk: bytes) -> list[pa.Table] | None:
        data = self._for_arrow(chunk)
        if data is None:
            return None
        ragged: list = []

        def skip(row) -> str:
            ragged.append(row)
            return "skip"

        cols = [f"f{i}" for i in range(len(self.names))]
        self.parse.invalid_row_handler = skip
        convert = pacsv.ConvertOptions(
            column_types=dict.fromkeys(cols, pa.string()),
            strings_can_be_null=True,
            null_values=[""],
            quoted_strings_can_be_null=False,
        )
        try:
            table = pacsv.read_csv(
                io.BytesIO(data), pacsv.ReadOptions(column_names=cols, block_size=1 << 22),
                self.parse, convert,
            )  # fmt: skip
        except pa.ArrowException:
            return None
        if ragged:
            return None
        out = []
        try:
            for batch in table.to_batches():
                columns = [
                    (n, self._column(c)) for n, c in zip(self.names, batch.columns, strict=True)
                ]
                out.append(self.conf.assemble(batch.num_rows, columns))
        except NeedsRecordText:
            return None
        return out

    # -- the per-row path ----------------------------------------------------------------

    def slow(self, chunk: bytes, _first_line: int) -> pa.Table:
        rows = self.dialect.rows(chunk.decode(), quoted=_quotes_matter(self.opts))
        lengths = [len(values) for values in rows.values]
        flags: list[list[bool]] | list[None] = rows.quoted or [None] * len(rows.values)
        cols = []
        for i in range(max([len(self.names), *lengths])):  # beyond the header: "_c<index>"
            name = self.names[i] if i < len(self.names) else f"_c{i}"
            column = [_cell(v, q, i, self.opts) for v, q in zip(rows.values, flags, strict=True)]
            cols.append((name, pa.array(column, pa.string())))
        widths = np.array(lengths, np.int64) - len(self.names)
        return self.conf.assemble(len(lengths), cols, texts=rows.texts, widths=widths)


def read_csv(conf: Conformer, opts: CsvOptions, detect_new: bool) -> Iterator[pa.Table]:
    reader = _CsvReader(conf, opts)
    sep = (opts.line_sep or "\n").encode()
    for chunk in byte_chunks(conf.path, opts.encoding, whole=opts.multiline, sep=sep):
        rest = chunk if reader.names else reader.take_header(chunk, detect_new)
        if rest is not None and rest.strip():
            yield from drive([rest], reader.fast, reader.slow, not opts.multiline, sep)
