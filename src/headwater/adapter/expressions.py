"""``df.selectExpr(...)`` and ``df.filter("...")`` / ``df.where("...")``: SQL expression text
with the known system's ``col:a.b`` JSON paths on string columns.

The known system's docs apply ``:`` paths to JSON text, above all to the string columns
Auto Loader infers for nested JSON (``selectExpr("*", "tags:page.name",
"tags:page.id::int")``); Spark 4 takes ``:`` only on VARIANT columns. As ``spark.sql`` does
(:mod:`headwater.sql.json_paths`), the expression reaches Spark unchanged first, so a
VARIANT column keeps Spark's own meaning; only when Spark refuses a ``:`` on a column that
is not VARIANT are the refused items retried with each path spelled as
``get_json_object(col, '$.a.b')``, a whole item named by its last key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame

Method = Callable[..., Any]


def select_expr(original: Method) -> Method:
    def selectExpr(self, *expr) -> DataFrame:
        try:
            return original(self, *expr)
        except Exception as e:
            # Loaded on first use: sqlglot, which frames without such paths do not need.
            from headwater.sql.json_paths import refused_json_path

            if not refused_json_path(e):
                raise
            items = list(expr[0]) if len(expr) == 1 and isinstance(expr[0], list) else list(expr)
            fixed = [_item(self, original, item) for item in items]
            if fixed == items:
                raise
        return original(self, *fixed)

    return selectExpr


def _item(df: DataFrame, original: Method, item: Any) -> Any:
    """``item`` rewritten if Spark refuses its ``:`` paths alone (a path on a VARIANT
    column in the same list stays as written)."""
    from headwater.sql.json_paths import refused_json_path, rewrite_select_item

    if not isinstance(item, str) or ":" not in item:
        return item
    try:
        original(df, item)
    except Exception as e:
        if refused_json_path(e):
            return rewrite_select_item(item)
    return item


def filter_(original: Method) -> Method:
    def filter(self, condition) -> DataFrame:
        try:
            return original(self, condition)
        except Exception as e:
            from headwater.sql.json_paths import refused_json_path, rewrite_json_paths

            if not isinstance(condition, str) or not refused_json_path(e):
                raise
            fixed = rewrite_json_paths(condition)
            if fixed == condition:
                raise
        return original(self, fixed)

    return filter
