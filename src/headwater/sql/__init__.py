"""The SQL statements Spark's parser lacks: Delta DDL/DML, maintenance, time travel,
``read_files``/``cloud_files_state``/``table_changes`` and COPY INTO.

``headwater.sql(spark, text)`` runs one or several ``;``-separated statements and returns
the last one's result; on a headwater session ``spark.sql(...)`` routes through the same
front (see :mod:`headwater.sql.dispatch`). This package is itself callable, so
``headwater.sql(...)`` works while ``headwater.sql.dispatch`` stays importable.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from headwater.sql.copy_into import parse_copy_into
from headwater.sql.text import SqlError

__all__ = ["SqlError", "parse_copy_into", "sql", "statements"]


def sql(
    spark: SparkSession, text: str, args: dict[str, Any] | list[Any] | None = None
) -> DataFrame:
    """Run ``text`` (one or more statements separated by ``;``); the last statement's result.

    ``args`` binds ``:name`` / ``?`` parameter markers, as ``spark.sql(text, args)`` does.
    Errors are :class:`SqlError`, naming the statement and its line and column.
    """
    from headwater.sql.dispatch import sql as run

    return run(spark, text, args)


def statements(spark: SparkSession, text: str, args: dict[str, Any] | list[Any] | None = None):
    """Run the statements of ``text`` one at a time, yielding ``(statement, DataFrame)``."""
    from headwater.sql.dispatch import statements as run

    return run(spark, text, args)


class _CallableModule(types.ModuleType):
    def __call__(
        self, spark: SparkSession, text: str, args: dict[str, Any] | list[Any] | None = None
    ) -> DataFrame:
        return sql(spark, text, args)


sys.modules[__name__].__class__ = _CallableModule
