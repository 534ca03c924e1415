"""CSV text split into records, in Python: the per-row path, and the header.

Arrow's CSV reader is the fast path; this one is exact where Arrow cannot be: ragged rows, a
record separator Arrow does not know (``lineSep``), whitespace next to quotes with
``ignoreLeading/TrailingWhiteSpace`` (whitespace inside quotes is kept, as Spark keeps it),
comment lines inside multi-line files, and it keeps what Arrow drops: whether a value was
quoted (an unquoted empty value is null, a quoted one is ``emptyValue``) and each record's
text (for the corrupt-record column). Quotes, escapes and doubled quotes are read as Arrow
reads them, so a chunk gives the same values on either path.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from headwater.formats.options import CsvOptions

__all__ = ["Dialect", "Record", "WHITESPACE"]

WHITESPACE = "".join(chr(c) for c in range(0x21) if chr(c) not in "\r\n")  # univocity's


@dataclass(frozen=True)
class Record:
    values: list[str]
    quoted: list[bool]
    text: str  # as in the file, without its separator
    end: int  # offset just past its separator


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
