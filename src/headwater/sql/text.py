"""SQL text -> statements, with positions, using sqlglot's tokenizer (Databricks dialect).

Why a tokenizer and not ``text.split(";")``: a ``;`` inside a string, a backquoted name or
a comment must not end a statement, and every error must point at the line and column of
the text the user wrote. Tokens keep their offsets into the whole text, so a statement's
tokens can be handed to sqlglot's parser as they are and its errors land on the right line.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from sqlglot import ErrorLevel, exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from headwater.errors import HeadwaterError

DIALECT = "databricks"
_dialect = Dialect.get_or_raise(DIALECT)
_MAX_SHOWN_LINES = 12


class SqlError(HeadwaterError):
    """A statement failed: says which one (number and text) and where (line, column)."""

    def __init__(
        self,
        reason: str,
        statement: int | None = None,
        text: str | None = None,
        line: int | None = None,
        column: int | None = None,
        first_line: int = 1,
        first_column: int = 1,
    ) -> None:
        self.reason = reason
        self.statement = statement
        self.text = text
        self.line = line
        self.column = column
        self.first_line = first_line
        self.first_column = first_column  # where ``text`` starts on its first line
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.statement is not None:
            where.append(f"statement {self.statement}")
        if self.line is not None:
            where.append(f"line {self.line}, column {self.column}")
        head = f"[{', '.join(where)}] {self.reason}" if where else self.reason
        if not self.text:
            return head
        lines = self.text.splitlines() or [""]
        shown = []
        for n, line in enumerate(lines[:_MAX_SHOWN_LINES], start=self.first_line):
            shown.append(f"  {n:>4} | {line}")
            if n == self.line and self.column is not None:
                indent = self.column - (self.first_column if n == self.first_line else 1)
                shown.append("       | " + " " * max(indent, 0) + "^")
        if len(lines) > _MAX_SHOWN_LINES:
            shown.append("       | ...")
        return head + "\n" + "\n".join(shown)


def line_col(source: str, offset: int) -> tuple[int, int]:
    """1-based line and column of ``offset`` in ``source``."""
    offset = max(0, min(offset, len(source)))
    line = source.count("\n", 0, offset) + 1
    return line, offset - (source.rfind("\n", 0, offset) + 1) + 1


@dataclass
class Statement:
    """One statement of a script: its number, text and tokens (offsets into ``source``)."""

    index: int
    source: str
    start: int
    end: int  # inclusive
    tokens: list[Token] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.source[self.start : self.end + 1]

    def slice(self, first: Token, last: Token) -> str:
        """The user's text from ``first`` to ``last`` (inclusive), verbatim."""
        return self.source[first.start : last.end + 1]

    def error(self, reason: str, offset: int | None = None) -> SqlError:
        line, col = line_col(self.source, self.start if offset is None else offset)
        first_line, first_col = line_col(self.source, self.start)
        return SqlError(reason, self.index, self.text, line, col, first_line, first_col)

    def error_at(self, reason: str, token: Token | None) -> SqlError:
        return self.error(reason, None if token is None else token.start)


def tokenize(text: str) -> list[Token]:
    """sqlglot's tokens, with Spark's ``window(ts, '1 hour')`` function told apart from the
    ``WINDOW w AS (...)`` clause (sqlglot takes ``GROUP BY window(...)`` for the clause and
    fails): a ``WINDOW`` right before ``(`` is a name."""
    tokens = _dialect.tokenize(text)
    for tok, after in zip(tokens, tokens[1:], strict=False):
        if tok.token_type == TokenType.WINDOW and after.token_type == TokenType.L_PAREN:
            tok.token_type = TokenType.VAR
    return tokens


