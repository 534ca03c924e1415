"""ALTER TABLE on Delta tables: add columns, widen a column's type or change its comment,
set table properties and the description, add and drop CHECK constraints.

Each is one metadata commit (no data file is touched), with the protocol upgrade the new
metadata needs in the same commit (deletion vectors, the change data feed, constraints).
Callers holding a name in the catalog mirror the new schema into Spark's catalog afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import AtomicType, DataType, DateType, StructField, StructType

from headwater.delta.files.column_values import GENERATION
from headwater.delta.log.actions import Metadata
from headwater.delta.log.commit import Transaction
from headwater.delta.log.delta_log import DeltaLog, Snapshot
from headwater.delta.log.operations import Operation
from headwater.delta.read.batch import read_snapshot
from headwater.delta.schema import table_schema as schemas
from headwater.delta.schema import type_widening as widening
from headwater.delta.schema.expressions import referenced_columns
from headwater.errors import ConstraintViolationError, SchemaMismatchError


def _commit(
    snapshot: Snapshot, operation: Operation, metadata: Metadata, reads: bool = False
) -> int:
    txn = Transaction(DeltaLog(snapshot.root), snapshot, operation)
    if reads:  # the change was checked against the rows: new rows could break it
        txn.read_whole_table()
    txn.update_metadata(metadata)
    return txn.commit()


def add_columns(path: str, fields: list[StructField]) -> int:
    """Append nullable columns (existing rows read them as null), as ``ADD COLUMNS`` does."""
    snapshot = DeltaLog(path).snapshot()
    snapshot.check_writable(schema_change=True)
    existing = {f.name.lower() for f in snapshot.schema}
    clash = [f.name for f in fields if f.name.lower() in existing]
    if clash:
        raise SchemaMismatchError(
            f"Cannot add column(s) {', '.join(clash)} to {snapshot.root}: the table already has them."
        )
    names = [f.name.lower() for f in fields]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SchemaMismatchError(f"Column(s) {', '.join(dupes)} listed more than once.")
    new = [StructField(f.name, schemas.as_nullable(f.dataType), True, f.metadata) for f in fields]
    schema = StructType([*snapshot.schema.fields, *new])
    operation = Operation("ADD COLUMNS", {"columns": [{"column": f.jsonValue()} for f in new]})
    return _commit(
        snapshot,
        operation,
        replace(snapshot.metadata, schema_string=schemas.to_delta_json(schema)),
    )


def set_properties(path: str, properties: Mapping[str, str]) -> int:
    """Set table properties (``delta.*`` settings and free-form keys)."""
    snapshot = DeltaLog(path).snapshot()
    snapshot.check_writable()
    props = {k: str(v) for k, v in properties.items()}
    metadata = replace(
        snapshot.metadata, configuration={**snapshot.metadata.configuration, **props}
    )
    return _commit(snapshot, Operation("SET TBLPROPERTIES", {"properties": props}), metadata)


def set_description(path: str, description: str) -> int:
    """The table's comment (``COMMENT '...'``; ``description`` in DESCRIBE DETAIL)."""
    snapshot = DeltaLog(path).snapshot()
    snapshot.check_writable()
    metadata = replace(snapshot.metadata, description=description)
    return _commit(
        snapshot, Operation("SET TBLPROPERTIES", {"properties": {"comment": description}}), metadata
    )


def add_constraint(spark: SparkSession, path: str, name: str, expression: str) -> int:
    """``ADD CONSTRAINT name CHECK (expression)``: every current row must satisfy it, under
    Spark SQL's semantics (Spark checks them); later writes are held to it. The protocol
    moves to writer version 3 (or gains ``checkConstraints``) in the same commit."""
    snapshot = DeltaLog(path).snapshot()
    snapshot.check_writable()
    name = name.lower()  # as delta-spark stores it
    if name in {k.lower() for k in snapshot.check_constraints}:
        raise SchemaMismatchError(
            f"Constraint '{name}' already exists on {snapshot.root}. Drop it first to change it."
        )
    bad = read_snapshot(spark, snapshot).where(~F.coalesce(F.expr(expression), F.lit(False)))
    count = bad.count()
    if count:
        raise ConstraintViolationError(
            f"[DELTA_NEW_CHECK_CONSTRAINT_VIOLATION] {count} rows in {snapshot.root} violate "
            f"the new CHECK constraint ({expression}); it was not added. Fix or delete those "
            "rows first."
        )
    config = {**snapshot.metadata.configuration, f"delta.constraints.{name}": expression}
    return _commit(
        snapshot,
        Operation("ADD CONSTRAINT", {"name": name, "expr": expression}),
        replace(snapshot.metadata, configuration=config),
        reads=True,
    )


