"""Table schemas: Spark <-> Delta conversion, and the rules for evolving them on write.

Delta's schema JSON is Spark's ``StructType`` JSON, so conversion is exact. Tables written
from DataFrames get nullable columns, as delta-spark does: that keeps the protocol at
writer version 2, which every Delta reader accepts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from deltalake import Schema as DeltaSchema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    MapType,
    NullType,
    StructField,
    StructType,
)

from headwater.errors import SchemaMismatchError
from headwater.sqltypes import as_nullable


def with_declared_not_null(schema: StructType) -> StructType:
    """``schema`` as a new table stores it: top-level columns keep the nullability they
    were declared with (NOT NULL is enforced on every write), nested fields are nullable."""
    return StructType(
        [StructField(f.name, as_nullable(f.dataType), f.nullable, f.metadata) for f in schema]
    )


def to_delta(schema: StructType) -> DeltaSchema:
    return DeltaSchema.from_json(to_delta_json(schema))


def to_delta_json(schema: StructType) -> str:
    """The ``schemaString`` of a Delta metaData action (Spark's own schema JSON)."""
    return json.dumps(schema.jsonValue(), separators=(",", ":"))


def from_delta_json(schema_string: str) -> StructType:
    return StructType.fromJson(json.loads(schema_string))


def check_writable(schema: StructType, partition_by: list[str]) -> None:
    """Refuse schemas Delta cannot store, naming the column."""
    names = [f.name.lower() for f in schema]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SchemaMismatchError(f"Duplicate column name(s) in the data: {', '.join(dupes)}")
    for f in schema:
        if isinstance(f.dataType, NullType):
            raise SchemaMismatchError(
                f"Column `{f.name}` has no type (NullType, e.g. from lit(None)); cast it to a type "
                "before writing it to a Delta table."
            )
    by_name = {f.name.lower(): f for f in schema}
    for col in partition_by:
        field = by_name.get(col.lower())
        if field is None:
            raise SchemaMismatchError(
                f"Partition column `{col}` is not in the data; columns are {', '.join(f.name for f in schema)}"
            )
        if isinstance(field.dataType, (StructType, ArrayType, MapType, BinaryType)):
            raise SchemaMismatchError(
                f"Partition column `{col}` has type {field.dataType.simpleString()}; Delta partitions "
                "only by primitive columns."
            )
    if partition_by and len(partition_by) == len(schema.fields):
        raise SchemaMismatchError(
            "Cannot partition by every column: a Delta table needs a data column."
        )


@dataclass
class Reconciled:
    """The schema a write commits, and the columns it adds to the table."""

    schema: StructType
    added: list[str]


def reconcile(table: StructType, data: StructType, merge: bool) -> Reconciled:
    """Fit ``data`` into ``table`` by column name (case-insensitive, as Spark resolves).

    Missing columns are allowed (they read as null). New columns need ``mergeSchema``;
    a different type is always refused (delta-spark only widens with type widening on).
    """
    fields, added = _merge_struct(table, data, merge, prefix="")
    return Reconciled(StructType(fields), added)


def _merge_struct(
    table: StructType, data: StructType, merge: bool, prefix: str
) -> tuple[list[StructField], list[str]]:
    incoming = {f.name.lower(): f for f in data}
    fields: list[StructField] = []
    added: list[str] = []
    mismatched: list[str] = []
    for tf in table:
        df_field = incoming.pop(tf.name.lower(), None)
        if df_field is None:
            fields.append(tf)
            continue
        name = prefix + tf.name
        if isinstance(tf.dataType, StructType) and isinstance(df_field.dataType, StructType):
            sub, sub_added = _merge_struct(tf.dataType, df_field.dataType, merge, name + ".")
            fields.append(StructField(tf.name, StructType(sub), tf.nullable, tf.metadata))
            added += sub_added
        elif _same_type(tf.dataType, df_field.dataType):
            fields.append(tf)
        else:
            mismatched.append(
                f"`{name}` is {tf.dataType.simpleString()} in the table but "
                f"{df_field.dataType.simpleString()} in the data"
            )
    if mismatched:
        raise SchemaMismatchError(
            "[DELTA_FAILED_TO_MERGE_FIELDS] Cannot write: column types differ from the table "
            "schema: "
            + "; ".join(mismatched)
            + ". Cast the columns, or overwrite with option overwriteSchema=true."
        )
    extra = [prefix + f.name for f in incoming.values()]
    if extra and not merge:
        raise SchemaMismatchError(
            "[DELTA_METADATA_MISMATCH] Cannot write: the data has column(s) "
            + ", ".join(f"`{c}`" for c in extra)
            + " that the table does not have. Set option mergeSchema=true to add them, or "
            "drop them from the data."
        )
    for f in incoming.values():
        fields.append(StructField(f.name, as_nullable(f.dataType), True, f.metadata))
        added.append(prefix + f.name)
    return fields, added


def _same_type(a: DataType, b: DataType) -> bool:
    if isinstance(b, NullType):
        return True
    return as_nullable(a) == as_nullable(b) or a.simpleString() == b.simpleString()
