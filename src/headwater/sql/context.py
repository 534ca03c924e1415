"""What every statement handler gets: the session, the statement, its parameters, and
PySpark's own ``spark.sql`` (handlers must not call the routed one, or they would loop)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType
from sqlglot.tokens import TokenType

from headwater.sql.text import Statement

SqlFn = Callable[..., DataFrame]


class _Pass:
    """Returned by a handler that finds the statement is Spark's to run (a parquet table...)."""

    def __repr__(self) -> str:
        return "PASS"


PASS = _Pass()


@dataclass
class Context:
    spark: SparkSession
    stmt: Statement
    args: dict[str, Any] | list[Any] | None
    orig_sql: SqlFn
    _positional: Iterator[Any] | None = field(default=None, repr=False)

    def arg(self, name: str) -> Any:
        """The value of parameter ``:name``, or of the next ``?`` when ``name`` is empty
        (markers are bound in the order they are written). KeyError/StopIteration if none."""
        if isinstance(self.args, dict) and name:
            return self.args[name]
        if self._positional is None:
            self._positional = iter(self.args if isinstance(self.args, list) else ())
        return next(self._positional)

    def empty(self) -> DataFrame:
        """The result of a statement that returns nothing (DDL), as Spark gives it."""
        return self.spark.createDataFrame([], StructType([]))

    def rows(self, row: dict[str, Any], schema: str) -> DataFrame:
        return self.spark.createDataFrame([tuple(row.values())], schema)

    def query(self, first: int, last: int | None = None, prefix: str = "") -> DataFrame:
        """The query in ``stmt.tokens[first:last+1]`` (after ``prefix``), run by Spark as
        written, with time travel, ``delta.`path``` and table functions replaced by
        temporary views."""
        from headwater.sql.rewrite import drop_views, rewrite

        done = rewrite(self.spark, self.stmt, self.orig_sql, first, last)
        span = self.stmt.tokens[first : None if last is None else last + 1]
        marked = any(t.token_type in (TokenType.PLACEHOLDER, TokenType.COLON) for t in span)
        try:
            return self.orig_sql(self.spark, prefix + done.text, self.args if marked else None)
        finally:
            drop_views(self.spark, done.views)

    def sql(self, text: str) -> DataFrame:
        """Spark's own ``spark.sql`` (not routed again)."""
        return self.orig_sql(self.spark, text)