def drop_constraint(path: str, name: str, if_exists: bool = False) -> int | None:
    """``DROP CONSTRAINT [IF EXISTS] name``."""
    snapshot = DeltaLog(path).snapshot()
    snapshot.check_writable()
    known = {k.lower(): k for k in snapshot.check_constraints}
    if name.lower() not in known:
        if if_exists:
            return None
        raise SchemaMismatchError(
            f"Cannot drop nonexistent constraint '{name}' from {snapshot.root}. Use DROP "
            "CONSTRAINT IF EXISTS to ignore it."
        )
    key = f"delta.constraints.{known[name.lower()]}"
    expression = snapshot.metadata.configuration[key]
    config = {k: v for k, v in snapshot.metadata.configuration.items() if k != key}
    return _commit(
        snapshot,
        Operation("DROP CONSTRAINT", {"name": known[name.lower()], "expr": expression}),
        replace(snapshot.metadata, configuration=config),
    )


def change_column(
    path: str,
    column: str,
    new_type: DataType | None = None,
    comment: str | None = None,
    position: str | None = None,
    nullable: bool | None = None,
) -> int:
    """``ALTER TABLE t ALTER COLUMN c TYPE t2`` / ``CHANGE COLUMN c c t2 [COMMENT '...']``.

    Only the schema changes: files written before keep their narrower type and readers
    upcast them, which is why only Delta's widenings are accepted, and only on tables with
    ``delta.enableTypeWidening = true`` (the ``typeWidening`` feature, added to the protocol
    in the same commit when the table lacks it). The change is recorded in the column's
    ``delta.typeChanges``. Logged as delta-spark logs it: ``CHANGE COLUMN`` with the new field.

    ``position`` (``FIRST`` or ``AFTER other``) moves the column, a metadata-only change as
    in delta-spark. ``nullable=True`` is ``DROP NOT NULL``; ``nullable=False`` is ``SET NOT
    NULL``, refused while a row holds a null there (later writes are held to it).
    """
    snapshot = DeltaLog(path).snapshot()
    snapshot.check_writable()
    by_name = {f.name.lower(): f for f in snapshot.schema}
    old = by_name.get(column.lower())
    if old is None:
        raise SchemaMismatchError(
            f"[DELTA_COLUMN_NOT_FOUND] Column {column} does not exist in {snapshot.root} "
            f"(columns: {', '.join(snapshot.schema.fieldNames())})."
        )
    field = old
    if new_type is not None and new_type != old.dataType:
        _check_widening(snapshot, old, new_type)
        preview = widening.PREVIEW_FEATURE in snapshot.protocol.all_writer_features
        field = widening.record_change(old, new_type, snapshot.version + 1 if preview else None)
    if comment is not None:
        metadata = {**field.metadata, "comment": comment}
        field = StructField(field.name, field.dataType, field.nullable, metadata)
    if nullable is not None and nullable != field.nullable:
        if not nullable:
            _check_no_nulls(SparkSession.active(), snapshot, field.name)
        field = StructField(field.name, field.dataType, nullable, field.metadata)
    fields = [field if f.name == old.name else f for f in snapshot.schema]
    params: dict[str, object] = {"column": field.jsonValue()}
    if position is not None:
        fields = _moved(snapshot, fields, field, position)
        params["position"] = position
    return _commit(
        snapshot,
        Operation("CHANGE COLUMN", params),
        replace(snapshot.metadata, schema_string=schemas.to_delta_json(StructType(fields))),
        reads=nullable is False,
    )


def _moved(
    snapshot: Snapshot, fields: list[StructField], field: StructField, position: str
) -> list[StructField]:
    """``fields`` with ``field`` moved to ``position`` (``FIRST`` or ``AFTER other``)."""
    rest = [f for f in fields if f.name != field.name]
    if position.upper() == "FIRST":
        return [field, *rest]
    anchor = position.split(None, 1)[1].strip("`") if " " in position else ""
    at = next((i for i, f in enumerate(rest) if f.name.lower() == anchor.lower()), None)
    if at is None:
        raise SchemaMismatchError(
            f"[DELTA_COLUMN_NOT_FOUND] Cannot move column {field.name} of {snapshot.root} "
            f"{position}: no column {anchor} (columns: {', '.join(f.name for f in rest)})."
        )
    return [*rest[: at + 1], field, *rest[at + 1 :]]


