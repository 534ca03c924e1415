"""Conditions and expressions as users give them: SQL text or a PySpark ``Column``.

DML and MERGE take either (``"id > 5"`` or ``F.col("id") > 5``), as delta-spark does.
What a condition reads is found from its SQL text with sqlglot, without Spark; a
condition that cannot be read that way reads "unknown" columns, and callers then assume
the worst (every file, every column).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F

from headwater.delta.options import condition_text

if TYPE_CHECKING:
    from sqlglot import exp

# sqlglot is imported where a condition is parsed, not here: this module is on the import
# path of the streaming sources, which Spark loads in a fresh Python process for every
# stream it starts (sqlglot alone is about 0.1 s of each).

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


def parse_condition(text: str | None) -> exp.Expr | None:
    if not text:
        return None
    import sqlglot

    try:
        return sqlglot.parse_one(text, read="spark")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        return None


def conjuncts(node: exp.Expr) -> list[exp.Expr]:
    from sqlglot import exp

    node = node.unnest()
    if isinstance(node, exp.And):
        return conjuncts(node.left) + conjuncts(node.right)
    return [node]


def referenced_columns(condition: str | Column | None) -> set[str] | None:
    """Lower-cased column names a condition reads (None: unknown)."""
    names = condition_columns(condition)
    return None if names is None else {n.lower() for n in names}


def condition_columns(condition: str | Column | None) -> list[str] | None:
    """The column names a condition reads, as written, in order (None: unknown)."""
    tree = parse_condition(condition_text(condition))
    if tree is None:
        return None
    from sqlglot import exp

    return list(dict.fromkeys(c.name for c in tree.find_all(exp.Column)))


@cache
def _catalyst_symbols() -> dict[type[exp.Expr], str]:
    """Spark's symbols for the binary operators a partition predicate uses."""
    from sqlglot import exp

    return {
        exp.EQ: "=",
        exp.NullSafeEQ: "<=>",
        exp.GT: ">",
        exp.GTE: ">=",
        exp.LT: "<",
        exp.LTE: "<=",
        exp.And: "AND",
        exp.Or: "OR",
        exp.Add: "+",
        exp.Sub: "-",
        exp.Mul: "*",
        exp.Div: "/",
    }


def unresolved_text(condition: str) -> str:
    """``condition`` as Spark prints it before analysis (``key = 'a'`` -> ``('key = a)``):
    delta-spark records OPTIMIZE's partition predicate in the log in that form, and tools
    reading the history compare it. Text with a construct not rendered here stays as given."""
    tree = parse_condition(condition)
    rendered = None if tree is None else _catalyst(tree)
    return condition if rendered is None else rendered


def _catalyst(node: exp.Expr) -> str | None:
    from sqlglot import exp

    node = node.unnest()
    symbol = _catalyst_symbols().get(type(node))
    if symbol is not None and isinstance(node, exp.Binary):
        left, right = _catalyst(node.left), _catalyst(node.right)
        return None if left is None or right is None else f"({left} {symbol} {right})"
    if isinstance(node, exp.Column):
        return "'" + ".".join(p.name for p in node.parts)
    if isinstance(node, exp.Literal):
        return node.name
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    if isinstance(node, exp.Null):
        return "null"
    if isinstance(node, exp.Not):
        inner = _catalyst(node.this)
        return None if inner is None else f"NOT {inner}"
    if isinstance(node, exp.NEQ):
        inner = _catalyst(exp.EQ(this=node.left, expression=node.right))
        return None if inner is None else f"NOT {inner}"
    if isinstance(node, exp.In) and node.expressions:
        items = [_catalyst(e) for e in [node.this, *node.expressions]]
        if any(i is None for i in items):
            return None
        return f"{items[0]} IN ({','.join(str(i) for i in items[1:])})"
    return None
