"""ALTER TABLE on Delta tables: add columns, widen a column's type or change its comment,
set table properties and the description, add and drop CHECK constraints.

Each is one metadata commit (no data file is touched), with the protocol upgrade the new
metadata needs in the same commit (deletion vectors, the change data feed, constraints).
Callers holding a name in the catalog mirror the new schema into Spark's catalog afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import NoReturn

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import AtomicType, DataType, DateType, StructField, StructType

from headwater.delta.files.column_values import GENERATION
from headwater.delta.log import clustering
from headwater.delta.log import protocol as protocols
from headwater.delta.log.actions import Metadata, Protocol
from headwater.delta.log.commit import Transaction
from headwater.delta.log.delta_log import DeltaLog, Snapshot
from headwater.delta.log.operations import Operation
from headwater.delta.read.batch import read_snapshot
from headwater.delta.schema import column_mapping as mapping
from headwater.delta.schema import table_schema as schemas
from headwater.delta.schema import type_widening as widening
from headwater.delta.schema.expressions import referenced_columns
from headwater.errors import (
    ConstraintViolationError,
    DeltaAnalysisError,
    SchemaMismatchError,
    UnsupportedFeatureError,
)


def _commit(
    snapshot: Snapshot,
    operation: Operation,
    metadata: Metadata,
    reads: bool = False,
    protocol: Protocol | None = None,
) -> int:
    """One metadata commit; ``protocol``: the one asked for (the new metadata may need
    more, added in the same commit)."""
    txn = Transaction(DeltaLog(snapshot.root), snapshot, operation)
    if reads:  # the change was checked against the rows: new rows could break it
        txn.read_whole_table()
    if protocol is not None and protocol != snapshot.protocol:
        txn.update_protocol(protocol)
    txn.update_metadata(metadata)
    return txn.commit()


def add_columns(path: str, fields: list[StructField]) -> int:
    """Append nullable columns (existing rows read them as null), as ``ADD COLUMNS`` does;
    with column mapping, each gets the next id and a ``col-<uuid>`` physical name, as
    delta-spark gives them."""
    snapshot = DeltaLog(path).snapshot()
    mapped = mapping.mode(snapshot.configuration) != "none"
    snapshot.check_writable(schema_change=not mapped)  # mapped: the names are assigned here
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
    config = dict(snapshot.configuration)
    if mapped:
        new = list(mapping.assign(StructType(new), config).fields)
    schema = StructType([*snapshot.schema.fields, *new])
    operation = Operation("ADD COLUMNS", {"columns": [{"column": f.jsonValue()} for f in new]})
    return _commit(
        snapshot,
        operation,
        replace(
            snapshot.metadata, schema_string=schemas.to_delta_json(schema), configuration=config
        ),
    )


# Properties that ask for protocol versions: they raise the protocol and are not kept in
# the configuration, as in delta-spark.
VERSION_PROPERTIES = {"delta.minreaderversion": 0, "delta.minwriterversion": 1}


def set_properties(path: str, properties: Mapping[str, str]) -> int:
    """Set table properties (``delta.*`` settings and free-form keys); as delta-spark,
    ``delta.minReaderVersion`` / ``delta.minWriterVersion`` raise the protocol instead of
    being kept, and column mapping turned on (``delta.columnMapping.mode`` = ``name``)
    maps the existing columns to their own names (:func:`_mapped`)."""
    snapshot = DeltaLog(path).snapshot()
    snapshot.check_writable()
    props = {k: str(v) for k, v in properties.items()}
    kept = {k: v for k, v in props.items() if k.lower() not in VERSION_PROPERTIES}
    config = {**snapshot.metadata.configuration, **kept}
    metadata = replace(snapshot.metadata, configuration=config)
    mapped = _mapped(snapshot, config)
    if mapped is not None:
        metadata = replace(metadata, schema_string=schemas.to_delta_json(mapped))
    versions = [snapshot.protocol.min_reader_version, snapshot.protocol.min_writer_version]
    for key, value in props.items():
        if key.lower() in VERSION_PROPERTIES:
            versions[VERSION_PROPERTIES[key.lower()]] = _version(key, value)
    asked = protocols.upgraded(snapshot.protocol, *versions)
    operation = Operation("SET TBLPROPERTIES", {"properties": props})
    return _commit(snapshot, operation, metadata, protocol=asked)


def _version(key: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise SchemaMismatchError(
            f"[DELTA_PROTOCOL_PROPERTY_NOT_INT] Protocol property {key} needs to be an "
            f"integer. Found {value}"
        ) from None


def _mapped(snapshot: Snapshot, config: dict[str, str]) -> StructType | None:
    """The new schema when ``config`` changes it (None: it does not): column mapping turned
    on (``none`` to ``name``) gives every existing column an id and its own name as
    physical name, the names its files hold, as delta-spark does
    (``delta.columnMapping.maxColumnId`` in ``config``).
    Other changes of the mode are refused, as delta-spark refuses them."""
    old, new = mapping.mode(snapshot.configuration), mapping.mode(config)
    if old == new:
        return None
    if (old, new) != ("none", "name"):
        raise UnsupportedFeatureError(
            f"[DELTA_UNSUPPORTED_COLUMN_MAPPING_MODE_CHANGE] Changing column mapping mode "
            f"from '{old}' to '{new}' is not supported ({snapshot.root}): turn it on with "
            "'name', or create a new table with the mode wanted."
        )
    return mapping.assign(snapshot.schema, config, keep_names=True)


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


# -- RENAME COLUMN, DROP COLUMN: column mapping's schema changes ---------------------------

_MAPPING_ADVICE = (
    "Turn column mapping on first: ALTER TABLE t SET TBLPROPERTIES "
    "('delta.columnMapping.mode' = 'name', 'delta.minReaderVersion' = '2', "
    "'delta.minWriterVersion' = '5')."
)


def rename_column(path: str, column: Sequence[str], new_name: str) -> int:
    """``RENAME COLUMN a[.b] TO c``: the field's name changes, its physical name (what the
    files hold) stays, so no file is touched; only with column mapping, as in delta-spark."""
    snapshot = _mapped_table(path, "DELTA_UNSUPPORTED_RENAME_COLUMN", "Column rename")
    dotted = ".".join(column)
    parent = _struct_at(snapshot, column[:-1])
    if any(f.name.lower() == new_name.lower() for f in parent if f.name != column[-1]):
        raise SchemaMismatchError(
            f"[DELTA_DUPLICATE_COLUMNS_FOUND] Cannot rename {dotted} of {snapshot.root} to "
            f"{new_name}: a column of that name exists."
        )

    def renamed(field: StructField) -> StructField:
        if len(column) == 1:
            _refuse_dependents(snapshot, field, "rename")
        return StructField(new_name, field.dataType, field.nullable, field.metadata)

    schema = _edited(snapshot, snapshot.schema, list(column), renamed)
    parts = [
        new_name if len(column) == 1 and p.lower() == column[0].lower() else p
        for p in snapshot.partition_columns
    ]
    new_path = ".".join([*column[:-1], new_name])
    operation = Operation("RENAME COLUMN", {"oldColumnPath": dotted, "newColumnPath": new_path})
    metadata = replace(
        snapshot.metadata,
        schema_string=schemas.to_delta_json(schema),
        partition_columns=tuple(parts),
    )
    return _commit(snapshot, operation, metadata)


def drop_columns(
    path: str, columns: Sequence[Sequence[str]], if_exists: bool = False
) -> int | None:
    """``DROP COLUMN[S] [IF EXISTS] a[, b.c]``: the fields leave the schema, their data stays
    in the files unread; only with column mapping, as in delta-spark. Partition and
    clustering columns, and columns a constraint or generated column reads, are kept."""
    snapshot = _mapped_table(path, "DELTA_UNSUPPORTED_DROP_COLUMN", "DROP COLUMN")
    clustered = {c.lower() for c in clustering.columns_of(snapshot) or []}
    schema, dropped = snapshot.schema, []
    for column in columns:
        dotted = ".".join(column)
        top = len(column) == 1
        if top and column[0].lower() in {p.lower() for p in snapshot.partition_columns}:
            raise SchemaMismatchError(
                f"[DELTA_UNSUPPORTED_DROP_PARTITION_COLUMN] Dropping partition columns "
                f"({dotted}) of {snapshot.root} is not allowed."
            )
        if dotted.lower() in clustered:
            raise SchemaMismatchError(
                f"[DELTA_UNSUPPORTED_DROP_CLUSTERING_COLUMN] Dropping clustering columns "
                f"({dotted}) of {snapshot.root} is not allowed: cluster by others first."
            )

        def gone(field: StructField, top: bool = top) -> None:
            if top:
                _refuse_dependents(snapshot, field, "drop")
            return None

        try:
            schema = _edited(snapshot, schema, list(column), gone)
        except SchemaMismatchError:
            if if_exists:
                continue
            raise
        dropped.append(dotted)
    if not dropped:
        return None
    if not schema.fields:
        raise SchemaMismatchError(
            f"[DELTA_DROP_COLUMN_ON_SINGLE_FIELD_SCHEMA] Cannot drop every column of "
            f"{snapshot.root}: a Delta table needs one."
        )
    metadata = replace(snapshot.metadata, schema_string=schemas.to_delta_json(schema))
    return _commit(snapshot, Operation("DROP COLUMNS", {"columns": dropped}), metadata)


def _mapped_table(path: str, condition: str, what: str) -> Snapshot:
    snapshot = DeltaLog(path).snapshot()
    snapshot.check_writable()
    if mapping.mode(snapshot.configuration) == "none":
        raise DeltaAnalysisError(
            f"[{condition}] {what} is not supported for {snapshot.root}, which has no column "
            f"mapping: its files name the columns. {_MAPPING_ADVICE}"
        )
    return snapshot


def _struct_at(snapshot: Snapshot, path: Sequence[str]) -> StructType:
    struct = snapshot.schema
    for name in path:
        field = next((f for f in struct if f.name.lower() == name.lower()), None)
        if field is None or not isinstance(field.dataType, StructType):
            _not_found(snapshot, ".".join(path))
        struct = field.dataType
    return struct


def _edited(
    snapshot: Snapshot,
    struct: StructType,
    path: list[str],
    edit: Callable[[StructField], StructField | None],
) -> StructType:
    """``struct`` with the field at ``path`` replaced by ``edit(field)`` (None: dropped)."""
    fields: list[StructField] = []
    found = False
    for f in struct.fields:
        if found or f.name.lower() != path[0].lower():
            fields.append(f)
            continue
        found = True
        if len(path) == 1:
            new = edit(f)
            fields += [new] if new is not None else []
        elif isinstance(f.dataType, StructType):
            inner = _edited(snapshot, f.dataType, path[1:], edit)
            fields.append(StructField(f.name, inner, f.nullable, f.metadata))
        else:
            _not_found(snapshot, ".".join(path))
    if not found:
        _not_found(snapshot, ".".join(path))
    return StructType(fields)


def _not_found(snapshot: Snapshot, column: str) -> NoReturn:
    raise SchemaMismatchError(
        f"[DELTA_COLUMN_NOT_FOUND] Column {column} does not exist in {snapshot.root} "
        f"(columns: {', '.join(snapshot.schema.fieldNames())})."
    )


def _refuse_dependents(snapshot: Snapshot, field: StructField, change: str) -> None:
    """A constraint or generated column reading ``field`` would break: refused by name."""
    users = [u for u in _dependents(snapshot, field) if u != "its identity definition"]
    if users:
        kind = "GENERATED_COLUMNS" if users[0].startswith("generated") else "CONSTRAINT"
        raise SchemaMismatchError(
            f"[DELTA_{kind}_DEPENDENT_COLUMN_CHANGE] Cannot {change} column {field.name} of "
            f"{snapshot.root}: {'; '.join(users)} read(s) it. Drop those first."
        )
