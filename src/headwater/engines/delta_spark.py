"""The table door on delta-spark: the same methods as ``api.Table``, done by Delta's own
Spark connector.

Upper layers (the pipelines, Auto Loader's streams, the SQL front) call ``api.table(...)``
and get this class on a delta-spark session; every change goes through delta-spark's
public API — its ``delta`` writer and ``DeltaTable`` — so its rules apply: its conflict
detection, its table features, the session catalog (a Hive metastore where the user
configured one). What headwater keeps doing itself is what the Delta protocol lets any
reader do: read the log (delta-rs) to learn versions and which files an append added.

Exactly once is the engines' common rule: a write carrying a transaction ``(app_id,
version)`` that the table already recorded commits nothing. delta-spark takes it as the
writer's ``txnAppId``/``txnVersion`` options, and for MERGE as the session settings
``spark.databricks.delta.write.txnAppId``/``txnVersion`` (set under a lock, for the one
statement), as it takes ``userMetadata``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import unquote

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter
from pyspark.sql.streaming import DataStreamReader
from pyspark.sql.types import DataType, StructField, StructType

from headwater.delta.dml.rewrite import Result as MergeResult
from headwater.delta.log.actions import Commit
from headwater.delta.log.delta_log import DeltaLog
from headwater.delta.options import OutputMode, WriteSpec, with_time_travel
from headwater.delta.read.batch import read_appended
from headwater.delta.schema.expressions import ExprLike, as_column
from headwater.delta.schema.merge_clauses import Clause
from headwater.delta.write.batch import WriteResult
from headwater.delta.write.sink import DeltaStreamSink
from headwater.engines.door import RecordedAppend, SnapshotView
from headwater.engines.streams import start_batches
from headwater.engines.table_log import TableLog
from headwater.errors import ConcurrentModificationException, TableNotFoundError
from headwater.originals import original

TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"
USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
_SESSION_SETTINGS = threading.Lock()  # session settings are shared by the session's threads


@dataclass(frozen=True)
class DeltaSparkTable:
    """A Delta table of a delta-spark session: by name (``table_name``, in the session
    catalog) or by path (``table_name`` None)."""

    spark: SparkSession
    location: str
    table_name: str | None = None
    external: bool = False  # created by name at a location the caller chose
    # delta-spark runs a write's query as a nested execution: Observation never hears of it.
    observes_writes: ClassVar[bool] = False
    # delta-spark commits only its own writes: rows held in Arrow go through its writer.
    commits_arrow: ClassVar[bool] = False

    @property
    def name(self) -> str:
        return self.table_name or f"delta.`{self.location}`"

    @property
    def _ident(self) -> str:
        return self.name

    def exists(self) -> bool:
        return DeltaLog(self.location).exists()

    def log(self) -> TableLog:
        """The table's log, read as any Delta reader reads it (versions, commits, files)."""
        return TableLog(self.location)

    def delta_table(self) -> Any:
        """delta-spark's own ``DeltaTable``."""
        from delta.tables import DeltaTable

        return DeltaTable.forPath(self.spark, self.location)

    # -- reading -----------------------------------------------------------------------------

    def read(
        self,
        version: int | None = None,
        timestamp: str | None = None,
        options: Mapping[str, str] | None = None,
    ) -> DataFrame:
        opts = with_time_travel(options, version, timestamp)
        if not self.exists():
            raise TableNotFoundError(
                f"[DELTA_MISSING_DELTA_TABLE] {self.name} is not a Delta table."
            )
        reader = original(DataFrameReader, "format")(self.spark.read, "delta")
        reader = original(DataFrameReader, "options")(reader, **opts)
        return original(DataFrameReader, "load")(reader, self.location)

    def read_appended(self, since: int, until: int) -> DataFrame | None:
        """The rows appended after ``since`` up to ``until``, from the files the log's add
        actions name (any engine's log says the same), or None."""
        return read_appended(self.spark, self.location, since, until)

    def read_stream(self, options: Mapping[str, str] | None = None) -> DataFrame:
        opts = {str(k): str(v) for k, v in (options or {}).items()}
        reader = original(DataStreamReader, "format")(self.spark.readStream, "delta")
        reader = original(DataStreamReader, "options")(reader, **opts)
        return original(DataStreamReader, "load")(reader, self.location)

    # -- writing -----------------------------------------------------------------------------

    def write(self, df: DataFrame, spec: WriteSpec, operation: object = None) -> WriteResult:
        """One batch write through delta-spark's writer (``operation`` names headwater's own
        commits; delta-spark names its own).

        A named table is created by ``saveAsTable`` (the session catalog records it) and
        written by its path once it exists: ``saveAsTable`` would have delta-spark look the
        name up in the metastore at every micro-batch and, at each overwrite (a
        materialized view's refresh), replace the table there (a ReplaceTableAsSelect
        rebuilding a snapshot from version 0, then two metastore alterations: 1-3 s, and
        the Hive metastore's ERROR for the Hive-compatible one it refuses). The log is the
        table's definition; delta-spark reads a name's schema from it."""
        before = self._latest()
        writer = original(DataFrameWriter, "format")(df.write, "delta")
        writer = original(DataFrameWriter, "mode")(writer, spec.mode)
        options = _writer_options(spec, creating=before is None)
        if options:
            writer = original(DataFrameWriter, "options")(writer, **options)
        if spec.partition_by and (before is None or spec.mode == "overwrite"):
            writer = original(DataFrameWriter, "partitionBy")(writer, *spec.partition_by)
        if spec.cluster_by and before is None:
            writer = original(DataFrameWriter, "clusterBy")(writer, *spec.cluster_by)
        if self.table_name is not None and before is None:
            self._ensure_schema()
            if self.external:
                writer = original(DataFrameWriter, "option")(writer, "path", self.location)
            original(DataFrameWriter, "saveAsTable")(writer, self.table_name)
        else:
            original(DataFrameWriter, "save")(writer, self.location)
        after = self._latest()
        if after is None or after == before:
            return WriteResult(version=None)
        commit = DeltaLog(self.location).read_commit(after)
        metrics = _metrics_of(commit)
        return WriteResult(
            version=after,
            num_files=int(metrics.get("numFiles", 0)),
            num_rows=int(metrics.get("numOutputRows", 0)),
            num_bytes=int(metrics.get("numOutputBytes", 0)),
            created=before is None,
            schema_changed=self._schema_changed(commit, before),
        )

    def sink(
        self,
        checkpoint: str,
        output_mode: OutputMode = "append",
        spec: WriteSpec | None = None,
        on_commit: Callable[[WriteResult], None] | None = None,
    ) -> DeltaStreamSink:
        """The ``foreachBatch`` function committing each micro-batch once: delta-spark
        writes it, with the batch's transaction id."""
        return DeltaStreamSink(
            self.location, checkpoint, output_mode, spec, on_commit, writer=self.write
        )

    def start_stream(
        self,
        df: DataFrame,
        checkpoint: str,
        output_mode: OutputMode = "append",
        spec: WriteSpec | None = None,
        trigger: Mapping[str, str | bool] | None = None,
        query_name: str | None = None,
        on_commit: Callable[[WriteResult], None] | None = None,
        wrap: Callable[[DeltaStreamSink], Callable[[DataFrame, int], object]] | None = None,
    ) -> Any:
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
        """MERGE through delta-spark's ``DeltaTable.merge`` builder, clause by clause."""
        builder = self.delta_table().alias(target_alias).merge(source, as_column(condition))
        for clause in clauses:
            builder = _apply(builder, clause)
        if evolve:
            builder = builder.withSchemaEvolution()
        return self._run(builder.execute, txn, user_metadata)

    def update(
        self, condition: ExprLike | None, assignments: Mapping[str, ExprLike]
    ) -> MergeResult:
        values = {k: as_column(v) for k, v in assignments.items()}
        table = self.delta_table()
        if condition is None:
            return self._run(lambda: table.update(set=values))
        return self._run(lambda: table.update(as_column(condition), values))

    def delete(self, condition: ExprLike | None) -> MergeResult:
        table = self.delta_table()
        if condition is None:
            return self._run(lambda: table.delete())
        return self._run(lambda: table.delete(as_column(condition)))

    def append_arrow(self, rows: pa.Table, schema: StructType) -> WriteResult:
        """``rows`` appended through delta-spark's writer (a Spark job)."""
        return self.write(self.spark.createDataFrame(rows, schema), WriteSpec(mode="append"))

    def overwrite_arrow(
        self, rows: pa.Table, read: SnapshotView, user_metadata: str | None = None
    ) -> WriteResult:
        """The rows replaced through delta-spark's writer, after checking that the table is
        still at the version ``read`` (its writer takes no read version: a commit landing
        between the check and the write is not seen, so use it for tables one writer owns,
        as a pipeline owns its views)."""
        if self._latest() != read.version:
            raise ConcurrentModificationException(
                f"{self.name} changed after version {read.version}, which the rows were "
                "computed from; nothing was written. Run it again."
            )
        df = self.spark.createDataFrame(rows, read.schema)
        return self.write(df, WriteSpec(mode="overwrite", user_metadata=user_metadata))

    def append_recorded(self, df: DataFrame | None, append: RecordedAppend) -> WriteResult:
        """The rows appended through delta-spark's writer as one commit whose
        ``userMetadata`` is the record and which carries ``append.txn``: an append planned
        at the same version that committed first makes this one fail (delta-spark's
        ``ConcurrentTransactionException``) or commit nothing. delta-spark's commit takes
        no requirement of ours; where the record depends on reading the rows, they are
        read (and kept) first, so it is complete before the write starts."""
        out = df
        if out is not None and append.record_after_read:
            out = out.persist()
            out.count()
        try:
            record = append.record()
            rows = out if out is not None else self.read().limit(0)
            spec = WriteSpec(
                mode="append",
                merge_schema=append.read is None or append.schema != append.read.schema,
                user_metadata=json.dumps(
                    dict(record.commit_info), separators=(",", ":"), sort_keys=True
                ),
                txn=append.txn,
            )
            return self.write(rows, spec)
        finally:
            if out is not None and out.is_cached:
                out.unpersist()

    def optimize(
        self, where: str | None = None, z_order_by: Sequence[str] = (), full: bool = False
    ) -> DataFrame:
        text = f"OPTIMIZE {self._ident}" + (" FULL" if full else "")
        if where:
            text += f" WHERE {where}"
        if z_order_by:
            text += " ZORDER BY (" + ", ".join(f"`{c}`" for c in z_order_by) + ")"
        return self._sql(text)

    def vacuum(self, retention_hours: float | None = None, dry_run: bool = False) -> DataFrame:
        text = f"VACUUM {self._ident}"
        if retention_hours is not None:
            text += f" RETAIN {float(retention_hours)} HOURS"
        return self._sql(text + (" DRY RUN" if dry_run else ""))

    # -- table definition ------------------------------------------------------------------

    def replace(
        self,
        schema: StructType,
        partition_by: Sequence[str] = (),
        properties: Mapping[str, str] | None = None,
        description: str | None = None,
    ) -> None:
        from delta.tables import DeltaTable

        builder = DeltaTable.createOrReplace(self.spark)
        if self.table_name is not None:
            self._ensure_schema()
            builder = builder.tableName(self.table_name)
        builder = builder.location(self.location).addColumns(schema)
        if partition_by:
            builder = builder.partitionedBy(*partition_by)
        for key, value in (properties or {}).items():
            builder = builder.property(key, value)
        if description:
            builder = builder.comment(description)
        builder.execute()

    def add_columns(self, fields: Iterable[StructField]) -> None:
        columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in fields)
        self._sql(f"ALTER TABLE {self._ident} ADD COLUMNS ({columns})")

    def change_column(
        self, column: str, new_type: DataType | None = None, comment: str | None = None
    ) -> None:
        if new_type is not None:
            self._sql(
                f"ALTER TABLE {self._ident} ALTER COLUMN `{column}` TYPE {new_type.simpleString()}"
            )
        if comment is not None:
            text = comment.replace("\\", "\\\\").replace("'", "\\'")
            self._sql(f"ALTER TABLE {self._ident} ALTER COLUMN `{column}` COMMENT '{text}'")

    def set_properties(self, properties: Mapping[str, str]) -> None:
        pairs = ", ".join(f"'{k}' = '{v}'" for k, v in properties.items())
        self._sql(f"ALTER TABLE {self._ident} SET TBLPROPERTIES ({pairs})")

    def cluster_by(self, columns: Sequence[str] | None) -> None:
        keys = ", ".join(f"`{c}`" for c in columns) if columns else None
        self._sql(f"ALTER TABLE {self._ident} CLUSTER BY " + (f"({keys})" if keys else "NONE"))

    def add_constraint(self, name: str, expression: str) -> None:
        self._sql(f"ALTER TABLE {self._ident} ADD CONSTRAINT `{name}` CHECK ({expression})")

    def drop_constraint(self, name: str, if_exists: bool = False) -> None:
        guard = "IF EXISTS " if if_exists else ""
        self._sql(f"ALTER TABLE {self._ident} DROP CONSTRAINT {guard}`{name}`")

    # -- helpers ---------------------------------------------------------------------------

    def _sql(self, text: str) -> DataFrame:
        return original(SparkSession, "sql")(self.spark, text)

    def _latest(self) -> int | None:
        log = DeltaLog(self.location)
        return log.latest_version() if log.exists() else None

    def _schema_changed(self, commit: Commit, before: int | None) -> bool:
        """Whether ``commit`` changed the schema the table had at ``before``: only a commit
        carrying a metaData action can, so the log's state at ``before`` is read for those
        alone (an overwrite, mergeSchema), not around every write."""
        if before is None or commit.metadata is None:
            return False
        earlier = DeltaLog(self.location).snapshot(version=before).metadata.schema_string
        return commit.metadata.schema_string != earlier

    def _ensure_schema(self) -> None:
        """delta-spark's saveAsTable needs the table's database to exist; headwater's
        catalog makes it on first write, so a pipeline's ``silver.orders`` works on both."""
        parts = self.table_name.split(".") if self.table_name else []
        if len(parts) >= 2:
            self._sql(f"CREATE SCHEMA IF NOT EXISTS {'.'.join(parts[:-1])}")

    def _run(
        self,
        action: Callable[[], object],
        txn: tuple[str, int] | None = None,
        user_metadata: str | None = None,
    ) -> MergeResult:
        before = self._latest()
        with _session_settings(self.spark, txn, user_metadata):
            action()
        after = self._latest()
        if after is None or after == before:
            return MergeResult(version=None)
        commit = DeltaLog(self.location).read_commit(after)
        metrics = {k: int(v) for k, v in _metrics_of(commit).items() if str(v).isdigit()}
        changed = self._schema_changed(commit, before)
        return MergeResult(version=after, metrics=metrics, schema_changed=changed)


