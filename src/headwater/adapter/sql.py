"""``spark.sql``: statements Spark's parser lacks (Delta DDL/DML, OPTIMIZE, time travel,
COPY INTO...) go to :mod:`headwater.sql`; every other statement reaches Spark unchanged,
with ``args`` and ``{df}`` keyword substitution as PySpark does them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame

Method = Callable[..., Any]


def session_sql(original: Method) -> Method:
    def sql(self, sqlQuery: str, args=None, **kwargs) -> DataFrame:
        # Loaded on first use: sqlglot, which sessions that never run SQL do not need.
        from headwater.sql.dispatch import route

        return route(self, sqlQuery, args, kwargs, original)

    return sql
