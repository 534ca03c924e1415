"""Batch writes: ``df.write`` (``save``, ``saveAsTable``, ``insertInto``) and ``df.writeTo``
into Delta tables, as :mod:`headwater.api` calls.

A write that is not to a Delta table reaches Spark unchanged. What Delta tables cannot do
is refused by name instead of silently done otherwise: ``bucketBy``/``sortBy`` (Delta has
no buckets), partition transforms in
``writeTo(...).partitionedBy``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from headwater import api, engines
from headwater.adapter.state import BuilderState, state_of
from headwater.delta.options import WriteSpec, condition_text, save_mode
from headwater.errors import (
    OptionError,
    SchemaMismatchError,
    TableAlreadyExistsError,
    UnsupportedOperationError,
)

Method = Callable[..., Any]


def refuse_layout(state: BuilderState, what: str, cluster_by_ok: bool = False) -> None:
    """``bucketBy``, ``sortBy`` (and, where the write cannot define the table,
    ``clusterBy``) on a Delta write: a named error. Batch writes pass ``clusterBy`` on
    (:func:`_clustered`)."""
    refused = [
        ("bucketBy", state.bucket_by, "Delta tables have no buckets; use partitionBy."),
        ("sortBy", state.sort_by, "Delta tables have no buckets to sort; sort the data."),
    ]
    if not cluster_by_ok:
        refused.append(
            (
                "clusterBy",
                state.cluster_by,
                "cluster the table when creating it (CREATE TABLE ... CLUSTER BY, or a batch "
                "df.write.clusterBy), then run OPTIMIZE.",
            )
        )
    for setting, value, remedy in refused:
        if value:
            raise UnsupportedOperationError(
                f"[DELTA_UNSUPPORTED_WRITE] {what}: {setting}({', '.join(value)}) is not "
                f"supported on a Delta table; {remedy}"
            )


def _clustered(spec: WriteSpec, state: BuilderState) -> WriteSpec:
    """``clusterBy(...)`` on the writer: the table is (or must already be) clustered so."""
    return replace(spec, cluster_by=tuple(state.cluster_by)) if state.cluster_by else spec


def _partitions(arg: str | list[str] | None, state: BuilderState) -> list[str] | None:
    if arg is None:
        return state.partition_by
    return [arg] if isinstance(arg, str) else list(arg)


def _pop(options: dict[str, str], name: str) -> str | None:
    key = next((k for k in options if k.lower() == name), None)
    return options.pop(key) if key is not None else None


def writer_save(original: Method) -> Method:
    def save(self, path=None, format=None, mode=None, partitionBy=None, **options):
        state = state_of(self)
        if not state.is_format("delta", format, engines.delta_by_default(self._df.sparkSession)):
            return original(self, path, format, mode, partitionBy, **options)
        refuse_layout(state, "df.write.format('delta').save", cluster_by_ok=True)
        opts = state.merged(options)
        path = path or _pop(opts, "path")
        _pop(opts, "path")
        if not path:
            raise OptionError("Writing format('delta') needs a path: .save('/path/to/table').")
        spec = WriteSpec.from_options(opts, mode or state.mode, _partitions(partitionBy, state))
        api.for_path(self._df.sparkSession, path).write(self._df, _clustered(spec, state))

    return save


def writer_save_as_table(original: Method) -> Method:
    def saveAsTable(self, name, format=None, mode=None, partitionBy=None, **options):
        state = state_of(self)
        if not state.is_format("delta", format, engines.delta_by_default(self._df.sparkSession)):
            return original(self, name, format, mode, partitionBy, **options)
        refuse_layout(state, f"saveAsTable('{name}')", cluster_by_ok=True)
        spark = self._df.sparkSession
        opts = state.merged(options)
        location = _pop(opts, "path")
        chosen = save_mode(mode or state.mode)
        existing = api.find(spark, name)
        if existing is not None and existing.exists():
            if chosen == "error":
                raise TableAlreadyExistsError(
                    f"[TABLE_OR_VIEW_ALREADY_EXISTS] Table {existing.name} already exists; "
                    "use mode('append') or mode('overwrite')."
                )
            if chosen == "ignore":
                return None
        # A new table is created by the write (errorifexists and ignore then mean append).
        write_mode = chosen if chosen in ("append", "overwrite") else "append"
        spec = WriteSpec.from_options(opts, write_mode, _partitions(partitionBy, state))
        spec = dataclasses.replace(spec, as_table=True)
        api.table(spark, name, location).write(self._df, _clustered(spec, state))
        return None

    return saveAsTable


def writer_insert_into(original: Method) -> Method:
    def insertInto(self, tableName, overwrite=None):
        state = state_of(self)
        found = api.find(self._df.sparkSession, tableName)
        if found is None or not found.exists():
            return original(self, tableName, overwrite)
        refuse_layout(state, f"insertInto('{tableName}')")
        replace = overwrite if overwrite is not None else save_mode(state.mode) == "overwrite"
        rows = by_position(self._df, found)
        found.write(rows, WriteSpec(mode="overwrite" if replace else "append"))

    return insertInto


def by_position(df: DataFrame, table: api.TableDoor) -> DataFrame:
    """``insertInto`` matches columns by position, as Spark does, cast to the table's types."""
    schema = table.delta_table().toDF().schema
    if len(df.columns) != len(schema.fields):
        raise SchemaMismatchError(
            f"insertInto {table.name}: the data has {len(df.columns)} column(s), the table "
            f"{len(schema.fields)} ({', '.join(schema.fieldNames())}); insertInto matches "
            "columns by position. Select the table's columns in order, or use saveAsTable "
            "with mode('append'), which matches them by name."
        )
    return df.select(
        *[
            F.col(f"`{c}`").cast(f.dataType).alias(f.name)
            for c, f in zip(df.columns, schema.fields, strict=True)
        ]
    )