def _check_no_nulls(spark: SparkSession, snapshot: Snapshot, column: str) -> None:
    """``SET NOT NULL`` holds only when no current row has a null in ``column``."""
    count = read_snapshot(spark, snapshot).where(F.col(f"`{column}`").isNull()).count()
    if count:
        raise ConstraintViolationError(
            f"[DELTA_NOT_NULL_CONSTRAINT_VIOLATED] {count} rows in {snapshot.root} hold a null "
            f"in column {column}; it was not made NOT NULL. Fix or delete those rows first."
        )


def unset_properties(path: str, keys: list[str], if_exists: bool = False) -> int:
    """``UNSET TBLPROPERTIES [IF EXISTS] (keys)``: an unknown key is an error unless
    ``if_exists``; logged as delta-spark logs it."""
    snapshot = DeltaLog(path).snapshot()
    snapshot.check_writable()
    config = snapshot.metadata.configuration
    missing = [k for k in keys if k not in config]
    if missing and not if_exists:
        raise SchemaMismatchError(
            f"[UNSET_NONEXISTENT_PROPERTIES] {snapshot.root} has no table propert"
            f"{'ies' if len(missing) > 1 else 'y'} {', '.join(missing)}. Use UNSET "
            "TBLPROPERTIES IF EXISTS to ignore it."
        )
    metadata = replace(
        snapshot.metadata, configuration={k: v for k, v in config.items() if k not in keys}
    )
    operation = Operation("UNSET TBLPROPERTIES", {"properties": keys, "ifExists": if_exists})
    return _commit(snapshot, operation, metadata)


def _check_widening(snapshot: Snapshot, old: StructField, new_type: DataType) -> None:
    """Refuse, naming the column and what to do, a type change Delta does not allow here."""
    name, root = old.name, snapshot.root
    change = f"{old.dataType.simpleString()} to {new_type.simpleString()}"
    if not isinstance(old.dataType, AtomicType) or not widening.is_widening(old.dataType, new_type):
        raise SchemaMismatchError(
            f"[DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP] ALTER TABLE CHANGE COLUMN cannot "
            f"change column {name} of {root} from {change}: only widenings are supported "
            f"({widening.allowed_widenings(old.dataType)}). To change it otherwise, rewrite "
            "the table (CREATE OR REPLACE TABLE ... AS SELECT with a CAST)."
        )
    if str(snapshot.configuration.get(widening.ENABLE, "false")).lower() != "true":
        raise SchemaMismatchError(
            f"[DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP] Cannot change column {name} of "
            f"{root} from {change}: type widening is not enabled on the table. Set the table "
            f"property {widening.ENABLE} = true first (ALTER TABLE ... SET TBLPROPERTIES "
            f"('{widening.ENABLE}' = 'true')); readers then need the typeWidening feature."
        )
    if name in snapshot.partition_columns and isinstance(old.dataType, DateType):
        raise SchemaMismatchError(
            f"Cannot change partition column {name} of {root} from {change}: its logged "
            "partition values are dates. Widen a data column instead, or rewrite the table."
        )
    users = _dependents(snapshot, old)
    if users:
        raise SchemaMismatchError(
            f"[DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE] Cannot change the type of column "
            f"{name} of {root}: {'; '.join(users)} depend(s) on it. Drop those first."
        )


def _dependents(snapshot: Snapshot, column: StructField) -> list[str]:
    """What a type change of ``column`` would silently alter: CHECK constraints and
    generated columns reading it, its own identity or generation definition."""
    name = column.name.lower()
    users = [
        f"CHECK constraint {k}"
        for k, v in snapshot.check_constraints.items()
        if name in (referenced_columns(v) or {name})  # unreadable: assume it does
    ]
    for f in snapshot.schema:
        expression = f.metadata.get(GENERATION)
        if expression is not None and name in (referenced_columns(str(expression)) or {name}):
            users.append(f"generated column {f.name}")
    if any(k.startswith("delta.identity.") for k in column.metadata):
        users.append("its identity definition")
    return users
