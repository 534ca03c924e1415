"""ALTER TABLE on Delta tables: add columns, set table properties, add and drop CHECK
constraints.

All are metadata-only commits, which delta-rs makes (``DeltaTable.alter``); no data file
is touched. Callers holding a name in the catalog mirror the new schema into Spark's
catalog afterwards (:meth:`headwater.catalog.Catalog.register_in_spark`).
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from headwater.delta import raw_commit, table_features
from headwater.delta import schema as schemas
from headwater.delta.log import DeltaLog
from headwater.delta.read import read_snapshot
from headwater.errors import ConstraintViolationError, SchemaMismatchError


def add_columns(path: str, fields: list[StructField]) -> None:
    """Append nullable columns (existing rows read them as null), as ``ADD COLUMNS`` does."""
    dlog = DeltaLog(path)
    snapshot = dlog.snapshot()
    snapshot.check_writable(schema_change=True)
    existing = {f.name.lower() for f in snapshot.schema}
    clash = [f.name for f in fields if f.name.lower() in existing]
    if clash:
        raise SchemaMismatchError(
            f"Cannot add column(s) {', '.join(clash)} to {dlog.root}: the table already has them."
        )
    names = [f.name.lower() for f in fields]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SchemaMismatchError(f"Column(s) {', '.join(dupes)} listed more than once.")
    new = StructType(
        [StructField(f.name, schemas.as_nullable(f.dataType), True, f.metadata) for f in fields]
    )
    snapshot.table.alter.add_columns(list(schemas.to_delta(new).fields))


def set_properties(path: str, properties: dict[str, str]) -> None:
    """Set table properties (``delta.*`` settings and free-form keys) in the table metadata."""
    dlog = DeltaLog(path)
    snapshot = dlog.snapshot()
    snapshot.check_writable()
    vectors = str(properties.get("delta.enableDeletionVectors", "")).lower() == "true"
    if vectors and "deletionVectors" not in (snapshot.table.protocol().writer_features or []):
        raw_commit.check_writer_features(snapshot, removes=False)
        table_features.enable_deletion_vectors(
            dlog, snapshot, {k: str(v) for k, v in properties.items()}
        )
        return
    snapshot.table.alter.set_table_properties(dict(properties), raise_if_not_exists=False)


def set_description(path: str, description: str) -> None:
    """The table's comment (``COMMENT '...'``; ``description`` in DESCRIBE DETAIL)."""
    snapshot = DeltaLog(path).snapshot()
    snapshot.check_writable()
    snapshot.table.alter.set_table_description(description)


def add_constraint(spark: SparkSession, path: str, name: str, expression: str) -> None:
    """``ADD CONSTRAINT name CHECK (expression)``: every current row must satisfy it, under
    Spark SQL's semantics (Spark checks them, not delta-rs); later writes are held to it."""
    dlog = DeltaLog(path)
    snapshot = dlog.snapshot()
    snapshot.check_writable()
    name = name.lower()  # as delta-spark stores it
    if name in {k.lower() for k in snapshot.check_constraints}:
        raise SchemaMismatchError(
            f"Constraint '{name}' already exists on {dlog.root}. Drop it first to change it."
        )
    rows = read_snapshot(spark, snapshot)
    bad = rows.where(~F.coalesce(F.expr(expression), F.lit(False))).count()
    if bad:
        raise ConstraintViolationError(
            f"[DELTA_NEW_CHECK_CONSTRAINT_VIOLATION] {bad} rows in {dlog.root} violate the new "
            f"CHECK constraint ({expression}); it was not added. Fix or delete those rows first."
        )
    table_features.add_check_constraint(dlog, snapshot, name, expression)


def drop_constraint(path: str, name: str, if_exists: bool = False) -> None:
    """``DROP CONSTRAINT [IF EXISTS] name``."""
    dlog = DeltaLog(path)
    snapshot = dlog.snapshot()
    snapshot.check_writable()
    known = {k.lower(): k for k in snapshot.check_constraints}
    if name.lower() not in known:
        if if_exists:
            return
        raise SchemaMismatchError(
            f"Cannot drop nonexistent constraint '{name}' from {dlog.root}. Use DROP "
            "CONSTRAINT IF EXISTS to ignore it."
        )
    snapshot.table.alter.drop_constraint(known[name.lower()])