def _metrics_of(commit: Commit) -> dict[str, str]:
    """The commit's ``operationMetrics`` (delta-spark's, as strings)."""
    info = commit.info
    return dict(info.values.get("operationMetrics") or {}) if info is not None else {}


def _writer_options(spec: WriteSpec, creating: bool) -> dict[str, str]:
    options: dict[str, str] = {}
    if spec.merge_schema:
        options["mergeSchema"] = "true"
    if spec.overwrite_schema:
        options["overwriteSchema"] = "true"
    if spec.replace_where:
        options["replaceWhere"] = spec.replace_where
    if spec.user_metadata:
        options["userMetadata"] = spec.user_metadata
    if spec.max_records_per_file:
        options["maxRecordsPerFile"] = str(spec.max_records_per_file)
    if spec.txn is not None:
        options["txnAppId"], options["txnVersion"] = spec.txn[0], str(spec.txn[1])
    if creating or spec.overwrite_schema:
        # delta-spark takes `delta.*` writer options as the new table's properties.
        options.update({k: str(v) for k, v in (spec.configuration or {}).items()})
    return options


def _apply(builder: Any, clause: Clause) -> Any:
    cond: Column | None = as_column(clause.condition) if clause.condition is not None else None
    values = (
        {k: as_column(v) for k, v in clause.assignments.items()}
        if clause.assignments is not None
        else None
    )
    if clause.kind == "matched":
        if clause.action == "delete":
            return builder.whenMatchedDelete(cond)
        if values is None:
            return builder.whenMatchedUpdateAll(cond)
        return builder.whenMatchedUpdate(cond, values)
    if clause.kind == "not_matched":
        if values is None:
            return builder.whenNotMatchedInsertAll(cond)
        return builder.whenNotMatchedInsert(cond, values)
    if clause.action == "delete":
        return builder.whenNotMatchedBySourceDelete(cond)
    return builder.whenNotMatchedBySourceUpdate(cond, values or {})


