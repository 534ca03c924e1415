"""The typed API under the PySpark hooks: Delta tables by name or by path, read, written and
streamed into, without monkeypatching anything.

``spark.read.format("delta").load(p)``, ``df.write.saveAsTable(n)`` and
``df.writeStream.toTable(n)`` reach this module through the adapter
(:mod:`headwater.adapter`), which only translates PySpark's builder calls and string
options into the typed values here (:class:`~headwater.delta.options.WriteSpec`, save and
output modes). The pipelines runner, tests and notebooks call it directly::

    from headwater import api

    orders = api.table(spark, "silver.orders")            # by name (or "delta.`/path`")
    orders.write(df, api.WriteSpec(mode="append", merge_schema=True))
    orders.read(version=3)
    query = orders.start_stream(stream_df, checkpoint="/chk/orders", trigger={"availableNow": True})

This is the one door through which tables are changed: the adapter, ``headwater.sql``
(DDL, DML, MERGE, ALTER, RESTORE), COPY INTO and the pipelines all write through
:class:`Table`. So a table stays mirrored in Spark's own catalog (SQL sees new columns):
every change that creates it or changes its schema registers it again, under every name it
has (``tests/test_codebase.py`` keeps the mirror's registration here and in the catalog).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import DataStreamReader, StreamingQuery
from pyspark.sql.types import DataType, StructField, StructType

from headwater import engines
from headwater.catalog import Catalog, TableEntry
from headwater.catalog.names import delta_path, parse
from headwater.delta.dml import delete_update as dml
from headwater.delta.dml.merge import merge as delta_merge
from headwater.delta.dml.rewrite import Result as MergeResult
from headwater.delta.log import clustering
from headwater.delta.log.commit import Transaction
from headwater.delta.log.delta_log import DeltaLog, Snapshot
from headwater.delta.log.operations import Operation
from headwater.delta.options import (
    STREAM_READ_OPTIONS,
    OutputMode,
    SaveMode,
    WriteSpec,
    check_known,
    with_time_travel,
)
from headwater.delta.read.batch import read_appended, read_delta
from headwater.delta.schema.expressions import ExprLike
from headwater.delta.schema.merge_clauses import Clause
from headwater.delta.tables import DeltaTable
from headwater.delta.write import alter
from headwater.delta.write.batch import WriteResult, write
from headwater.delta.write.convert import convert_to_delta as convert_to_delta_table
from headwater.delta.write.create import replace_table
from headwater.delta.write.sink import DeltaStreamSink
from headwater.engines import delta_spark, headwater_writes
from headwater.engines.door import RecordedAppend, SnapshotView, TableDoor
from headwater.engines.streams import start_batches
from headwater.engines.table_log import TableLog
from headwater.errors import TableAlreadyExistsError, TableNotFoundError
from headwater.originals import original

__all__ = [
    "BatchFunction",
    "Clause",
    "MergeResult",
    "OutputMode",
    "SaveMode",
    "Table",
    "TableDoor",
    "WriteResult",
    "WriteSpec",
    "find",
    "for_path",
    "start_foreach_batch",
    "table",
]

BatchFunction = Callable[[DataFrame, int], object]
"""What ``foreachBatch`` calls: a micro-batch and its id."""


@dataclass(frozen=True)
class Table:
    """A Delta table at ``location``; ``entry`` is its catalog entry when it has a name."""

    spark: SparkSession
    location: str
    entry: TableEntry | None = None
    # A DataFrame's observed metrics (Observation) arrive when it is written here.
    observes_writes: ClassVar[bool] = True
    # Rows held in Arrow are committed without a Spark job (append_arrow, overwrite_arrow).
    commits_arrow: ClassVar[bool] = True

    @property
    def name(self) -> str:
        return str(self.entry.name) if self.entry is not None else f"delta.`{self.location}`"

    def exists(self) -> bool:
        return DeltaLog(self.location).exists()

    def log(self) -> TableLog:
        """The table's log (versions, commits, files and their stats), read-only."""
        return TableLog(self.location)

    def delta_table(self) -> DeltaTable:
        """delta-spark's ``DeltaTable`` API on this table (MERGE, UPDATE, history...)."""
        return DeltaTable.forPath(self.spark, self.location)

    # -- reading -----------------------------------------------------------------------------

    def read(
        self,
        version: int | None = None,
        timestamp: str | None = None,
        options: Mapping[str, str] | None = None,
    ) -> DataFrame:
        """The rows at the latest version, or at ``version`` / ``timestamp`` (time travel);
        ``options`` are the ``delta`` reader's (the change data feed)."""
        return read_delta(self.spark, self.location, with_time_travel(options, version, timestamp))

    def read_appended(self, since: int, until: int) -> DataFrame | None:
        """Only the rows appended after version ``since`` up to ``until``; None when the
        commits between did more than append (see
        :func:`headwater.delta.read.batch.read_appended`)."""
        return read_appended(self.spark, self.location, since, until)

    def read_stream(self, options: Mapping[str, str] | None = None) -> DataFrame:
        """A streaming read of the table's changes (``startingVersion``, ``maxFilesPerTrigger``,
        ``skipChangeCommits``, ``readChangeFeed``, ...), checked before Spark plans it."""
        opts = {str(k): str(v) for k, v in (options or {}).items()}
        check_known(opts, STREAM_READ_OPTIONS, "streaming from a delta table")
        reader = original(DataStreamReader, "format")(self.spark.readStream, "delta")
        reader = original(DataStreamReader, "options")(reader, **opts)
        return original(DataStreamReader, "load")(reader, self.location)

    # -- writing -----------------------------------------------------------------------------

    def write(
        self, df: DataFrame, spec: WriteSpec, operation: Operation | None = None
    ) -> WriteResult:
        """Write ``df`` as one commit (see :func:`headwater.delta.write.batch.write`);
        ``operation`` names it in the history (CREATE TABLE AS SELECT)."""
        result = write(df, self.location, spec, operation)
        if result.created or result.schema_changed:
            self._mirror()
        return result

    def sink(
        self,
        checkpoint: str,
        output_mode: OutputMode = "append",
        spec: WriteSpec | None = None,
        on_commit: Callable[[WriteResult], None] | None = None,
    ) -> DeltaStreamSink:
        """The ``foreachBatch`` function committing each micro-batch once to this table;
        ``on_commit`` sees each batch's result (not called for a batch already committed)."""

        def committed(result: WriteResult) -> None:
            if result.created or result.schema_changed:
                self._mirror()
            if on_commit is not None:
                on_commit(result)

        return DeltaStreamSink(self.location, checkpoint, output_mode, spec, committed)

    def start_stream(
        self,
        df: DataFrame,
        checkpoint: str,
        output_mode: OutputMode = "append",
        spec: WriteSpec | None = None,
        trigger: Mapping[str, str | bool] | None = None,
        query_name: str | None = None,
        on_commit: Callable[[WriteResult], None] | None = None,
        wrap: Callable[[DeltaStreamSink], BatchFunction] | None = None,
    ) -> StreamingQuery:
        """Stream ``df`` into this table, exactly once per micro-batch; ``trigger`` as
        ``DataStreamWriter.trigger`` takes it (``{"availableNow": True}``,
        ``{"processingTime": "10 seconds"}``; default: as fast as possible). ``wrap`` may
        decorate the function that commits each batch (the pipelines check expectations
        around it)."""
        sink = self.sink(checkpoint, output_mode, spec, on_commit)
        function = wrap(sink) if wrap else sink
        return start_batches(df, function, checkpoint, output_mode, trigger, query_name)

    def merge(
        self,
        source: DataFrame,
        condition: ExprLike,
        clauses: list[Clause],
        txn: tuple[str, int] | None = None,
        target_alias: str = "target",
        evolve: bool = False,
        user_metadata: str | None = None,
    ) -> MergeResult:
        """MERGE ``source`` into this table as one commit (delta-spark's semantics).
        ``txn`` (application id, version) makes it exactly-once for a caller that replays
        batches: a version already recorded for that application commits nothing.
        ``evolve``: source columns the table lacks are added (schema evolution);
        ``user_metadata``: the commit's ``userMetadata``."""
        result = delta_merge(
            self.spark,
            self.location,
            source,
            condition,
            clauses,
            target_alias,
            evolve,
            txn,
            user_metadata,
        )
        if result.schema_changed:
            self._mirror()
        return result

    def update(
        self, condition: ExprLike | None, assignments: Mapping[str, ExprLike]
    ) -> MergeResult:
        """UPDATE the rows where ``condition`` holds (every row: None)."""
        return dml.update(self.spark, self.location, condition, assignments)

    def delete(self, condition: ExprLike | None) -> MergeResult:
        """DELETE the rows where ``condition`` holds (every row: None)."""
        return dml.delete(self.spark, self.location, condition)

    def commit(self, txn: Transaction) -> int:
        """Commit a transaction staged on this table; the version."""
        version = txn.commit()
        if txn.changes_schema:
            self._mirror()
        return version

    def append_arrow(self, rows: pa.Table, schema: StructType) -> WriteResult:
        """``rows`` appended as one commit: without a Spark job where the table takes such
        an append (:func:`headwater.engines.headwater_writes.append_arrow`), else written
        through Spark."""
        found = headwater_writes.append_arrow(self.location, rows, schema, self.commit)
        if found is not None:
            return found
        return self.write(self.spark.createDataFrame(rows, schema), WriteSpec(mode="append"))

    def overwrite_arrow(
        self, rows: pa.Table, read: SnapshotView, user_metadata: str | None = None
    ) -> WriteResult:
        """The table's rows replaced by ``rows`` in one commit, without a Spark job; a
        conflict when the table changed since ``read``."""
        assert isinstance(read, Snapshot)
        return headwater_writes.overwrite_arrow(rows, read, user_metadata, self.commit)

    def append_recorded(self, df: DataFrame | None, append: RecordedAppend) -> WriteResult:
        """``df`` and its record in one commit, checked by ``append.requirement``
        (:func:`headwater.engines.headwater_writes.append_recorded`)."""
        result = headwater_writes.append_recorded(self.location, df, append, Transaction.commit)
        if result.created or result.schema_changed:
            self._mirror()
        return result

    def optimize(
        self, where: str | None = None, z_order_by: Sequence[str] = (), full: bool = False
    ) -> DataFrame:
        return headwater_writes.optimize(self.spark, self.location, where, list(z_order_by), full)

    def vacuum(self, retention_hours: float | None = None, dry_run: bool = False) -> DataFrame:
        return headwater_writes.vacuum(self.spark, self.location, retention_hours, dry_run)

    # -- table definition ------------------------------------------------------------------

    def replace(
        self,
        schema: StructType,
        partition_by: Sequence[str] = (),
        properties: Mapping[str, str] | None = None,
        description: str | None = None,
    ) -> None:
        """Replace the table's definition by an empty table of ``schema`` (CREATE OR
        REPLACE); its history stays, as delta-spark keeps it."""
        replace_table(
            self.location, schema, partition_by, properties, description, create_if_missing=True
        )
        self._mirror()

    def add_columns(self, fields: Iterable[StructField]) -> None:
        """ALTER TABLE ADD COLUMNS (nullable; existing rows read them as null)."""
        alter.add_columns(self.location, list(fields))
        self._mirror()

    def change_column(
        self,
        column: str,
        new_type: DataType | None = None,
        comment: str | None = None,
        position: str | None = None,
        nullable: bool | None = None,
    ) -> None:
        """ALTER COLUMN ``column`` TYPE (a Delta type widening), COMMENT, position (``FIRST``
        / ``AFTER other``) and/or nullability (DROP / SET NOT NULL)."""
        alter.change_column(self.location, column, new_type, comment, position, nullable)
        self._mirror()

    def rename_column(self, column: Sequence[str], new_name: str) -> None:
        """ALTER TABLE RENAME COLUMN ``a[.b]`` TO ``new_name`` (needs column mapping)."""
        alter.rename_column(self.location, column, new_name)
        self._mirror()

    def drop_columns(self, columns: Sequence[Sequence[str]], if_exists: bool = False) -> None:
        """ALTER TABLE DROP COLUMN[S] (each a path ``[a, b]``; needs column mapping)."""
        alter.drop_columns(self.location, columns, if_exists)
        self._mirror()

    def set_properties(self, properties: Mapping[str, str]) -> None:
        alter.set_properties(self.location, properties)

    def unset_properties(self, keys: list[str], if_exists: bool = False) -> None:
        alter.unset_properties(self.location, keys, if_exists)

    def cluster_by(self, columns: Sequence[str] | None) -> None:
        """Liquid clustering by ``columns`` from now on (None: no longer clustered)."""
        clustering.alter(self.location, columns)

    def add_constraint(self, name: str, expression: str) -> None:
        """ADD CONSTRAINT ``name`` CHECK (``expression``), checked against every row."""
        alter.add_constraint(self.spark, self.location, name, expression)

    def drop_constraint(self, name: str, if_exists: bool = False) -> None:
        alter.drop_constraint(self.location, name, if_exists)

    def _mirror(self) -> None:
        """Show the table's schema as it is now in Spark's catalog: under its name, or
        (opened by path) under every name that points at its location."""
        catalog = Catalog.of(self.spark)
        if self.entry is not None:
            catalog.register_in_spark(self.entry)
        else:
            catalog.changed(self.location)


