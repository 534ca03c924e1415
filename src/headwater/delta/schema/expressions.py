"""Conditions and expressions as users give them: SQL text or a PySpark ``Column``.

DML and MERGE take either (``"id > 5"`` or ``F.col("id") > 5``), as delta-spark does.
What a condition reads is found from its SQL text with sqlglot, without Spark; a
condition that cannot be read that way reads "unknown" columns, and callers then assume
the worst (every file, every column).
"""

from __future__ import annotations

import sqlglot
from pyspark.sql import Column
from pyspark.sql import functions as F
from sqlglot import exp

ExprLike = str | Column


def as_column(e: ExprLike) -> Column:
    return F.expr(e) if isinstance(e, str) else e


def holds(condition: ExprLike | None) -> Column:
    """True where ``condition`` is (SQL null counts as false; no condition always holds)."""
    return F.lit(True) if condition is None else F.coalesce(as_column(condition), F.lit(False))


def column_name(key: str) -> str:
    """A ``set`` key as a column name (``\`added later\``` or ``added later``)."""
    if len(key) > 1 and key.startswith("`") and key.endswith("`"):
        return key[1:-1].replace("``", "`")
    return key


def condition_text(condition: str | Column | None) -> str | None:
    """The SQL text of a condition (PySpark shows a Column as ``Column<'...'>``)."""
    if condition is None:
        return None
    if isinstance(condition, str):
        return condition
    text = str(condition)
    if text.startswith("Column<'") and text.endswith("'>"):
        return text[len("Column<'") : -2]
    return None


def parse_condition(text: str | None) -> exp.Expr | None:
    if not text:
        return None
    try:
        return sqlglot.parse_one(text, read="spark")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        return None


def conjuncts(node: exp.Expr) -> list[exp.Expr]:
    node = node.unnest()
    if isinstance(node, exp.And):
        return conjuncts(node.left) + conjuncts(node.right)
    return [node]


def referenced_columns(condition: str | Column | None) -> set[str] | None:
    """Lower-cased column names a condition reads (None: unknown)."""
    tree = parse_condition(condition_text(condition))
    if tree is None:
        return None
    return {c.name.lower() for c in tree.find_all(exp.Column)}