@contextmanager
def _session_settings(
    spark: SparkSession, txn: tuple[str, int] | None, user_metadata: str | None
) -> Iterator[None]:
    """delta-spark reads a DML's transaction id and user metadata from the session's
    settings; they are set for this one statement and put back."""
    wanted: dict[str, str] = {}
    if txn is not None:
        wanted[TXN_APP_ID], wanted[TXN_VERSION] = txn[0], str(txn[1])
    if user_metadata is not None:
        wanted[USER_METADATA] = user_metadata
    if not wanted:
        yield
        return
    with _SESSION_SETTINGS:
        saved = {k: spark.conf.get(k, None) for k in wanted}
        for key, value in wanted.items():
            spark.conf.set(key, value)
        try:
            yield
        finally:
            for key, kept in saved.items():
                if kept is None:
                    spark.conf.unset(key)
                else:
                    spark.conf.set(key, kept)


# -- names: the session catalog's ------------------------------------------------------------


def for_path(spark: SparkSession, path: str) -> DeltaSparkTable:
    return DeltaSparkTable(spark, DeltaLog(path).root)


def by_name(
    spark: SparkSession, name: str, location: str | None = None, create: bool = True
) -> DeltaSparkTable:
    """The table ``name`` of the session catalog. A name not known yet is a table a first
    write creates: at ``location`` (external), else where delta-spark puts a managed table
    (the database's location and the table's name)."""
    found = _described_location(spark, name)
    if found is not None:
        return DeltaSparkTable(spark, DeltaLog(found).root, name)
    if not create:
        raise TableNotFoundError(
            f"[TABLE_OR_VIEW_NOT_FOUND] Table '{name}' not found. Create it with a write "
            "(df.write.saveAsTable) or CREATE TABLE."
        )
    if location is not None:
        return DeltaSparkTable(spark, DeltaLog(location).root, name, external=True)
    parts = name.replace("`", "").split(".")
    database = parts[-2] if len(parts) >= 2 else spark.catalog.currentDatabase()
    try:
        root = str(spark.catalog.getDatabase(database).locationUri)
    except Exception:  # not created yet: under the warehouse, as CREATE SCHEMA puts it
        warehouse = str(spark.conf.get("spark.sql.warehouse.dir"))
        root = warehouse.rstrip("/") + f"/{database}.db"
    table = DeltaSparkTable(spark, DeltaLog(f"{root.rstrip('/')}/{parts[-1]}").root, name)
    if table.exists():  # a catalog that forgot it (in memory): named again where it is
        table._ensure_schema()
        table._sql(f"CREATE TABLE IF NOT EXISTS {name} USING delta LOCATION '{table.location}'")
    return table


