"""``spark.sql``: statements Spark's parser lacks (Delta DDL/DML, OPTIMIZE, time travel,
COPY INTO...) go to :mod:`headwater.sql`; every other statement reaches Spark unchanged,
with ``args`` and ``{df}`` keyword substitution as PySpark does them. Where Spark runs a
statement, one that names ``_metadata`` over ``read_files`` reaches the files' hidden
column (:func:`headwater.autoloader.metadata_plan.run_sql`). Inside a ``foreachBatch``
function, a statement naming a view only the micro-batch's session has runs there
(:mod:`headwater.adapter.sessions`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame

from headwater.adapter import resolution, sessions
from headwater.autoloader import metadata_plan

Method = Callable[..., Any]


def session_sql(original: Method) -> Method:
    def sql(self, sqlQuery: str, args=None, **kwargs) -> DataFrame:
        # Loaded on first use: sqlglot, which sessions that never run SQL do not need.
        from headwater.sql.dispatch import route

        resolver = resolution.current()
        resolved = resolver.sql(sqlQuery) if resolver and not args and not kwargs else None
        if resolved is not None:
            return resolved
        try:
            return route(self, sqlQuery, args, kwargs, _with_hidden_columns(original))
        except Exception as e:
            batch = sessions.batch_session(self)
            if batch is None or not _view_not_found(e):
                raise
            return batch.sql(sqlQuery, args, **kwargs)

    return sql


def _view_not_found(error: BaseException | None) -> bool:
    """Spark's ``TABLE_OR_VIEW_NOT_FOUND``, raised as is or under headwater's error for the
    statement that met it."""
    while error is not None:
        condition = getattr(error, "getCondition", None)
        if callable(condition) and condition() == "TABLE_OR_VIEW_NOT_FOUND":
            return True
        error = error.__cause__
    return False


def _with_hidden_columns(original: Method) -> Method:
    def run(spark, text, args=None, **kwargs):
        return metadata_plan.run_sql(spark, text, args, kwargs, original)

    return run
