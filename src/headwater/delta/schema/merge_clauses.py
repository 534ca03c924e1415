"""The WHEN clauses of a MERGE, as delta-spark's builder and SQL give them, and what each
does to a column: the first clause of its kind whose condition holds acts on a row; an
update or insert without assignments takes every same-named source column."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pyspark.sql import Column

from headwater.delta.schema.expressions import ExprLike, as_column

ClauseKind = Literal["matched", "not_matched", "not_matched_by_source"]
ClauseAction = Literal["update", "delete", "insert"]


@dataclass(frozen=True)
class Clause:
    """One WHEN clause of a MERGE."""

    kind: ClauseKind
    action: ClauseAction
    condition: ExprLike | None = None
    assignments: Mapping[str, ExprLike] | None = None  # None with update/insert: all columns


def assigned(
    clause: Clause, name: str, src_columns: dict[str, Column], current: Column | None
) -> Column | None:
    """The value a clause gives column ``name`` (None: the clause leaves it as is)."""
    if clause.assignments is None:  # updateAll / insertAll: same-named source column
        return src_columns.get(name.lower(), current)
    for key, value in clause.assignments.items():
        if key.split(".")[-1].strip("`").lower() == name.lower():
            return as_column(value)
    return current