def find(spark: SparkSession, name: str) -> DeltaSparkTable | None:
    """The Delta table ``name`` of the session catalog, or None (not a table, or not Delta)."""
    found = _described_location(spark, name)
    return DeltaSparkTable(spark, DeltaLog(found).root, name) if found is not None else None


def _described_location(spark: SparkSession, name: str) -> str | None:
    found = _catalog_entry(spark, name)
    if found is not None:
        provider, location = found
        return location if provider == "delta" and location else None
    try:
        if not spark.catalog.tableExists(name):
            return None
        row = original(SparkSession, "sql")(spark, f"DESCRIBE DETAIL {name}").first()
    except Exception:  # a view, a temporary view, a name Spark cannot parse
        return None
    if row is None or str(row["format"]).lower() != "delta":
        return None
    return str(row["location"])


def _catalog_entry(spark: SparkSession, name: str) -> tuple[str, str] | None:
    """(provider, location) of the session catalog's table ``name``, as its metastore
    keeps them: one metastore call, where ``DESCRIBE DETAIL`` had delta-spark load the
    table's snapshot (this runs at every lookup of a name: a pipeline's flows and views
    look up their tables several times an update). ``("", "")`` when the catalog has no
    such table (or a view); None when the name is not a plain ``db.t`` of the session
    catalog, for the caller's general path."""
    try:
        jspark = spark._jsparkSession
        ident = jspark.sessionState().sqlParser().parseTableIdentifier(name)
        catalog = jspark.sessionState().catalog()
        if catalog.isTempView(ident):  # (kept in the session: no metastore call)
            return "", ""
    except Exception:  # a name of another catalog (cat.db.t), one Spark cannot parse
        return None
    try:
        table = catalog.getTableMetadata(ident)
    except Exception as error:  # no such table or database: ("", ""); else the general path
        condition = getattr(error, "getCondition", None)
        found = str(condition() if callable(condition) else "") + str(error)
        return ("", "") if "NOT_FOUND" in found or "NoSuch" in found else None
    if str(table.tableType().name()) == "VIEW":
        return "", ""
    provider = table.provider()
    location = table.storage().locationUri()
    return (
        str(provider.get()).lower() if provider.isDefined() else "",
        unquote(str(location.get())) if location.isDefined() else "",  # a URI's spelling
    )
