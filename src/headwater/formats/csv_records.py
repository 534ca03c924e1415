"""CSV text split into records, in Python: the per-row path, and the header.

Arrow's CSV reader is the fast path; this one is exact where Arrow cannot be: ragged rows, a
record separator Arrow does not know (``lineSep``), whitespace next to quotes with
``ignoreLeading/TrailingWhiteSpace`` (whitespace inside quotes is kept, as Spark keeps it),
comment lines inside multi-line files, and it keeps what Arrow drops: whether a value was
quoted (an unquoted empty value is null, a quoted one is ``emptyValue``) and each record's
text (for the corrupt-record column). Quotes, escapes and doubled quotes are read as Arrow
reads them, so a chunk gives the same values on either path. Where neither quotedness nor
trimming matters, a chunk's lines go through Python's C ``csv`` module instead (4x faster).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from headwater.formats.options import CsvOptions

__all__ = ["Dialect", "Record", "Rows", "WHITESPACE"]

WHITESPACE = "".join(chr(c) for c in range(0x21) if chr(c) not in "\r\n")  # univocity's
_LINE_BREAKS = re.compile(r"\r\n|\n|\r")


@dataclass(frozen=True)
class Record:
    values: list[str]
    quoted: list[bool]
    text: str  # as in the file, without its separator
    end: int  # offset just past its separator


class Rows(NamedTuple):
    """A chunk's records, column-ready: values, whether each was quoted (None: not asked
    for), and each record's text."""

    values: list[list[str]]
    quoted: list[list[bool]] | None
    texts: list[str]


@dataclass(frozen=True)
class Dialect:
    sep: str = ","
    quote: str = '"'  # "" : no quoting
    escape: str = "\\"  # "" : no escaping
    line_sep: str | None = None  # None: \r\n, \n or \r
    multiline: bool = False  # quoted values may span records' separators
    comment: str | None = None
    trim_leading: bool = False
    trim_trailing: bool = False

    @classmethod
    def of(cls, opts: CsvOptions) -> Dialect:
        return cls(
            opts.sep, opts.quote, opts.escape, opts.line_sep, opts.multiline, opts.comment or None,
            opts.ignore_leading_white_space, opts.ignore_trailing_white_space,
        )  # fmt: skip

    @cached_property
    def _field(self) -> re.Pattern:
        sep = re.escape(self.sep)
        end = re.escape(self.line_sep) if self.line_sep else r"\r\n|\n|\r"
        stop = f"(?:{sep}|{end})"
        esc = f"{re.escape(self.escape)}." if self.escape else None
        plain = f"(?:{esc}|(?!{stop}).)*" if esc else f"(?:(?!{stop}).)*"
        alternatives = [f"(?P<u>{plain})"]
        if self.quote:
            q = re.escape(self.quote)
            inner = [esc, f"{q}{q}", f"[^{q}{re.escape(self.escape)}]"]
            lead = "[ \\t]*" if self.trim_leading else ""
            body = "|".join(part for part in inner if part)
            quoted = f"{lead}{q}(?P<q>(?:{body})*){q}(?P<tail>(?:(?!{stop}).)*)"
            alternatives.insert(0, quoted)
        return re.compile(f"(?:{'|'.join(alternatives)})(?P<end>{sep}|{end}|\\Z)", re.DOTALL)

    @cached_property
    def _unescape(self) -> re.Pattern | None:
        parts = [f"{re.escape(self.escape)}(.)"] if self.escape else []
        parts += [f"({re.escape(self.quote * 2)})"] if self.quote else []
        return re.compile("|".join(parts), re.DOTALL) if parts else None

    def _plain(self, text: str) -> str:
        if self.escape and self.escape in text:
            text = re.sub(f"{re.escape(self.escape)}(.)", r"\1", text, flags=re.DOTALL)
        if self.trim_leading:
            text = text.lstrip(WHITESPACE)
        return text.rstrip(WHITESPACE) if self.trim_trailing else text

    def _quoted(self, body: str, tail: str) -> str:
        if self._unescape is not None:
            body = self._unescape.sub(lambda m: m.group(1) or self.quote, body)
        tail = self._plain(tail) if tail else tail
        return body + tail

    def rows(self, text: str, quoted: bool) -> Rows:
        """Every record of ``text`` (``quoted``: with whether each value was quoted)."""
        if not (self.multiline or self.trim_leading or self.trim_trailing):
            found = self._module_rows(text, quoted)
            if found is not None:
                return found
        records = list(self.records(text))
        flags = [r.quoted for r in records] if quoted else None
        return Rows([r.values for r in records], flags, [r.text for r in records])

    def _module_rows(self, text: str, quoted: bool) -> Rows | None:
        """The C ``csv`` module on the lines; None if a quote runs over a line end (records
        never do here: the exact path splits first). Only an empty value's quotes matter, and
        only a line holding two quotes in a row can have a quoted empty value: such lines
        are read again by the exact path."""
        if self.line_sep and _LINE_BREAKS.search(text.replace(self.line_sep, "")):
            return None  # a line break inside a record: the csv module would end it there
        lines = text.split(self.line_sep) if self.line_sep else _LINE_BREAKS.split(text)
        lines = [ln for ln in lines if ln and not (self.comment and ln.startswith(self.comment))]
        dialect = {
            "delimiter": self.sep, "quotechar": self.quote or None,
            "escapechar": self.escape or None,
            "quoting": csv.QUOTE_MINIMAL if self.quote else csv.QUOTE_NONE,
        }  # fmt: skip
        try:
            values = list(csv.reader(lines, **dialect))  # type: ignore[arg-type]
        except csv.Error:
            return None
        if len(values) != len(lines):
            return None
        if not quoted:
            return Rows(values, None, lines)
        flags: list[list[bool]] = []
        for k, line in enumerate(lines):
            if self.quote * 2 in line:
                record, _ = self._record(line, 0)
                values[k], flag = (record.values, record.quoted) if record else (values[k], [])
                flags.append(flag)
            else:
                flags.append([False] * len(values[k]))
        return Rows(values, flags, lines)

    def records(self, text: str) -> Iterator[Record]:
        """Every record of ``text``; empty lines and comment lines skipped."""
        if not self.multiline:  # a quote never spans records: split first, exactly
            yield from self._lines(text)
            return
        pos, size = 0, len(text)
        while pos < size:
            record, pos = self._record(text, pos)
            if record is not None:
                yield record

    def _lines(self, text: str) -> Iterator[Record]:
        splitter = re.escape(self.line_sep) if self.line_sep else r"\r\n|\n|\r"
        start = 0
        for m in re.finditer(f"(?:{splitter})|\\Z", text):
            if m.start() == start == len(text):
                break
            line = text[start : m.start()]
            record, _ = self._record(line, 0)
            if record is not None:
                yield Record(record.values, record.quoted, line, m.end())
            start = m.end()
            if m.end() == len(text):
                break

    def _record(self, text: str, pos: int) -> tuple[Record | None, int]:
        start, values, quoted = pos, [], []
        while True:
            m = self._field.match(text, pos)
            assert m is not None  # an unquoted value may be empty: a field always matches
            if m.group("q") is not None:
                values.append(self._quoted(m.group("q"), m.group("tail")))
                quoted.append(True)
            else:
                values.append(self._plain(m.group("u")))
                quoted.append(False)
            pos, end = m.end(), m.group("end")
            if end != self.sep or not end:
                break
        raw = text[start : pos - len(end)]
        if not raw or (self.comment and raw.startswith(self.comment)):
            return None, pos
        return Record(values, quoted, raw, pos), pos
