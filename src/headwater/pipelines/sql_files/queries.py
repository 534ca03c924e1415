"""The queries of pipeline SQL: what they read, and their text rewritten for Spark.

A pipeline query reads datasets by name (``x``, ``LIVE.x``, ``STREAM(x)``, ``STREAM x``) and
files through ``read_files`` / ``cloud_files``. None of that means anything to Spark as
written: the runner answers each read itself (a temporary view of a stand-in or of the
real rows) and runs the query rewritten to read those views. This module finds the reads
and rewrites the text; it never touches Spark, so a graph can be analysed without a session.

The query is parsed once, with sqlglot's Databricks dialect, from the tokens of the file
itself: every error points at the line and column the user wrote, not at an offset in some
extracted piece of text. The :class:`DefinitionCursor` that reads the statement heads around queries
(:mod:`.definitions`) lives here too, for the same reason: it hands sqlglot the file's
own tokens. It is SQL's one token cursor (:mod:`headwater.sql.cursor`) raising definition
errors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from headwater.errors import PipelineDefinitionError
from headwater.pipelines.define.elements import canonical_name
from headwater.sql.cursor import STRINGS, Cursor, key_of
from headwater.sql.kafka_arguments import (
    DEBEZIUM,
    FUNCTION,
    KafkaArgumentError,
    KafkaSource,
    arguments_of,
    kafka_source,
    literal_text,
)
from headwater.sql.text import SqlError, Statement, line_col, offset_at, parse, tokenize

PARSE_ERROR = "PIPELINE_SQL_PARSE_ERROR"
FILE_FUNCTIONS = ("read_files", "cloud_files")
OUTPUT_DIALECT = "spark"
NAME_WORD = re.compile(r"[A-Z0-9_]+$")


class FileSourceError(ValueError):
    """A ``read_files`` / ``cloud_files`` call we cannot read; ``offset`` is where."""

    def __init__(self, function: str, message: str) -> None:
        super().__init__(f"{function}: {message}")
        self.offset = 0


@dataclass(frozen=True)
class Reference:
    """A dataset read by name. ``name`` is as written minus ``LIVE.`` (``live`` says the
    prefix was there: the name must then be a dataset of the pipeline); ``streaming`` when
    the read is wrapped in ``STREAM``."""

    name: str
    streaming: bool = False
    live: bool = False


@dataclass(frozen=True)
class FileSource:
    """A ``read_files(path, format => 'json', k => 'v')`` or ``cloud_files(path, 'json',
    map('k', 'v'))`` read. ``options`` are (name, value) pairs as the user wrote them
    (numbers and booleans as their text), ``format`` pulled out of them; ``streaming`` when
    under ``STREAM`` (Auto Loader), else a batch read. ``cloud_files`` always streams: it
    is Auto Loader's older name, written without ``STREAM`` in a streaming live table.
    Hashable: it keys ``render``."""

    function: str
    path: str
    format: str | None = None
    options: tuple[tuple[str, str], ...] = ()
    streaming: bool = False


@dataclass(frozen=True, eq=False)
class SqlQuery:
    """A parsed pipeline query: the sqlglot tree, the text as written, and its reads in the
    order they are written (deduplicated)."""

    tree: exp.Expr
    text: str
    references: tuple[Reference, ...] = ()
    file_sources: tuple[FileSource | KafkaSource, ...] = ()

    def render(
        self, names: Mapping[Reference | FileSource | KafkaSource, str], database: str | None = None
    ) -> str:
        """Spark SQL of the query with each read in ``names`` replaced by the plain table
        identifier given (the runner's temporary views) and every ``STREAM`` wrapper
        removed: streaming is decided by the view, not by the text. A dataset read keeps
        the names the query may qualify its columns with: without an alias of its own, the
        view is aliased as the dataset's name, and ``LIVE.x.col`` / ``db.x.col`` become
        ``x.col`` (``db`` as written, or the pipeline's ``database``). Reads missing from ``names`` stay as written, minus ``LIVE.``. The
        stored tree is not changed."""
        by_key = {reference_key(k): v for k, v in names.items() if isinstance(k, Reference)}
        tree = self.tree.copy()
        ctes = cte_names(tree)
        planned: list[tuple[exp.Table, str | None, bool]] = []
        for table in list(tree.find_all(exp.Table)):
            read = read_of(table, ctes)
            if isinstance(read, Reference):
                planned.append((table, by_key.get(reference_key(read)), True))
            elif isinstance(read, (FileSource, KafkaSource)):
                planned.append((table, names.get(read), False))
        for stream in list(tree.find_all(exp.Stream)):
            unwrap_stream(stream)  # first: the alias of STREAM(x) a moves onto the table
        qualifiers: dict[str, set[tuple[str, ...]]] = {}
        for table, replacement, dataset in planned:
            if replacement is None:
                strip_live(table)
                continue
            if dataset and table.args.get("alias") is None:
                name, prefix = keep_qualifier(table)
                prefixes = {prefix, ("live",)} | ({(database.lower(),)} if database else set())
                qualifiers.setdefault(name, set()).update(prefixes)
            table.set("catalog", None)
            table.set("db", None)
            table.set("this", exp.to_identifier(replacement))
        requalify(tree, qualifiers)
        return tree.sql(dialect=OUTPUT_DIALECT)


def parse_query(text: str, file: str, line: int = 1) -> SqlQuery:
    """A query given as text (``spark.sql`` inside a definition); ``line`` is where the
    text starts in ``file``, so errors point into the file."""
    source = "\n" * (max(line, 1) - 1) + text
    try:
        tokens = tokenize(source)
    except TokenError as e:  # an unterminated string, name or comment
        offset = len(source) - len(text)
        raise definition_error(
            PARSE_ERROR, f"Cannot read the query: {e}", file, source, offset
        ) from None
    if not tokens:
        raise definition_error(PARSE_ERROR, "The query is empty.", file, source, len(source))
    return query_from_tokens(source, tokens, file)


def query_from_tokens(source: str, tokens: list[Token], file: str) -> SqlQuery:
    """The query made of ``tokens`` (offsets into ``source``, the whole file)."""
    tree = parse_tokens(source, tokens, file)
    if not isinstance(tree, (exp.Query, exp.Values)):
        raise definition_error(
            PARSE_ERROR,
            f"Expected a query (SELECT, WITH, FROM or VALUES) here, found '{tokens[0].text}'.",
            file,
            source,
            tokens[0].start,
        )
    text = source[tokens[0].start : tokens[-1].end + 1]
    try:
        references, file_sources = reads_of(tree)
    except FileSourceError as e:
        raise definition_error(PARSE_ERROR, str(e), file, source, e.offset) from None
    return SqlQuery(tree, text, references, file_sources)


def parse_tokens(source: str, tokens: list[Token], file: str) -> exp.Expr:
    """sqlglot's tree of one statement or expression; a syntax error names the file, line
    and column."""
    stmt = Statement(0, source, tokens[0].start, tokens[-1].end, tokens)
    try:
        return parse(stmt, tokens)
    except SqlError as e:
        offset = tokens[0].start
        if e.line is not None and e.column is not None:
            offset = offset_at(source, e.line, e.column)
        raise definition_error(PARSE_ERROR, e.reason, file, source, offset) from None


def definition_error(
    error_class: str, reason: str, file: str, source: str, offset: int
) -> PipelineDefinitionError:
    """An error at ``offset`` of ``source``: the file and line, the column, and the line
    itself with a caret, so the user sees the spot without opening the file."""
    line, column = line_col(source, offset)
    start = source.rfind("\n", 0, max(offset, 0)) + 1
    end = source.find("\n", start)
    shown = source[start : end if end >= 0 else len(source)].rstrip()
    caret = f"{' ' * (column - 1)}^ column {column}"
    snippet = (
        f"\n  {line:>4} | {shown}\n       | {caret}" if shown.strip() else f" (column {column})"
    )
    return PipelineDefinitionError(f"[{error_class}] {reason}{snippet}", file, line)


# -- reads ----------------------------------------------------------------------------------


def reads_of(
    tree: exp.Expr,
) -> tuple[tuple[Reference, ...], tuple[FileSource | KafkaSource, ...]]:
    """Every dataset and file read of ``tree``, subqueries and joins included, CTEs of the
    query excluded. References are deduplicated by (name, streaming), case-insensitively;
    one written with ``LIVE.`` anywhere counts as ``live``."""
    ctes = cte_names(tree)
    references: dict[tuple[str, bool], Reference] = {}
    sources: dict[FileSource | KafkaSource, None] = {}
    for table in sorted(tree.find_all(exp.Table), key=position):
        try:
            read = read_of(table, ctes)
        except FileSourceError as e:
            e.offset = position(table)
            raise
        if isinstance(read, Reference):
            key = reference_key(read)
            kept = references.get(key)
            if kept is None:
                references[key] = read
            elif read.live and not kept.live:
                references[key] = Reference(kept.name, kept.streaming, True)
        elif isinstance(read, (FileSource, KafkaSource)):
            sources[read] = None
    return tuple(references.values()), tuple(sources)


def position(table: exp.Table) -> int:
    """Where a table node starts in the source (sqlglot keeps token offsets on names)."""
    meta = table.this.meta if isinstance(table.this, exp.Expr) else {}
    return int(meta.get("start", 0))


def reference_key(reference: Reference) -> tuple[str, bool]:
    return reference.name.lower(), reference.streaming


def cte_names(tree: exp.Expr) -> set[str]:
    return {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}


def read_of(table: exp.Table, ctes: set[str]) -> Reference | FileSource | KafkaSource | None:
    """What a table node of the query reads: a dataset, files, a Kafka topic, or nothing
    of ours (a CTE, another table function)."""
    streaming = is_streamed(table)
    if isinstance(table.this, exp.Anonymous):
        if str(table.this.name).lower() in FILE_FUNCTIONS:
            return file_source(table.this, streaming)
        if str(table.this.name).lower() in (FUNCTION, DEBEZIUM):
            return kafka_read(table.this, streaming)
        return None
    parts = [p for p in table.parts if isinstance(p, exp.Identifier)]
    if not parts or len(parts) != len(table.parts):
        return None
    live = len(parts) > 1 and parts[0].name.lower() == "live"
    if live:
        parts = parts[1:]
    if not live and len(parts) == 1 and parts[0].name.lower() in ctes:
        return None
    return Reference(canonical_name(".".join(written(p) for p in parts)), streaming, live)


def written(identifier: exp.Identifier) -> str:
    """A name part as the user wrote it: backquoted when it was."""
    if identifier.quoted:
        return "`" + identifier.name.replace("`", "``") + "`"
    return identifier.name


def is_streamed(table: exp.Table) -> bool:
    """``STREAM x`` parses as Stream(Table), ``STREAM(x)`` as Stream(Subquery(Table))."""
    parent = table.parent
    if isinstance(parent, exp.Subquery) and parent.this is table:
        parent = parent.parent
    return isinstance(parent, exp.Stream)


def keep_qualifier(table: exp.Table) -> tuple[str, tuple[str, ...]]:
    """Alias ``table`` as its own name (``LIVE.x`` and ``db.x`` as ``x``), as Spark names a
    table read without an alias; the name (lower case) and the prefix it was written with."""
    parts = [p for p in table.parts if isinstance(p, exp.Identifier)]
    table.set("alias", exp.TableAlias(this=parts[-1].copy()))
    return parts[-1].name.lower(), tuple(p.name.lower() for p in parts[:-1])


def requalify(tree: exp.Expr, qualifiers: Mapping[str, set[tuple[str, ...]]]) -> None:
    """``LIVE.x.col`` and ``db.x.col`` -> ``x.col`` for the tables aliased by
    :func:`keep_qualifier`: an alias qualifies a column with one name only."""
    if not qualifiers:
        return
    for column in list(tree.find_all(exp.Column)):
        names = [column.args.get(k) for k in ("catalog", "db", "table")]
        parts = [n.name.lower() for n in names if isinstance(n, exp.Identifier)]
        if len(parts) > 1 and tuple(parts[:-1]) in qualifiers.get(parts[-1], ()):
            column.set("catalog", None)
            column.set("db", None)


def strip_live(table: exp.Table) -> None:
    parts = table.parts
    if len(parts) > 1 and isinstance(parts[0], exp.Identifier) and parts[0].name.lower() == "live":
        table.set("catalog" if table.args.get("catalog") is not None else "db", None)


def unwrap_stream(stream: exp.Stream) -> None:
    """Replace ``STREAM(x) a`` by ``x a``: the alias of the parenthesised form moves onto
    the table."""
    inner = stream.this
    if isinstance(inner, exp.Subquery) and isinstance(inner.this, exp.Table):
        table = inner.this
        alias = inner.args.get("alias")
        if alias is not None and table.args.get("alias") is None:
            table.set("alias", alias.copy())
        stream.replace(table)
    elif inner is not None:
        stream.replace(inner)


# -- read_files / cloud_files -----------------------------------------------------------------


def file_source(call: exp.Anonymous, streaming: bool) -> FileSource:
    """``read_files(path, name => value, ...)`` or ``cloud_files(path, format[, map(...)])``."""
    function = str(call.name).lower()
    args = list(call.expressions)
    path = literal_text(args[0]) if args and not isinstance(args[0], exp.Kwarg) else None
    if path is None:
        raise FileSourceError(function, "the first argument must be the path, as a string.")
    options: list[tuple[str, str]] = []
    fmt: str | None = None
    if function == "cloud_files":
        if len(args) < 2 or literal_text(args[1]) is None:
            raise FileSourceError(
                function, "the format is required: cloud_files(path, format[, map(...)])."
            )
        fmt = literal_text(args[1])
        for extra in args[2:]:
            options.extend(map_pairs(extra))
    else:
        for arg in args[1:]:
            if not isinstance(arg, exp.Kwarg):
                raise FileSourceError(function, "options are named, as in format => 'json'.")
            value = literal_text(arg.expression)
            key = arg.this.name
            if key.lower() == "format":
                fmt = value
            else:
                options.append((key, value if value is not None else arg.expression.sql()))
    return FileSource(function, path, fmt, tuple(options), streaming or function == "cloud_files")


def kafka_read(call: exp.Anonymous, streaming: bool) -> KafkaSource:
    """``read_kafka(name => value, ...)`` or ``read_debezium(...)``, checked by
    :mod:`headwater.sql.kafka_arguments`."""
    function = str(call.name).lower()
    try:
        return kafka_source(arguments_of(call, OUTPUT_DIALECT), streaming, function)
    except KafkaArgumentError as e:
        raise FileSourceError(function, str(e)) from None


def map_pairs(node: exp.Expr) -> list[tuple[str, str]]:
    """The pairs of ``map('k', 'v', ...)`` (parsed as a VarMap)."""
    if not isinstance(node, exp.VarMap):
        raise FileSourceError("cloud_files", "options are given as map('key', 'value', ...).")
    keys = node.args["keys"].expressions
    values = node.args["values"].expressions
    return [
        (literal_text(k) or k.sql(), literal_text(v) or v.sql())
        for k, v in zip(keys, values, strict=False)
    ]


# -- reading the statement heads ---------------------------------------------------------------


@dataclass(frozen=True)
class Name:
    """A dataset name without ``LIVE.``: ``text`` its one spelling (backquotes only where
    a part needs them), ``plain`` without backquotes (for columns and constraint names)."""

    text: str
    plain: str
    live: bool


class DefinitionCursor(Cursor):
    """SQL's token cursor (:class:`headwater.sql.cursor.Cursor`) over a statement of a
    pipeline SQL file (or over part of one), raising definition errors that name the file
    and point at the word at fault."""

    def __init__(
        self, source: str, file: str, tokens: list[Token], empty_end: int | None = None
    ) -> None:
        end = tokens[-1].end + 1 if tokens else len(source) if empty_end is None else empty_end
        first = tokens[0].start if tokens else end
        super().__init__(Statement(0, source, first, end - 1, tokens))
        self.source = source
        self.file = file
        self.end = end

    def sub(self, tokens: list[Token]) -> DefinitionCursor:
        return DefinitionCursor(self.source, self.file, tokens, self.offset())

    def at_end(self) -> bool:
        return self.done

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            raise self.error(f"Expected {' '.join(words)} here, found {self.found()}.")

    def offset(self) -> int:
        return self.toks[self.i].start if not self.done else self.end

    def error(self, reason: str, tok: Token | None = None) -> PipelineDefinitionError:
        return self.refuse(reason, PARSE_ERROR, tok)

    def refuse(
        self, reason: str, error_class: str, tok: Token | None = None
    ) -> PipelineDefinitionError:
        """An error of ``error_class`` at ``tok`` (default: the current word)."""
        offset = self.offset() if tok is None else tok.start
        return definition_error(error_class, reason, self.file, self.source, offset)

    def finish(self, what: str) -> None:
        if not self.done:
            raise self.error(f"Unexpected {self.found()} after {what}.")

    def name(self, what: str) -> Name:
        """``part(.part)*``; an optional leading ``LIVE.`` is dropped. ``text`` is the
        name's one spelling (:func:`canonical_name`), however its parts were quoted."""
        parts: list[tuple[str, bool]] = [self.name_part(what)]
        while self.accept("."):
            parts.append(self.name_part(what))
        live = len(parts) > 1 and not parts[0][1] and parts[0][0].lower() == "live"
        if live:
            parts = parts[1:]
        written = ".".join("`" + p.replace("`", "``") + "`" for p, _ in parts)
        return Name(canonical_name(written), ".".join(p for p, _ in parts), live)

    def name_part(self, what: str) -> tuple[str, bool]:
        """One part of a name and whether it was backquoted. Unquoted, a part is a word
        of letters, digits and underscores that is not a number: Spark reads ``1_db`` as a
        name (courses write ``CREATE OR REFRESH STREAMING TABLE 1_bronze_db.t``)."""
        tok = self.peek()
        if tok is not None and tok.token_type == TokenType.IDENTIFIER:
            self.i += 1
            return tok.text, True
        key = key_of(tok) if tok is not None else ""
        if tok is not None and tok.token_type != TokenType.NUMBER and NAME_WORD.match(key):
            if key == "AS":
                raise self.error(f"Expected {what} here, found {self.found()}.")
            self.i += 1
            return tok.text, False
        raise self.error(f"Expected {what} here, found {self.found()}.")

    def string(self, what: str = "a quoted string") -> str:
        tok = self.peek()
        if tok is None or tok.token_type not in STRINGS:
            raise self.error(f"Expected {what} (a quoted string) here, found {self.found()}.")
        self.i += 1
        return tok.text

    def expression(self, tokens: list[Token], what: str) -> str:
        """The exact text of an expression, after sqlglot has checked its syntax."""
        if not tokens:
            raise self.error(f"Expected {what} here, found {self.found()}.")
        parse_tokens(self.source, tokens, self.file)
        return self.text(tokens)

    def names(self, tokens: list[Token], what: str) -> tuple[str, ...]:
        """A comma-separated list of names (columns: plain, without backquotes)."""
        out = []
        for item in self.items(tokens):
            sub = self.sub(item)
            out.append(sub.name(what).plain)
            sub.finish(what)
        return tuple(out)
