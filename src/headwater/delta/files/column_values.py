"""Columns whose values the table defines: generated columns (``GENERATED ALWAYS AS
(expr)``) and column defaults (``DEFAULT expr``), as Delta stores them in the schema.

A generated column's expression lives in its field metadata (``delta.generationExpression``)
and is a promise to every reader: each row's value equals the expression over its other
columns. So a write computes it where the rows lack it (an append without the column, an
UPDATE or MERGE that changes the columns it reads) and checks it where they give it, as a
CHECK constraint named ``Generated Column`` (delta-spark's name), on every write path
(:func:`checks`, enforced by :mod:`headwater.delta.files.data_files`). A default
(``CURRENT_DEFAULT``, Spark's key) fills a column a write leaves out.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from headwater.delta.schema.expressions import referenced_columns
from headwater.delta.schema.merge_clauses import Clause
from headwater.errors import DeltaAnalysisError

GENERATION = "delta.generationExpression"
DEFAULT = "CURRENT_DEFAULT"


def generated(schema: StructType) -> dict[str, str]:
    """Generated column name -> its SQL expression."""
    return {f.name: str(f.metadata[GENERATION]) for f in schema if GENERATION in (f.metadata or {})}


def defaults(schema: StructType) -> dict[str, str]:
    return {f.name: str(f.metadata[DEFAULT]) for f in schema if DEFAULT in (f.metadata or {})}


def missing_value(field: StructField) -> Column:
    """What a write that leaves ``field`` out stores in it."""
    meta = field.metadata or {}
    if GENERATION in meta:
        return F.expr(str(meta[GENERATION])).cast(field.dataType)
    if DEFAULT in meta:
        return F.expr(str(meta[DEFAULT])).cast(field.dataType)
    return F.lit(None).cast(field.dataType)


def default_value(field: StructField) -> Column | None:
    """A MERGE insert's value for a column its clause leaves out: the column's default,
    as delta-spark fills it (None: no default, the column is NULL; generated columns are
    computed afterwards, by :func:`recompute`)."""
    meta = field.metadata or {}
    return F.expr(str(meta[DEFAULT])).cast(field.dataType) if DEFAULT in meta else None


def checks(schema: StructType) -> dict[str, str]:
    """The CHECK constraints generated columns imply (name -> expression)."""
    return {
        f"Generated Column {name}": f"`{name}` <=> ({expr})"
        for name, expr in generated(schema).items()
    }


def recompute(df: DataFrame, schema: StructType, given: Collection[str] = ()) -> DataFrame:
    """``df`` with each generated column not in ``given`` computed from its row (what an
    UPDATE or MERGE writes: the rows' other columns may have changed)."""
    exprs = {k: v for k, v in generated(schema).items() if k.lower() not in _lower(given)}
    if not exprs:
        return df
    types = {f.name: f.dataType for f in schema}
    return df.select(
        *[
            F.expr(exprs[c]).cast(types[c]).alias(c) if c in exprs else F.col(f"`{c}`")
            for c in df.columns
        ]
    )


def check_definition(schema: StructType) -> None:
    """Refuse, before the table is created, generated columns Delta does not allow: an
    expression over a missing or another generated column, or one that does not parse."""
    exprs = generated(schema)
    names = {f.name.lower() for f in schema}
    for name, expr in exprs.items():
        used = referenced_columns(expr)
        if used is None:
            raise DeltaAnalysisError(
                f"[DELTA_INVALID_GENERATED_COLUMN_REFERENCES] Generated column {name}: "
                f"'{expr}' is not an expression headwater can read; write it as Spark SQL over "
                "the table's other columns, e.g. CAST(ts AS DATE)."
            )
        unknown = sorted(c for c in used if c.lower() not in names)
        chained = sorted(c for c in used if c.lower() in _lower(exprs))
        if unknown or chained:
            why = (
                f"reads column(s) {', '.join(unknown)} the table does not have"
                if unknown
                else f"reads generated column(s) {', '.join(chained)}"
            )
            raise DeltaAnalysisError(
                f"[DELTA_INVALID_GENERATED_COLUMN_REFERENCES] Generated column {name} ({expr}) "
                f"{why}; a generated column may only read the table's other, non-generated "
                "columns."
            )


def with_generation(field: StructField, expr: str) -> StructField:
    """``field`` as a generated column (``GENERATED ALWAYS AS (expr)``)."""
    return StructField(
        field.name, field.dataType, field.nullable, {**(field.metadata or {}), GENERATION: expr}
    )


def with_default(field: StructField, expr: str) -> StructField:
    """``field`` with a default value (``DEFAULT expr``), as Spark's catalog keeps it."""
    return StructField(
        field.name, field.dataType, field.nullable, {**(field.metadata or {}), DEFAULT: expr}
    )


def assigned_names(assignments: Mapping[str, object] | None, source: Collection[str]) -> list[str]:
    """The columns an UPDATE's or a MERGE clause's assignments set (``*``: the source's)."""
    if assignments is None:
        return list(source)
    return [str(k).split(".")[-1].strip("`") for k in assignments]


def given_by_clauses(
    clauses: Sequence[Clause], source: Collection[str], schema: StructType
) -> set[str]:
    """Generated columns some MERGE clause sets itself (checked, not recomputed)."""
    names = {
        n.lower()
        for c in clauses
        if c.action in ("update", "insert")
        for n in assigned_names(c.assignments, source)
    }
    return {name for name in generated(schema) if name.lower() in names}


def _lower(names: Collection[str]) -> set[str]:
    return {n.lower() for n in names}
