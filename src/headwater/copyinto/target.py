"""The table a COPY INTO loads into: a Delta table by name or by ``delta.`/path```.

A *schemaless* target is a table with no columns yet, which takes the schema of the files
it first loads (``FORMAT_OPTIONS('inferSchema'='true')`` + ``COPY_OPTIONS('mergeSchema'=
'true')``). delta-rs cannot create a Delta table without columns, so such a table is a
catalog entry whose location holds no Delta log yet (see :func:`create_schemaless_table`,
which ``CREATE TABLE IF NOT EXISTS t`` without columns uses); the first COPY INTO creates
the log. A Delta table with an empty schema written by another engine is schemaless too.

The table is reached through the session's door (:func:`headwater.api.find` /
:func:`headwater.api.for_path`), so on delta-spark names are the session catalog's. Tables
without columns are entries of headwater's own catalog, which a delta-spark session does
not have: there ``create_schemaless_table`` is a named error (create the table with its
columns, and ``mergeSchema`` adds the files' new ones).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from headwater import api
from headwater.catalog import TableEntry
from headwater.catalog.names import delta_path
from headwater.engines.door import SnapshotView, TableDoor, TableLog, table_log
from headwater.errors import TableNotFoundError


@dataclass
class Target:
    text: str  # as the user wrote it
    log: TableLog
    door: TableDoor  # the table on the session's engine: what the load commits through
    snapshot: SnapshotView | None  # None: no Delta log yet (a schemaless named table)

    @property
    def root(self) -> str:
        return self.log.root

    @property
    def schema(self) -> StructType:
        return self.snapshot.schema if self.snapshot is not None else StructType([])

    @property
    def schemaless(self) -> bool:
        return not self.schema.fields

    @property
    def version(self) -> int | None:
        return self.snapshot.version if self.snapshot is not None else None

    @property
    def partition_columns(self) -> list[str]:
        return self.snapshot.partition_columns if self.snapshot is not None else []

    def table_id(self) -> str | None:
        return self.snapshot.metadata.id if self.snapshot is not None else None


def resolve(spark: SparkSession, target: str) -> Target:
    """The target table, loaded; a clear error when it is not a (schemaless) Delta table."""
    if not target or not str(target).strip():
        raise TableNotFoundError("COPY INTO needs a target table: COPY INTO db.table FROM ...")
    path = delta_path(target)
    if path is not None:
        dlog = table_log(path)
        if not dlog.exists():
            dlog.require_table_or_empty()  # a directory of other files: say so
            raise TableNotFoundError(
                f"COPY INTO target delta.`{path}` is not a Delta table. Create it first "
                "(DeltaTable.create(spark).location(...)), or load into a table by name."
            )
        return _loaded(target, dlog, api.for_path(spark, path))
    found = api.find(spark, target)
    if found is not None:
        return _loaded(target, found.log(), found)
    entry = api.schemaless_entry(spark, target)
    if entry is None:
        known = ", ".join(api.table_names(spark))
        raise TableNotFoundError(
            f"COPY INTO target table '{target}' not found (known tables: {known or 'none'}). "
            f"Create it first; CREATE TABLE IF NOT EXISTS {target} without columns makes a "
            "schemaless table that takes the files' schema with "
            "COPY_OPTIONS('mergeSchema'='true')."
        )
    door = api.table(spark, target, entry.location)
    dlog = door.log()
    if dlog.require_table_or_empty():
        return _loaded(target, dlog, door)
    return Target(target, dlog, door, None)


def _loaded(text: str, dlog: TableLog, door: TableDoor) -> Target:
    return Target(text, dlog, door, dlog.snapshot())


def create_schemaless_table(
    spark: SparkSession, name: str, location: str | None = None, if_not_exists: bool = True
) -> TableEntry:
    """Register ``name`` as a table with no columns yet (``CREATE TABLE [IF NOT EXISTS] t``).

    Nothing is written until the first COPY INTO gives it a schema; until then the name is
    known to COPY INTO only (``spark.table`` reports it as not found, as it has no data).
    A name kept by headwater's catalog: on delta-spark, a named error.
    """
    entry = api.create_schemaless(spark, name, location, if_not_exists)
    table_log(entry.location).require_table_or_empty()  # refuse a directory of other files
    return entry
