"""Table references Spark's parser cannot resolve, replaced by temporary views.

``t VERSION AS OF 3``, ``t TIMESTAMP AS OF '...'``, ``t@v3``, ``delta.`/path``` and the
table functions ``read_files``, ``read_kafka``, ``read_debezium``, ``cloud_files_state``,
``table_changes``, ``event_log`` and ``pipeline_quality`` are read here with the Python APIs
(``spark.read.format("delta").option("versionAsOf", ...)`` and so on); each becomes a
temporary view and the statement text gets the view's name in its place. ``STREAM
read_files(...)``, ``STREAM read_kafka(...)`` and ``STREAM read_debezium(...)`` (or
``STREAM(...)``) become a view of a stream, and the ``STREAM`` goes with the call: a query of a streaming view is a stream.

Why splice text instead of regenerating SQL from sqlglot's tree: the rest of the statement
reaches Spark exactly as written, so Spark's column names, functions and error positions are
the ones the user expects. The tokens tell where each reference starts and ends.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import sqlglot
from pyspark.sql import DataFrame, SparkSession
from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from headwater import storage
from headwater.errors import UnsupportedOperationError
from headwater.sql.cursor import TableRef, is_name, is_word, matching_paren
from headwater.sql.refs import resolve_at
from headwater.sql.text import DIALECT, SqlError, Statement

FUNCTIONS = {
    "read_files", "read_kafka", "read_debezium", "cloud_files_state", "table_changes",
    "table_changes_by_path", "event_log", "pipeline_quality",
}  # fmt: skip
KAFKA_FUNCTIONS = {"read_kafka", "read_debezium"}
STREAMS = {"read_files", *KAFKA_FUNCTIONS}  # the functions STREAM may wrap
# What headwater adds on a delta-spark session, whose own SQL has table_changes[_by_path],
# time travel and delta.`/path`: the table functions of files and pipelines.
ADDED_FUNCTIONS = FUNCTIONS - {"table_changes", "table_changes_by_path"}
_OPERATORS = {TokenType.PLUS, TokenType.DASH, TokenType.STAR, TokenType.SLASH}
# Tokens a table reference follows (FROM a, b JOIN c; MERGE ... USING s; TABLE t; INTO t).
_TABLE_CONTEXT = {
    TokenType.FROM,
    TokenType.JOIN,
    TokenType.COMMA,
    TokenType.USING,
    TokenType.TABLE,
    TokenType.INTO,
}
_NAMED_TIME = {"SYSTEM_TIME": "TIMESTAMP", "SYSTEM_VERSION": "VERSION"}

SqlFn = Callable[..., DataFrame]  # PySpark's original SparkSession.sql


@dataclass
class Rewritten:
    text: str
    views: list[str] = field(default_factory=list)
    frames: dict[str, DataFrame] = field(default_factory=dict)  # each view's DataFrame

    @property
    def changed(self) -> bool:
        return bool(self.views)


def has_candidates(tokens: list[Token], only_functions: bool = False) -> bool:
    """Cheap check: could any token start a reference we rewrite? (Most statements: no.)
    ``only_functions``: only a call of :data:`ADDED_FUNCTIONS` counts."""
    if only_functions:
        return any(tok.text.lower() in ADDED_FUNCTIONS for tok in tokens)
    for i, tok in enumerate(tokens):
        if tok.token_type == TokenType.PARAMETER:
            return True
        word = tok.text.upper() if is_word(tok) else ""
        if word in ("VERSION", "TIMESTAMP", "SYSTEM_TIME", "SYSTEM_VERSION") and _at_as_of(
            tokens, i + 1
        ):
            return True
        if tok.text.lower() in FUNCTIONS:
            return True
        if word == "DELTA" and i + 1 < len(tokens) and tokens[i + 1].token_type == TokenType.DOT:
            return True
    return False


def rewrite(
    spark: SparkSession,
    stmt: Statement,
    orig_sql: SqlFn,
    first: int = 0,
    last: int | None = None,
    only_functions: bool = False,
) -> Rewritten:
    """The text of ``stmt.tokens[first:last+1]`` with each special reference replaced by a
    new temporary view (the caller drops ``views`` once Spark has analysed the statement);
    ``only_functions``: calls of :data:`ADDED_FUNCTIONS` only (a delta-spark session)."""
    toks = stmt.tokens
    last = len(toks) - 1 if last is None else last
    if not toks or first > last:
        return Rewritten("")
    base = toks[first].start
    pieces: list[str] = []
    pos = base
    views: list[str] = []
    frames: dict[str, DataFrame] = {}
    i = first
    try:
        while i <= last:
            found = (
                _added_function(spark, stmt, (first, i, last), orig_sql)
                if only_functions
                else _reference(spark, stmt, (first, i, last), orig_sql)
            )
            if found is None:
                i += 1
                continue
            begin, end, df, alias = found
            view = f"__hw_sql_{uuid.uuid4().hex[:12]}"
            df.createOrReplaceTempView(view)
            views.append(view)
            frames[view] = df
            pieces.append(stmt.source[pos : toks[begin].start])
            pieces.append(view if alias is None else f"{view} AS `{alias}`")
            pos = toks[end].end + 1
            i = end + 1
    except BaseException:
        drop_views(spark, views)
        raise
    pieces.append(stmt.source[pos : toks[last].end + 1])
    return Rewritten("".join(pieces), views, frames)


def drop_views(spark: SparkSession, views: list[str]) -> None:
    for view in views:
        spark.catalog.dropTempView(view)


# -- finding references ----------------------------------------------------------------------


Span = tuple[int, int, int]  # the first token a rewrite may replace, the current one, the last


def _added_function(spark, stmt: Statement, span: Span, orig_sql):
    """``(first and last token index, DataFrame, None)`` if a call of
    :data:`ADDED_FUNCTIONS` starts at the current token."""
    return _call(spark, stmt, span, orig_sql, ADDED_FUNCTIONS)


def _call(spark, stmt: Statement, span: Span, orig_sql, names: set[str]):
    """A call of one of ``names`` at the current token, with the ``STREAM`` around it."""
    first, i, last = span
    toks = stmt.tokens
    nxt = toks[i + 1] if i + 1 <= last else None
    if (i > 0 and toks[i - 1].token_type == TokenType.DOT) or nxt is None:
        return None
    if toks[i].text.lower() not in names or nxt.token_type != TokenType.L_PAREN:
        return None
    end = min(matching_paren(toks, i + 1), last)
    begin, stop = i, end
    if i - 1 >= first and toks[i - 1].token_type == TokenType.STREAM:
        begin = i - 1  # STREAM f(...)
    elif (
        i - 2 >= first
        and toks[i - 2].token_type == TokenType.STREAM
        and toks[i - 1].token_type == TokenType.L_PAREN
        and end + 1 <= last
        and toks[end + 1].token_type == TokenType.R_PAREN
    ):
        begin, stop = i - 2, end + 1  # STREAM(f(...))
    df = _function(spark, stmt, (i, end), orig_sql, streaming=begin < i)
    return begin, stop, df, None


def _reference(spark, stmt: Statement, span: Span, orig_sql):
    """``(first and last token index, DataFrame, alias to add)`` if a reference starts at
    the current token."""
    first, i, last = span
    toks = stmt.tokens
    tok = toks[i]
    if i > 0 and toks[i - 1].token_type == TokenType.DOT:
        return None
    called = _call(spark, stmt, span, orig_sql, FUNCTIONS)
    if called is not None:
        return called
    if not is_name(tok) or i == 0 or toks[i - 1].token_type not in _TABLE_CONTEXT:
        return None
    parts = [tok.text]
    j = i
    while j + 2 <= last and toks[j + 1].token_type == TokenType.DOT and is_name(toks[j + 2]):
        parts.append(toks[j + 2].text)
        j += 2
    ref = TableRef.of_parts(parts)
    option, value, end = _time_travel(spark, stmt, toks, j + 1, last, orig_sql)
    if option is None and ref.path is not None:
        ref, option, value = _path_at(ref, stmt, toks[j])
    if option is None and ref.path is None:
        return None
    options = {} if option is None else {option: value}
    where = "Time travel" if option else "Reading"
    table = resolve_at(spark, ref, f"{where} {ref}", stmt, tok.start)
    df = spark.read.format("delta").options(**options).load(table.path)
    end = j if option is None else end
    needs_alias = ref.path is None and not _alias_follows(toks, end + 1, last)
    return i, end, df, parts[-1] if needs_alias else None


def _at_as_of(toks: list[Token], k: int) -> bool:
    return (
        k + 1 < len(toks)
        and toks[k].token_type == TokenType.ALIAS
        and is_word(toks[k + 1])
        and toks[k + 1].text.upper() == "OF"
    )


def _time_travel(spark, stmt, toks, k: int, last: int, orig_sql):
    """``VERSION AS OF n`` / ``TIMESTAMP AS OF expr`` / ``FOR ... AS OF`` / ``@v3`` at ``k``:
    ``(option, value, last index)``, or ``(None, None, k - 1)``."""
    if k > last:
        return None, None, k - 1
    tok = toks[k]
    if tok.token_type == TokenType.PARAMETER and k + 1 <= last:
        return _at_syntax(stmt, toks[k + 1]) + (k + 1,)
    if is_word(tok) and tok.text.upper() == "FOR" and k + 1 <= last:
        k += 1
        tok = toks[k]
    word = tok.text.upper() if is_word(tok) else ""
    kind = _NAMED_TIME.get(word, word)
    if kind not in ("VERSION", "TIMESTAMP") or not _at_as_of(toks, k + 1):
        return None, None, k - 1
    start = k + 3
    if start > last:
        raise stmt.error_at(f"{kind} AS OF needs a value.", tok)
    if kind == "VERSION":
        value_tok = toks[start]
        if value_tok.token_type not in (TokenType.NUMBER, TokenType.STRING) or not (
            value_tok.text.isdigit()
        ):
            raise stmt.error_at("VERSION AS OF needs a version number.", value_tok)
        return "versionAsOf", value_tok.text, start
    end = expression_end(toks, start, last)
    if end == start and toks[start].token_type == TokenType.STRING:
        return "timestampAsOf", toks[start].text, end
    text = stmt.slice(toks[start], toks[end])
    value = orig_sql(spark, f"SELECT CAST(({text}) AS STRING)").first()[0]
    if value is None:
        raise stmt.error_at(f"TIMESTAMP AS OF {text} is NULL.", toks[start])
    return "timestampAsOf", value, end


def _at_syntax(stmt: Statement, tok: Token) -> tuple[str, str]:
    """``t@v3`` (version) or ``t@yyyyMMddHHmmssSSS`` (timestamp), as Delta writes them."""
    found = _at_value(tok.text)
    if found is None:
        raise stmt.error_at(
            f"'@{tok.text}' is not a table version: use @v<version> or @yyyyMMddHHmmssSSS.", tok
        )
    return found


def _at_value(text: str) -> tuple[str, str] | None:
    if text[:1] in ("v", "V") and text[1:].isdigit():
        return "versionAsOf", text[1:]
    if text.isdigit() and len(text) == 17:
        t = text
        return (
            "timestampAsOf",
            f"{t[:4]}-{t[4:6]}-{t[6:8]} {t[8:10]}:{t[10:12]}:{t[12:14]}.{t[14:]}",
        )
    return None


def _path_at(ref: TableRef, stmt: Statement, tok: Token) -> tuple[TableRef, str | None, str | None]:
    """``delta.`/p@v5``` and ``delta.`/p@yyyyMMddHHmmssSSS```: time travel by a suffix of
    the path, as delta-spark reads it, unless a Delta table lives at the path as written.
    A suffix after ``@`` that is neither form is an error, not a path that does not exist."""
    path = ref.path or ""
    base, at, suffix = path.rpartition("@")
    if not at or not base or "/" in suffix:
        return ref, None, None
    if storage.is_dir(storage.delta_log_dir(path)):
        return ref, None, None
    found = _at_value(suffix)
    if found is None:
        raise stmt.error_at(
            f"'@{suffix}' in {ref} is not a table version: use @v<version> or @yyyyMMddHHmmssSSS.",
            tok,
        )
    return TableRef(path=base), found[0], found[1]


def expression_end(toks: list[Token], i: int, last: int) -> int:
    """Index of the last token of the scalar expression starting at ``i``: operands
    (literals, names, calls, parentheses, INTERVAL n unit, typed literals) joined by
    + - * / and ``::type``. Enough for the values time travel takes."""
    j = i
    end = i
    want_operand = True
    while j <= last:
        tok = toks[j]
        if want_operand:
            if tok.token_type in (TokenType.PLUS, TokenType.DASH):
                j += 1
                continue
            if tok.token_type == TokenType.L_PAREN:
                j = matching_paren(toks, j)
            elif tok.token_type == TokenType.INTERVAL:
                j += 1
                if j + 1 <= last and is_word(toks[j + 1]):
                    j += 1
            elif (
                is_word(tok)
                and j + 1 <= last
                and toks[j + 1].token_type in (TokenType.L_PAREN, TokenType.STRING)
            ):
                j = (
                    matching_paren(toks, j + 1)
                    if toks[j + 1].token_type == TokenType.L_PAREN
                    else j + 1
                )
            elif tok.token_type not in (TokenType.STRING, TokenType.NUMBER) and not is_word(tok):
                break
            end = j
            want_operand = False
            j += 1
        elif tok.token_type in _OPERATORS:
            want_operand = True
            j += 1
        elif tok.token_type == TokenType.DCOLON and j + 1 <= last:
            j += 1
            if j + 1 <= last and toks[j + 1].token_type == TokenType.L_PAREN:
                j = matching_paren(toks, j + 1)
            end = j
            j += 1
        else:
            break
    return min(end, last)


def _alias_follows(toks: list[Token], k: int, last: int) -> bool:
    if k > last:
        return False
    tok = toks[k]
    if tok.token_type in (TokenType.ALIAS, TokenType.IDENTIFIER):
        return True
    if tok.token_type == TokenType.VAR:
        after = toks[k + 1] if k + 1 <= last else None
        return not (after is not None and is_word(after) and after.text.upper() == "BY")
    return False


# -- table functions -------------------------------------------------------------------------


def _function(
    spark: SparkSession, stmt: Statement, call_span: tuple[int, int], orig_sql, streaming: bool
):
    """The rows of the table function called at ``call_span`` (under ``STREAM`` if
    ``streaming``)."""
    i, end = call_span
    tok = stmt.tokens[i]
    text = stmt.slice(tok, stmt.tokens[end])
    try:
        call = sqlglot.parse_one(text, read=DIALECT)
    except sqlglot.errors.ParseError as e:
        raise stmt.error_at(f"Cannot read the call {text}: {e}", tok) from e
    name = tok.text.lower()
    if streaming and name not in STREAMS:
        raise stmt.error_at(
            f"{name}(...) is not a stream: read it without STREAM (STREAM takes read_files "
            "read_kafka and read_debezium).",
            tok,
        )
    from headwater.sql import functions, stream_functions
    from headwater.sql.kafka_arguments import CONNECTOR_MISSING, arguments_of, kafka_source

    try:
        if name in KAFKA_FUNCTIONS:
            source = kafka_source(arguments_of(call, "spark"), streaming, name)
            return stream_functions.read_kafka(spark, source, _evaluator(spark, orig_sql))
        positional, named = _arguments(stmt, tok, name, call)
        if streaming:
            if len(positional) != 1:
                raise ValueError(
                    f"takes the path as its one positional argument, not {positional}."
                )
            return stream_functions.read_files_stream(spark, positional[0], named)
        return functions.call(spark, name, positional, named)
    except SqlError:
        raise
    except (ValueError, TypeError) as e:
        raise stmt.error_at(f"{name}: {e}", tok) from e
    except UnsupportedOperationError as e:
        if e.error_class != CONNECTOR_MISSING:
            raise
        raise SqlError(str(e)) from None  # one line: the installation lacks it, not the text


def _evaluator(spark: SparkSession, orig_sql):
    """The value of an argument given as an expression, evaluated once by Spark."""

    def evaluate(sql: str) -> object:
        return orig_sql(spark, f"SELECT {sql} AS v").collect()[0][0]

    return evaluate


def _arguments(
    stmt: Statement, tok: Token, name: str, call: exp.Expr
) -> tuple[list[str], dict[str, str]]:
    """A call's literal arguments: positional ones first, then ``name => value``."""
    positional: list[str] = []
    named: dict[str, str] = {}
    for arg in call.expressions:
        if isinstance(arg, (exp.Kwarg, exp.PropertyEQ)):
            named[arg.this.name] = _literal(stmt, tok, name, arg.expression)
        elif named:
            raise stmt.error_at(f"{name}: positional arguments must come first.", tok)
        else:
            positional.append(_literal(stmt, tok, name, arg))
    return positional, named


def _literal(stmt: Statement, tok: Token, name: str, node: exp.Expression) -> str:
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return "-" + node.this.name
    if isinstance(node, exp.Literal):
        return node.name
    raise stmt.error_at(f"{name}: arguments must be literals, not {node.sql(DIALECT)}.", tok)
