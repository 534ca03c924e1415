"""Which statements are headwater's, and running a script statement by statement.

A statement is classified by its leading tokens (sqlglot's tokenizer, so ``DESC HISTORY`` and
a table named ``history`` are told apart). Delta statements go to their handler; a handler
may hand a statement back (``PASS``: INSERT into a parquet table, CREATE TABLE USING csv).
Everything else reaches PySpark's own ``spark.sql`` unchanged, except that time travel,
``delta.`/path``` and the table functions Spark lacks are first replaced by temporary views
(:mod:`headwater.sql.rewrite`).

Errors name the statement (number and text) and the line and column. Through the
``spark.sql`` hook, a single statement that Spark runs raises Spark's own exception, so code
catching ``AnalysisException`` keeps working.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from sqlglot.tokens import TokenType

from headwater import engines
from headwater.engines.door import narrow_views
from headwater.errors import ConcurrentModificationException, HeadwaterError
from headwater.originals import original
from headwater.sql import conversion, ddl, dml, maintenance
from headwater.sql.context import PASS, Context, SqlFn
from headwater.sql.copy_into import copy_into
from headwater.sql.cursor import Cursor
from headwater.sql.json_paths import refused_json_path, rewrite_json_paths
from headwater.sql.rewrite import drop_views, has_candidates, rewrite
from headwater.sql.text import SqlError, Statement, offset_at, split

Args = dict[str, Any] | list[Any] | None

HANDLERS: dict[str, Callable[[Context], Any]] = {
    "describe": maintenance.describe,
    "show_tblproperties": maintenance.show_tblproperties,
    "show_partitions": maintenance.show_partitions,
    "describe_table": conversion.describe_table,
    "convert": conversion.convert,
    "generate": conversion.generate,
    "optimize": maintenance.optimize,
    "vacuum": maintenance.vacuum,
    "restore": maintenance.restore,
    "copy_into": copy_into,
    "merge": dml.merge,
    "update": dml.update,
    "delete": dml.delete,
    "insert": dml.insert,
    "create": ddl.create,
    "alter": ddl.alter,
    "drop": ddl.drop,
}

_local = threading.local()


@contextmanager
def _inside() -> Iterator[None]:
    """While a handler runs, ``spark.sql`` calls made by headwater itself go straight to Spark."""
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        yield
    finally:
        _local.depth -= 1


# DESCRIBE statements about something else than a table's columns.
_DESCRIBE_OTHER = {
    "QUERY", "FUNCTION", "DATABASE", "SCHEMA", "CATALOG", "NAMESPACE", "PROCEDURE",
    "SELECT", "WITH", "FROM", "VALUES",
}  # fmt: skip


def classify(stmt: Statement) -> str | None:
    """The handler key of a statement, or None when it is Spark's."""
    c = Cursor(stmt)
    w0, w1 = c.word(0), c.word(1)
    if w0 in ("DESCRIBE", "DESC") and w1 in ("HISTORY", "DETAIL") and c.peek(2) is not None:
        return "describe"
    if w0 in ("DESCRIBE", "DESC") and w1 not in _DESCRIBE_OTHER and c.peek(1) is not None:
        return "describe_table"
    if w0 == "SHOW" and re.match(r"TBLPROPERTIES\s+\S", getattr(c.peek(1), "text", ""), re.I):
        return "show_tblproperties"  # sqlglot keeps what follows SHOW as one string
    if w0 == "SHOW" and re.match(r"PARTITIONS\s+\S", getattr(c.peek(1), "text", ""), re.I):
        return "show_partitions"
    if (w0, w1, c.word(2)) == ("CONVERT", "TO", "DELTA"):
        return "convert"
    if w0 == "GENERATE" and c.word(2) == "FOR":
        return "generate"
    if w0 in ("OPTIMIZE", "VACUUM", "RESTORE", "MERGE", "UPDATE", "INSERT"):
        return w0.lower()
    if (w0, w1) in (("COPY", "INTO"), ("DELETE", "FROM"), ("ALTER", "TABLE"), ("DROP", "TABLE")):
        return {"COPY": "copy_into"}.get(w0, w0.lower())
    if w0 == "CREATE":
        words = [c.word(k) for k in range(1, 5)]
        head = [w for w in words if w not in ("OR", "REPLACE", "EXTERNAL")]
        if head[:1] == ["TABLE"]:
            return "create"
    return None


