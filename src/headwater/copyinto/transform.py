"""Shaping the rows read from the files into the rows the table stores.

The ``SELECT`` list (if any) runs as Spark ``selectExpr`` over the read columns, so any
Spark SQL expression works (casts, functions, ``_metadata`` is not available). Columns then
match the table by name, case-insensitively: a column the table has is cast to the table's
type (Spark's ANSI cast: a value that cannot be converted fails the load rather than turning
null), a column the table lacks needs ``mergeSchema``, a table column the data lacks is
written as null, and a NOT NULL table column fails the load on a null. The result is in
the table's column order, ready for :func:`headwater.delta.write.batch.write_files`.
"""

from __future__ import annotations

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from headwater.copyinto.spec import CopyIntoError, CopySpec
from headwater.copyinto.target import Target
from headwater.engines.door import check_schema_writable, reconcile_schema
from headwater.errors import SchemaMismatchError
from headwater.sqltypes import as_nullable


def shape(df: DataFrame, spec: CopySpec, target: Target) -> tuple[DataFrame, StructType]:
    """The DataFrame to write and the table schema after the write."""
    if spec.select is not None:
        try:
            df = df.selectExpr(*spec.select)
        except AnalysisException as e:
            raise CopyIntoError(
                f"The SELECT list of COPY INTO {target.text} does not fit the source files "
                f"(columns: {', '.join(df.columns)}): {e}"
            ) from e
    if spec.columns and not spec.positional:  # COPY INTO t (a, b): only those columns
        keep = {c.lower() for c in spec.columns} | {(spec.rescue_column or "").lower()}
        df = df.select(*[F.col(_quote(c)) for c in df.columns if c.lower() in keep])
    table = target.schema
    if target.schemaless:
        schema = as_nullable(df.schema)
        check_schema_writable(schema, [])
        return df, schema
    by_name = {f.name.lower(): f for f in table}
    cols: list[Column] = []
    for f in df.schema:
        t = by_name.get(f.name.lower())
        col = F.col(_quote(f.name))
        if t is None:
            cols.append(col)
        elif as_nullable(t.dataType) == as_nullable(f.dataType) or (
            isinstance(t.dataType, StructType) and isinstance(f.dataType, StructType)
        ):
            cols.append(col.alias(t.name))
        else:
            cols.append(col.cast(t.dataType).alias(t.name))
    df = df.select(*cols)
    try:
        schema = reconcile_schema(table, df.schema, merge=spec.merge_schema).schema
    except SchemaMismatchError as e:
        raise SchemaMismatchError(
            f"COPY INTO {target.text}: "
            + str(e).replace(
                "Set option mergeSchema=true", "Set COPY_OPTIONS('mergeSchema'='true')"
            )
        ) from e
    present = {f.name.lower(): f.name for f in df.schema}
    out = []
    for f in schema:
        name = present.get(f.name.lower())
        col = F.col(_quote(name)) if name else F.lit(None).cast(f.dataType)
        if not f.nullable:
            col = F.when(
                col.isNull(),
                F.raise_error(
                    F.lit(f"COPY INTO {target.text}: NOT NULL column {f.name} got a null")
                ),
            ).otherwise(col)
        out.append(col.alias(f.name))
    return df.select(*out), schema


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