# -- df.writeTo(table) -------------------------------------------------------------------------


def dataframe_write_to(original: Method) -> Method:
    def writeTo(self, table):
        writer = original(self, table)
        state_of(writer).table = table
        return writer

    return writeTo


def _v2_target(writer: Any, create: bool) -> api.TableDoor | None:
    """The headwater table a ``writeTo`` writes, or None when it is Spark's to write."""
    state = state_of(writer)
    spark: SparkSession = writer._spark
    found = api.find(spark, state.table or "")
    if found is not None and (found.exists() or create):
        if not state.is_format("delta", default=True):  # an existing Delta table: Delta
            raise UnsupportedOperationError(
                f"writeTo('{state.table}').using('{state.format}'): {found.name} is a Delta "
                "table; drop using(...) or use using('delta')."
            )
        refuse_layout(state, f"writeTo('{state.table}')", cluster_by_ok=True)
        return found
    if create and state.is_format("delta", default=engines.delta_by_default(spark)):
        return api.table(spark, state.table or "")
    return None


def _v2_spec(state: BuilderState, **spec: Any) -> WriteSpec:
    parts = []
    for col in state.partition_columns or []:
        name = col if isinstance(col, str) else condition_text(col)
        if not name or not name.replace("_", "").replace("`", "").isalnum():
            raise UnsupportedOperationError(
                f"writeTo('{state.table}').partitionedBy({col}): Delta tables are partitioned "
                "by columns, not transforms; add the derived column and partition by it."
            )
        parts.append(name.strip("`"))
    base = WriteSpec.from_options(state.merged(), spec.pop("mode", "append"), parts)
    return _clustered(replace(base, configuration=dict(state.properties) or None, **spec), state)


def v2_append(original: Method) -> Method:
    def append(self):
        target = _v2_target(self, create=False)
        if target is None:
            return original(self)
        target.write(self._df, _v2_spec(state_of(self)))

    return append


def v2_overwrite(original: Method) -> Method:
    def overwrite(self, condition: Column | str):
        target = _v2_target(self, create=False)
        if target is None:
            return original(self, condition)
        text = condition if isinstance(condition, str) else condition_text(condition)
        if not text:
            raise OptionError(
                f"writeTo('{target.name}').overwrite({condition}): give the condition as SQL "
                "text (overwrite(\"day = '2024-06-01'\")) or a simple Column expression."
            )
        target.write(self._df, _v2_spec(state_of(self), mode="overwrite", replace_where=text))

    return overwrite


def v2_overwrite_partitions(original: Method) -> Method:
    def overwritePartitions(self):
        target = _v2_target(self, create=False)
        if target is None:
            return original(self)
        spec = _v2_spec(state_of(self), mode="overwrite")
        predicate = _partitions_of(self._df, target)
        if predicate is not None:
            spec = replace(spec, replace_where=predicate)
        target.write(self._df, spec)

    return overwritePartitions


def _partitions_of(df: DataFrame, table: api.TableDoor) -> str | None:
    """A predicate selecting exactly the partitions ``df`` holds (dynamic partition
    overwrite); None for an unpartitioned table (the whole table is replaced)."""
    parts = list(table.delta_table().detail().collect()[0].partitionColumns)
    if not parts:
        return None
    values = df.select(*[F.col(f"`{p}`").cast("string") for p in parts]).distinct().collect()
    if not values:
        return "false"

    def literal(value: str | None) -> str:
        return "NULL" if value is None else "'" + value.replace("'", "''") + "'"

    terms = []
    for row in values:
        tests = [
            f"`{p}` IS NULL" if v is None else f"CAST(`{p}` AS STRING) = {literal(v)}"
            for p, v in zip(parts, row, strict=True)
        ]
        terms.append("(" + " AND ".join(tests) + ")")
    return " OR ".join(terms)


def v2_create(original: Method) -> Method:
    def create(self):
        target = _v2_target(self, create=True)
        if target is None:
            return original(self)
        if target.exists():
            raise TableAlreadyExistsError(
                f"[TABLE_OR_VIEW_ALREADY_EXISTS] writeTo('{target.name}').create(): the table "
                "already exists; use append(), replace() or createOrReplace()."
            )
        target.write(self._df, _v2_spec(state_of(self), mode="error", as_table=True))

    return create


def v2_replace(original: Method) -> Method:
    def replace_(self):
        target = _v2_target(self, create=False)
        if target is None:
            return original(self)
        target.write(self._df, _v2_spec(state_of(self), mode="overwrite", overwrite_schema=True))

    return replace_


def v2_create_or_replace(original: Method) -> Method:
    def createOrReplace(self):
        target = _v2_target(self, create=True)
        if target is None:
            return original(self)
        # CREATE [OR REPLACE] TABLE AS SELECT in the history, as delta-spark names them.
        if not target.exists():
            target.write(self._df, _v2_spec(state_of(self), mode="error", as_table=True))
            return
        spec = _v2_spec(state_of(self), mode="overwrite", overwrite_schema=True, as_table=True)
        target.write(self._df, spec)

    return createOrReplace