def start_foreach_batch(
    df: DataFrame,
    function: BatchFunction,
    checkpoint: str,
    trigger: Mapping[str, str | bool] | None = None,
    query_name: str | None = None,
) -> StreamingQuery:
    """Stream ``df`` into ``function`` (``foreachBatch``) with ``checkpoint``: for callers
    whose batches do more than append (MERGE, several tables), each idempotent by its own
    Delta transaction id and the batch id."""
    return start_batches(df, function, checkpoint, None, trigger, query_name)


def for_path(spark: SparkSession, path: str) -> TableDoor:
    """The table at ``path`` (it may not exist yet: a write creates it), on the session's
    Delta engine."""
    if engines.of(spark) == engines.DELTA_SPARK:
        return delta_spark.for_path(spark, path)
    return Table(spark, DeltaLog(path).root)


def table(
    spark: SparkSession, name: str, location: str | None = None, create: bool = True
) -> TableDoor:
    """The table ``name`` (``db.t``, ``t`` or ``delta.`/path```). With ``create`` a name
    not known yet is recorded in the catalog (at ``location``, or managed in the
    warehouse), ready for a first write; without, it must exist. On delta-spark, names are
    the session catalog's."""
    by_path = delta_path(name)
    if by_path is not None:
        return for_path(spark, by_path)
    if engines.of(spark) == engines.DELTA_SPARK:
        return delta_spark.by_name(spark, name, location, create)
    catalog = Catalog.of(spark)
    entry = catalog.get(name)
    if entry is not None:
        if location is not None and DeltaLog(location).root != entry.location:
            raise TableAlreadyExistsError(
                f"Table {entry.name} already exists at {entry.location}, not at {location}."
            )
        return Table(spark, entry.location, entry)
    if not create:
        raise TableNotFoundError(
            f"[TABLE_OR_VIEW_NOT_FOUND] Table '{name}' not found. Create it with a write "
            "(df.write.saveAsTable) or CREATE TABLE."
        )
    new = catalog.entry_for_write(name, location)
    return Table(spark, new.location, new)