def split(source: str, breaks: Sequence[int] = ()) -> list[Statement]:
    """The statements of ``source`` (empty ones skipped), numbered from 1. ``breaks`` are
    offsets (ascending) that end a statement as a ``;`` does: a notebook's cell boundaries."""
    try:
        tokens = tokenize(source)
    except TokenError as e:
        raise _token_error(source, e) from e
    statements: list[Statement] = []
    current: list[Token] = []

    def flush() -> None:
        if current:
            st = Statement(len(statements) + 1, source, current[0].start, current[-1].end)
            st.tokens = _expand_command(source, list(current))
            statements.append(st)
            current.clear()

    pending = iter(breaks)
    next_break = next(pending, None)
    for tok in tokens:
        while next_break is not None and next_break <= tok.start:
            flush()
            next_break = next(pending, None)
        while next_break is not None and next_break < tok.end:  # inside a string
            next_break = next(pending, None)
        if tok.token_type == TokenType.SEMICOLON:
            flush()
        else:
            current.append(tok)
    flush()
    return statements


def is_complete(source: str) -> bool:
    """True when ``source`` ends with a ``;`` outside strings and comments (for the shell)."""
    try:
        tokens = tokenize(source)
    except TokenError:
        return False
    return bool(tokens) and tokens[-1].token_type == TokenType.SEMICOLON


def _expand_command(source: str, tokens: list[Token]) -> list[Token]:
    """sqlglot swallows the rest of OPTIMIZE/VACUUM/SHOW... into one string token; tokenize
    that text again (offsets kept absolute) so those statements can be read token by token."""
    if len(tokens) != 2 or tokens[0].token_type != TokenType.COMMAND:
        return tokens
    base = tokens[0].end + 1
    try:
        rest = tokenize(source[base : tokens[1].end + 1])
    except TokenError:
        return tokens
    shifted = [
        Token(t.token_type, t.text, t.line, t.col, t.start + base, t.end + base, t.comments)
        for t in rest
    ]
    return [tokens[0], *shifted]


def _token_error(source: str, e: TokenError) -> SqlError:
    """An unterminated string/comment/name: find its statement and where it starts."""
    cause = str(e.__cause__ or e)
    m = re.search(r"from (\d+):(\d+)", cause)
    offset = int(m.group(2)) if m else (e.start or 0)
    try:
        before = tokenize(source[:offset])
    except TokenError:
        before = []
    index = 1 + sum(1 for t in before if t.token_type == TokenType.SEMICOLON)
    semis = [t for t in before if t.token_type == TokenType.SEMICOLON]
    start = semis[-1].end + 1 if semis else 0
    while start < len(source) and source[start].isspace():
        start += 1
    st = Statement(index, source, start, len(source) - 1)
    return st.error(f"Unterminated string, name or comment: {cause}", offset)


@contextmanager
def _quiet_sqlglot() -> Iterator[None]:
    """sqlglot logs a warning when it falls back to a generic command; we handle those."""
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def parse(stmt: Statement, tokens: list[Token] | None = None) -> exp.Expr:
    """The sqlglot tree of a statement; a syntax error becomes a :class:`SqlError` at its
    line and column."""
    parser = _dialect.parser(error_level=ErrorLevel.RAISE)
    try:
        with _quiet_sqlglot():
            trees = [t for t in parser.parse(tokens or stmt.tokens, stmt.source) if t is not None]
    except ParseError as e:
        raise parse_error(stmt, e) from e
    if len(trees) != 1:
        raise stmt.error("Expected one statement here.")
    return trees[0]


def parse_error(stmt: Statement, e: ParseError) -> SqlError:
    info = e.errors[0] if e.errors else {}
    line, col = info.get("line"), info.get("col")
    highlight = info.get("highlight") or ""
    if line is None or col is None:
        return stmt.error(f"Syntax error: {e}")
    if "\n" not in highlight:
        col = max(1, col - len(highlight) + 1)  # sqlglot reports the token's last column
    offset = offset_at(stmt.source, line, col)
    description = info.get("description") or "Syntax error"
    description = re.sub(r"<class '(?:[\w.]+\.)?(\w+)'>", r"\1", description)
    near = f" near '{highlight}'" if highlight else ""
    return stmt.error(f"Syntax error{near}: {description}.", offset)


def offset_at(source: str, line: int, col: int) -> int:
    pos = 0
    for _ in range(line - 1):
        nxt = source.find("\n", pos)
        if nxt < 0:
            break
        pos = nxt + 1
    return pos + col - 1
