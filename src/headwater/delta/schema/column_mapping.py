"""Column mapping: logical column names in the schema, physical names in the files.

Tables with ``delta.columnMapping.mode`` = ``name`` or ``id`` (written by Databricks and
delta-spark to allow renames and drops) store each column under the physical name kept in
the field's metadata; the log's partition values and stats use physical names too. Readers
look columns up by physical name and present them under their logical names.
"""

from __future__ import annotations

import uuid

import pyarrow as pa
from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType

PHYSICAL_NAME = "delta.columnMapping.physicalName"
COLUMN_ID = "delta.columnMapping.id"
PARQUET_FIELD_ID = "parquet.field.id"  # Spark's Parquet writer writes it as the field id
MODES = ("none", "name", "id")


def mode(configuration: dict[str, str]) -> str:
    return configuration.get("delta.columnMapping.mode", "none").lower()


MAX_COLUMN_ID = "delta.columnMapping.maxColumnId"


def assign(
    schema: StructType, configuration: dict[str, str], keep_names: bool = False
) -> StructType:
    """A schema with a mapping for every (nested) field, when its properties turn column
    mapping on (``name`` or ``id``) and the schema has none yet: ids 1, 2, ... depth first
    and, for a new table, ``col-<uuid>`` physical names, as delta-spark assigns them;
    ``keep_names`` (mapping turned on for an existing table, whose files hold the columns
    under their names): each field's own name. Records the highest id in
    ``configuration`` (``delta.columnMapping.maxColumnId``). Without this the table's log
    would name the mode with unmapped columns, which no reader accepts."""
    if mode(configuration) == "none" or is_mapped(schema):
        return schema
    counter = [int(configuration.get(MAX_COLUMN_ID, 0))]

    def walk(t: DataType) -> DataType:
        if isinstance(t, StructType):
            fields = []
            for f in t.fields:
                counter[0] += 1
                meta = {
                    **(f.metadata or {}),
                    COLUMN_ID: counter[0],
                    PHYSICAL_NAME: f.name if keep_names else f"col-{uuid.uuid4()}",
                }
                fields.append(StructField(f.name, walk(f.dataType), f.nullable, meta))
            return StructType(fields)
        if isinstance(t, ArrayType):
            return ArrayType(walk(t.elementType), t.containsNull)
        if isinstance(t, MapType):
            return MapType(walk(t.keyType), walk(t.valueType), t.valueContainsNull)
        return t

    mapped = walk(schema)
    configuration[MAX_COLUMN_ID] = str(counter[0])
    return mapped  # type: ignore[return-value]


def physical_schema(logical: StructType) -> StructType:
    """The schema as the data files hold it (physical names at every nesting level)."""
    return _physical(logical)  # type: ignore[return-value]


def is_mapped(schema: StructType) -> bool:
    return any(PHYSICAL_NAME in (f.metadata or {}) for f in schema.fields)


def without_mapping(schema: StructType) -> StructType:
    """``schema`` with no column-mapping ids or physical names, at any nesting level: a
    DataFrame read from a mapped table carries its source's, which a write must not take
    over (the target would name columns it does not hold and read as NULLs). delta-spark
    drops them on every write too; a mapped target keeps its own or assigns new ones."""
    return _unmapped(schema)  # type: ignore[return-value]


def _unmapped(t: DataType) -> DataType:
    if isinstance(t, StructType):
        return StructType(
            [
                StructField(
                    f.name,
                    _unmapped(f.dataType),
                    f.nullable,
                    {k: v for k, v in (f.metadata or {}).items() if k not in _MAPPING_KEYS},
                )
                for f in t.fields
            ]
        )
    if isinstance(t, ArrayType):
        return ArrayType(_unmapped(t.elementType), t.containsNull)
    if isinstance(t, MapType):
        return MapType(_unmapped(t.keyType), _unmapped(t.valueType), t.valueContainsNull)
    return t


_MAPPING_KEYS = (PHYSICAL_NAME, COLUMN_ID, PARQUET_FIELD_ID, "delta.columnMapping.nested.ids")


def file_schema(logical: StructType) -> StructType:
    """The schema to write data files with: physical names, and each column's mapping id
    as its Parquet field id (readers in ``id`` mode look columns up by it)."""
    return _physical(logical, for_files=True)  # type: ignore[return-value]


def _physical(t: DataType, for_files: bool = False) -> DataType:
    if isinstance(t, StructType):
        fields = []
        for f in t.fields:
            meta = f.metadata or {}
            if for_files:
                meta = {PARQUET_FIELD_ID: meta[COLUMN_ID]} if COLUMN_ID in meta else {}
            fields.append(
                StructField(
                    (f.metadata or {}).get(PHYSICAL_NAME, f.name),
                    _physical(f.dataType, for_files),
                    f.nullable,
                    meta,
                )
            )
        return StructType(fields)
    if isinstance(t, ArrayType):
        return ArrayType(_physical(t.elementType, for_files), t.containsNull)
    if isinstance(t, MapType):
        return MapType(
            _physical(t.keyType, for_files), _physical(t.valueType, for_files), t.valueContainsNull
        )
    return t


def logical_paths(logical: StructType) -> dict[str, str]:
    """Dotted physical path -> dotted logical path of every (nested) struct field, to
    rename the log's stats columns."""
    out: dict[str, str] = {}

    def walk(struct: StructType, phys: str, logi: str) -> None:
        for f in struct.fields:
            p = (f.metadata or {}).get(PHYSICAL_NAME, f.name)
            pp, lp = f"{phys}{p}", f"{logi}{f.name}"
            out[pp] = lp
            if isinstance(f.dataType, StructType):
                walk(f.dataType, pp + ".", lp + ".")

    walk(logical, "", "")
    return out


def rename(arr: pa.Array, physical: pa.DataType, logical: pa.DataType) -> pa.Array:
    """``arr`` (read under physical names) with the field names of ``logical``.

    Nested fields are matched by physical name, so files written before a column was
    added (missing the field) come back with nulls for it.
    """
    if pa.types.is_struct(logical) and pa.types.is_struct(arr.type):
        children = []
        for i, lf in enumerate(logical):
            pname = physical.field(i).name
            idx = arr.type.get_field_index(pname)
            if idx < 0:
                children.append(pa.nulls(len(arr), lf.type))
            else:
                children.append(rename(arr.field(idx), physical.field(i).type, lf.type))
        return pa.StructArray.from_arrays(children, fields=list(logical), mask=arr.is_null())
    if pa.types.is_list(logical) and pa.types.is_list(arr.type):
        values = rename(arr.values, physical.value_type, logical.value_type)
        return pa.ListArray.from_arrays(
            arr.offsets, values, type=pa.list_(logical.value_field), mask=arr.is_null()
        )
    if pa.types.is_map(logical) and pa.types.is_map(arr.type):
        keys = rename(arr.keys, physical.key_type, logical.key_type)
        items = rename(arr.items, physical.item_type, logical.item_type)
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=logical, mask=arr.is_null())
    return arr
