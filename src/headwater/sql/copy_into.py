"""COPY INTO: the statement read into the arguments of :func:`headwater.copyinto.copy_into`.

Grammar (as on Databricks)::

    COPY INTO target [BY POSITION | (col, ...)]
      FROM { 'path' | (SELECT expr, ... FROM 'path') }
      FILEFORMAT = format
      [VALIDATE [ALL | n ROWS]]
      [FILES = ('f1', ...) | PATTERN = 'glob']
      [FORMAT_OPTIONS ('k' = 'v', ...)]
      [COPY_OPTIONS ('k' = 'v', ...)]

sqlglot's COPY grammar is Snowflake's and misreads BY POSITION or a SELECT source, so the
statement is read token by token. Parsing is a pure function (:func:`parse_copy_into`) so
it can be checked without Spark; the load itself is ``copy_into``'s.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from sqlglot.tokens import TokenType

from headwater.sql.context import Context
from headwater.sql.cursor import Cursor
from headwater.sql.text import Statement, split

_CLAUSES = ("VALIDATE", "FILES", "PATTERN", "FORMAT_OPTIONS", "COPY_OPTIONS")
_FORMATS = {"binaryfile": "binaryFile"}


def parse_copy_into(stmt: str | Statement) -> dict[str, Any]:
    """The keyword arguments of ``copy_into`` (all but ``spark``) for one COPY INTO statement."""
    if isinstance(stmt, str):
        statements = split(stmt)
        if len(statements) != 1:
            raise ValueError(f"Expected one COPY INTO statement, got {len(statements)}.")
        stmt = statements[0]
    cur = Cursor(stmt)
    cur.expect("COPY", "INTO")
    out: dict[str, Any] = {
        "target": cur.table().display,
        "select": None,
        "columns": None,
        "by_position": False,
        "files": None,
        "pattern": None,
        "format_options": None,
        "copy_options": None,
        "validate": None,
    }
    if cur.accept("BY", "POSITION"):
        out["by_position"] = True
    elif cur.at_type(TokenType.L_PAREN):
        out["columns"] = _names(cur)
    cur.expect("FROM")
    if cur.accept_type(TokenType.L_PAREN):
        out["select"], out["source"] = _select(cur)
    else:
        out["source"] = cur.string("the source path as a quoted string")
    if cur.at("WITH"):
        raise cur.error("COPY INTO ... WITH (CREDENTIAL/ENCRYPTION) is not supported.")
    cur.expect("FILEFORMAT")
    cur.accept_type(TokenType.EQ)
    fmt = cur.value()
    out["file_format"] = _FORMATS.get(fmt.lower(), fmt.lower())
    seen: set[str] = set()
    while not cur.done:
        word = cur.word()
        if word not in _CLAUSES:
            raise cur.error(f"Expected one of {', '.join(_CLAUSES)}, found {cur.found()}.")
        if word in seen:
            raise cur.error(f"{word} is given twice.")
        seen.add(word)
        cur.next()
        if word == "VALIDATE":
            out["validate"] = _validate(cur)
        elif word in ("FILES", "PATTERN"):
            if {"FILES", "PATTERN"} <= seen:
                raise cur.error("Give FILES or PATTERN, not both.", cur.toks[cur.i - 1])
            cur.accept_type(TokenType.EQ)
            if word == "FILES":
                out["files"] = cur.strings()
            else:
                out["pattern"] = cur.string("a glob pattern as a quoted string")
        else:
            cur.accept_type(TokenType.EQ)
            out[word.lower()] = cur.options()
    return out


def _names(cur: Cursor) -> list[str]:
    cur.expect_type(TokenType.L_PAREN, "'('")
    names = [cur.table().display]
    while cur.accept_type(TokenType.COMMA):
        names.append(cur.table().display)
    cur.expect_type(TokenType.R_PAREN, "')'")
    return names


def _select(cur: Cursor) -> tuple[list[str], str]:
    """``SELECT expr, ... FROM 'path')`` (the ``(`` already taken): expressions verbatim."""
    cur.expect("SELECT")
    exprs: list[str] = []
    first = cur.i
    depth = 0
    while True:
        tok = cur.peek()
        if tok is None:
            raise cur.error("Expected FROM 'path') to end the SELECT.")
        t = tok.token_type
        at_end = depth == 0 and (t == TokenType.COMMA or cur.at("FROM"))
        if at_end:
            if cur.i == first:
                raise cur.error("Expected an expression.")
            exprs.append(cur.stmt.slice(cur.toks[first], cur.toks[cur.i - 1]))
            if t != TokenType.COMMA:
                break
            cur.next()
            first = cur.i
            continue
        if t == TokenType.L_PAREN:
            depth += 1
        elif t == TokenType.R_PAREN:
            depth -= 1
            if depth < 0:
                raise cur.error("Expected FROM 'path' in the SELECT.")
        cur.next()
    cur.expect("FROM")
    path = cur.string("the source path as a quoted string")
    if not cur.at_type(TokenType.R_PAREN):
        raise cur.error(
            "COPY INTO ... FROM (SELECT ... FROM 'path') takes a select list and a path only; "
            f"found {cur.found()}."
        )
    cur.next()
    return exprs, path


def _validate(cur: Cursor) -> str | int:
    if cur.accept("ALL"):
        return "ALL"
    if cur.at_type(TokenType.NUMBER):
        n = cur.integer("a row count")
        cur.expect("ROWS")
        return n
    return "ALL"


def copy_into(ctx: Context) -> DataFrame:
    kwargs = parse_copy_into(ctx.stmt)
    try:
        from headwater.copyinto import copy_into as run
    except ImportError as e:
        raise ctx.stmt.error(f"COPY INTO is not available: headwater.copyinto ({e}).") from e
    target = kwargs.pop("target")
    source = kwargs.pop("source")
    file_format = kwargs.pop("file_format")
    return run(ctx.spark, target, source, file_format, **kwargs)
