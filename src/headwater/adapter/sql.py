"""``spark.sql``: statements Spark's parser lacks (Delta DDL/DML, OPTIMIZE, time travel,
COPY INTO...) go to :mod:`headwater.sql`; every other statement reaches Spark unchanged,
with ``args`` and ``{df}`` keyword substitution as PySpark does them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame

from headwater.adapter import resolution

Method = Callable[..., Any]


def session_sql(original: Method) -> Method:
    def sql(self, sqlQuery: str, args=None, **kwargs) -> DataFrame:
        # Loaded on first use: sqlglot, which sessions that never run SQL do not need.
        from headwater.sql.dispatch import route

        resolver = resolution.current()
        resolved = resolver.sql(sqlQuery) if resolver and not args and not kwargs else None
        if resolved is not None:
            return resolved
        return route(self, sqlQuery, args, kwargs, original)

    return sql