def _is_script(stmts: list[Statement]) -> bool:
    """Spark's SQL scripting (``BEGIN ... END``) holds ``;`` of its own: Spark's whole."""
    toks = stmts[0].tokens
    first = Cursor(stmts[0])
    return first.word() == "BEGIN" or (
        len(toks) > 2 and toks[1].token_type == TokenType.COLON and first.word(2) == "BEGIN"
    )


def execute(
    spark: SparkSession, stmt: Statement, args: Args, orig_sql: SqlFn, raw: bool
) -> DataFrame:
    """Run one statement. ``raw``: let Spark's own exceptions through for statements Spark runs."""
    ctx = Context(spark, stmt, args, orig_sql)
    handler = HANDLERS.get(classify(stmt) or "")
    if handler is not None:
        try:
            with _inside():
                result = handler(ctx)
        except (SqlError, ConcurrentModificationException):
            raise  # a conflict keeps delta-spark's class: callers catch it to run again
        except Exception as e:
            raise wrap(stmt, e, positions=False) from e
        if result is not PASS:
            return result
    return _passthrough(ctx, raw)


def _passthrough(ctx: Context, raw: bool) -> DataFrame:
    stmt, spark = ctx.stmt, ctx.spark
    if not has_candidates(stmt.tokens):
        try:
            return _spark(ctx, stmt.text)
        except Exception as e:
            if raw:
                raise
            raise wrap(stmt, e, positions=True) from e
    try:
        with _inside():
            done = rewrite(spark, stmt, ctx.orig_sql)
    except SqlError:
        raise
    except Exception as e:
        raise wrap(stmt, e, positions=False) from e
    keep = _defines_view(stmt)
    try:
        result = _spark(ctx, done.text)
        if not keep and narrow_views(result, done.frames):  # files skipped by its WHERE
            result = _spark(ctx, done.text)
        return result
    except Exception as e:
        if raw:
            raise
        raise wrap(stmt, e, positions=not done.changed) from e
    finally:
        if not keep:
            drop_views(spark, done.views)


def _spark(ctx: Context, text: str) -> DataFrame:
    """Spark runs ``text``; refused for ``:`` paths on a string column (or for a path
    Spark's grammar lacks, ``a:b:[*]``), it runs them as ``get_json_object``
    (:mod:`headwater.sql.json_paths`)."""
    return _with_json_paths(ctx.spark, text, ctx.args, ctx.orig_sql)


def _with_json_paths(spark: SparkSession, text: str, args: Args, orig: SqlFn) -> DataFrame:
    try:
        return orig(spark, text, args)
    except Exception as e:
        not_variant = refused_json_path(e)
        if not not_variant and "PARSE_SYNTAX_ERROR" not in str(e):
            raise
        fixed = rewrite_json_paths(text)
        if fixed == text:
            raise
        try:
            return orig(spark, fixed, args)
        except Exception:
            if not_variant:
                raise
            raise e from None  # the syntax error was not the paths': Spark's own words


def _defines_view(stmt: Statement) -> bool:
    """A view (or cached table) defined over our temporary views must keep them."""
    c = Cursor(stmt)
    words = [c.word(k) for k in range(6)]
    return words[0] == "CACHE" or (words[0] == "CREATE" and "VIEW" in words)


def wrap(stmt: Statement, e: BaseException, positions: bool) -> SqlError:
    """An error from a handler or from Spark, placed at its statement (and, when Spark
    reports one for the statement as written, its line and column)."""
    text = str(e)
    for marker in ("\n== SQL", ";\n'", "\nJVM stacktrace", "\n\tat "):
        text = text.split(marker)[0]
    text = re.sub(r";? ?\(?line \d+,? pos \d+\)?$", "", text.strip())
    offset = _spark_offset(stmt, e, text_of=str(e)) if positions else None
    error = stmt.error(f"{type(e).__name__}: {text}", offset)
    if isinstance(e, HeadwaterError):  # keep its condition (DELTA_VERSION_NOT_FOUND, ...)
        error.error_class = e.error_class
    return error