def find(spark: SparkSession, name: str) -> TableDoor | None:
    """The existing Delta table ``name``, or None when the name is not one (it may be
    a table or view of Spark's own)."""
    by_path = delta_path(name)
    if by_path is not None:
        return for_path(spark, by_path)
    if engines.of(spark) == engines.DELTA_SPARK:
        return delta_spark.find(spark, name)
    entry = Catalog.of(spark).get(name)
    return Table(spark, entry.location, entry) if entry is not None else None


def schemaless_entry(spark: SparkSession, name: str) -> TableEntry | None:
    """The catalog entry of ``name`` when it is a table without columns yet (no Delta log:
    ``CREATE TABLE t`` without columns, which its first COPY INTO gives a schema), else
    None. Only headwater's catalog keeps such tables: on delta-spark, always None."""
    if engines.of(spark) == engines.DELTA_SPARK:
        return None
    return Catalog.of(spark).registry.get(parse(name))


def create_schemaless(
    spark: SparkSession, name: str, location: str | None = None, if_not_exists: bool = True
) -> TableEntry:
    """Record ``name`` as a table without columns (see :func:`schemaless_entry`); a named
    error on delta-spark, whose session catalog has no such tables."""
    engines.require_headwater(spark, "A table without columns (CREATE TABLE t without columns)")
    catalog = Catalog.of(spark)
    tname = parse(name)
    existing = catalog.registry.get(tname)
    if existing is not None:
        if if_not_exists:
            return existing
        raise TableAlreadyExistsError(f"Table {tname} already exists.")
    return catalog.entry_for_write(name, location)


def table_names(spark: SparkSession) -> list[str]:
    """The names of the tables the session's engine knows, for "not found" errors."""
    if engines.of(spark) == engines.DELTA_SPARK:
        return [t.name for t in spark.catalog.listTables()]
    return [str(e.name) for e in Catalog.of(spark).list_tables()]


def convert_to_delta(
    spark: SparkSession, identifier: str, partitions: str | None = None, statistics: bool = True
) -> None:
    """``CONVERT TO DELTA parquet.`/path```: a folder of Parquet files becomes a Delta table
    in place, on the session's engine (``partitions``: ``"day DATE, ..."``; ``statistics``
    False: NO STATISTICS)."""
    if engines.of(spark) == engines.DELTA_SPARK:
        from delta.tables import DeltaTable as SparkDeltaTable

        SparkDeltaTable.convertToDelta(spark, identifier, partitions)
        return
    convert_to_delta_table(spark, identifier, partitions, statistics=statistics)
