"""CHECK and NOT NULL constraints, enforced on every row a write adds, as delta-spark does.

A table's CHECK constraints live in its configuration (``delta.constraints.<name> =
<expr>``); NOT NULL is a column the schema marks non-nullable. A row for which a CHECK
constraint is false or null, or with a null in a NOT NULL column, fails the write; the
error names the constraint and the row's values in the columns it reads, and nothing is
committed.

The test runs inside the write itself (no extra pass over the data): it guards the value
of one output column, so it sees exactly the rows being written, after every filter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from headwater.delta.schema.expressions import referenced_columns
from headwater.errors import ConstraintViolationError

_MARK = "[DELTA_CONSTRAINT_VIOLATED]"


def checked(
    df: DataFrame, constraints: Mapping[str, str], required: Sequence[str] = ()
) -> DataFrame:
    """``df`` whose rows fail the query, as they are produced, when one breaks a CHECK
    constraint or has a null in a ``required`` (NOT NULL) column."""
    if not (constraints or required) or not df.columns:
        return df
    by_lower = {c.lower(): c for c in df.columns}
    test = None
    for column in required:
        text = f"{_MARK} NOT NULL constraint violated for column: {column}."
        part = F.when(F.col(f"`{column}`").isNotNull(), F.lit(True)).otherwise(
            F.raise_error(F.lit(text))
        )
        test = part if test is None else test & part
    for name, expr in constraints.items():
        holds = F.coalesce(F.expr(expr), F.lit(False))
        read = [by_lower[c] for c in sorted(referenced_columns(expr) or ()) if c in by_lower]
        values = []
        for column in read:
            value = F.coalesce(F.col(f"`{column}`").cast("string"), F.lit("null"))
            values += [F.lit(f"\n - {column} : "), value]
        message = F.concat(
            F.lit(f"{_MARK} CHECK constraint {name} ({expr}) violated by row with values:"),
            *values,
        )
        part = F.when(holds, F.lit(True)).otherwise(F.raise_error(message))
        test = part if test is None else test & part
    assert test is not None
    first = df.columns[0]
    # The other branch is never taken (``test`` raises instead of being false); it must
    # differ from the guarded value, or the optimizer folds the CASE away, ``test`` with it,
    # when that value is a constant (an UPDATE setting a NOT NULL column to NULL).
    unreachable = F.raise_error(F.lit(f"{_MARK} constraint check failed."))
    guarded = F.when(test, F.col(f"`{first}`")).otherwise(unreachable).alias(first)
    return df.select(guarded, *[F.col(f"`{c}`") for c in df.columns[1:]])


def raise_if_violated(error: Exception, root: str) -> None:
    """Re-raise a failed write that :func:`checked` stopped as a named error."""
    text = str(error)
    at = text.find(_MARK)
    if at < 0:
        return
    message = text[at + len(_MARK) :].split("SQLSTATE:", 1)[0].strip()
    condition = "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES"  # delta-spark's, for CHECK and generated
    if message.startswith("NOT NULL"):
        condition = "DELTA_NOT_NULL_CONSTRAINT_VIOLATED"
        remedy = "Fill in or filter out the nulls."
    elif message.startswith("CHECK constraint Generated Column"):
        remedy = "Leave the generated column out of the write (it is computed) or give it the value its expression yields."
    else:
        remedy = "Fix or filter the rows, or drop the constraint (ALTER TABLE ... DROP CONSTRAINT)."
    raise ConstraintViolationError(
        f"{message}\nNothing was written to {root}. {remedy}", error_class=condition
    ) from None