def _spark_offset(stmt: Statement, e: BaseException, text_of: str) -> int | None:
    getter = getattr(e, "getQueryContext", None)
    try:
        contexts = getter() if getter is not None else []
    except Exception:
        contexts = []
    for qc in contexts:
        start = getattr(qc, "startIndex", None)
        try:
            index = start() if callable(start) else None
        except Exception:
            index = None
        if isinstance(index, int) and index >= 0:
            return stmt.start + index
    m = re.search(r"line (\d+),? pos (\d+)", text_of)
    if m:
        return stmt.start + offset_at(stmt.text, int(m.group(1)), int(m.group(2)) + 1)
    return None


# -- entry points ----------------------------------------------------------------------------


def _original() -> SqlFn:
    return original(SparkSession, "sql")


def statements(
    spark: SparkSession, text: str, args: Args = None
) -> Iterator[tuple[Statement, DataFrame]]:
    """Run the statements of ``text`` one by one, yielding each with its result."""
    stmts = split(text)
    orig = _original()
    if stmts and _is_script(stmts):
        whole = Statement(1, text, stmts[0].start, stmts[-1].end, stmts[0].tokens)
        yield whole, execute(spark, whole, args, orig, raw=False)
        return
    for stmt in stmts:
        yield stmt, execute(spark, stmt, args, orig, raw=False)


def sql(spark: SparkSession, text: str, args: Args = None) -> DataFrame:
    """Run one or several ``;``-separated statements; the last one's result."""
    results = [df for _, df in statements(spark, text, args)]
    if not results:
        raise SqlError("No SQL statement to run.")
    return results[-1]


def _added_functions(spark: SparkSession, text: str, args: Args, orig: SqlFn) -> DataFrame:
    """On delta-spark, Spark and delta-spark run every statement; a single one calling a
    table function headwater adds (``event_log``, ``pipeline_quality``, ``read_files``,
    ``cloud_files_state``) has those calls replaced first."""
    try:
        stmts = split(text)
    except SqlError:
        return orig(spark, text, args)
    if any(classify(s) == "copy_into" for s in stmts):  # Spark's parser lacks it: ours
        results = [
            execute(spark, s, args, orig, raw=False)
            if classify(s) == "copy_into"
            else orig(spark, s.text, args)
            for s in stmts
        ]
        return results[-1]
    if len(stmts) != 1 or not has_candidates(stmts[0].tokens, only_functions=True):
        return orig(spark, text, args)
    stmt = stmts[0]
    with _inside():
        done = rewrite(spark, stmt, orig, only_functions=True)
    try:
        return _with_json_paths(spark, done.text, args, orig)
    finally:
        if not _defines_view(stmt):
            drop_views(spark, done.views)


def route(
    spark: SparkSession, text: str, args: Args, kwargs: dict[str, Any], orig: SqlFn
) -> DataFrame:
    """``spark.sql`` on a headwater session (see :mod:`headwater.api_hooks`)."""
    if getattr(_local, "depth", 0):
        return orig(spark, text, args, **kwargs)
    if getattr(spark, "_headwater_catalog", None) is None:
        if not kwargs and engines.of(spark) == engines.DELTA_SPARK:
            return _added_functions(spark, text, args, orig)
        return orig(spark, text, args, **kwargs)
    if kwargs:  # PySpark's {df} substitution first (its own temporary views), then route
        from pyspark.sql.sql_formatter import SQLStringFormatter

        formatter = SQLStringFormatter(spark)
        try:
            return route(spark, formatter.format(text, **kwargs), args, {}, orig)
        finally:
            formatter.clear()
    try:
        stmts = split(text)
    except SqlError:
        return orig(spark, text, args)  # Spark reports the bad text in its own words
    if not stmts or _is_script(stmts):
        return orig(spark, text, args)
    if len(stmts) == 1:
        return execute(spark, stmts[0], args, orig, raw=True)
    return sql(spark, text, args)
