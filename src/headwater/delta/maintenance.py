"""Table maintenance and inspection: history, detail, OPTIMIZE, VACUUM, RESTORE, CREATE.

History, vacuum and restore are delta-rs operations on the log. OPTIMIZE compaction is a
Spark job (files read and rewritten by executors) committed with ``dataChange=false``, so
streaming readers of the table skip it.
"""

from __future__ import annotations

import datetime as dt
import json
import time

from deltalake import DeltaTable as RsTable
from deltalake.transaction import RemoveAction
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructField, StructType

from headwater import storage
from headwater.delta.commit import CommitRequest, commit
from headwater.delta.log import DeltaLog, _parse_timestamp
from headwater.delta.write import STAGING_DIR, write_files
from headwater.errors import DeltaError

HISTORY_SCHEMA = (
    "version long, timestamp timestamp, userId string, userName string, operation string, "
    "operationParameters map<string,string>, readVersion long, isolationLevel string, "
    "isBlindAppend boolean, operationMetrics map<string,string>, userMetadata string, engineInfo string"
)
SMALL_FILE_BYTES = 128 * 1024 * 1024
MIN_RETENTION_HOURS = 168.0


def history(spark: SparkSession, path: str, limit: int | None = None) -> DataFrame:
    rows = []
    for h in RsTable(path).history(limit):
        rows.append(
            (
                int(h["version"]),
                dt.datetime.fromtimestamp(h["timestamp"] / 1000, dt.timezone.utc),
                h.get("userId"),
                h.get("userName"),
                h.get("headwaterOperation") or h.get("operation"),
                {
                    k: v if isinstance(v, str) else json.dumps(v)
                    for k, v in (h.get("operationParameters") or {}).items()
                },
                h.get("readVersion"),
                h.get("isolationLevel"),
                h.get("isBlindAppend"),
                {k: str(v) for k, v in (h.get("operationMetrics") or {}).items()},
                h.get("userMetadata"),
                h.get("engineInfo"),
            )
        )
    return spark.createDataFrame(rows, HISTORY_SCHEMA).orderBy(F.col("version").desc())


def detail(spark: SparkSession, path: str) -> DataFrame:
    snap = DeltaLog(path).snapshot()
    meta = snap.table.metadata()
    protocol = snap.table.protocol()
    features = sorted(set(protocol.reader_features or []) | set(protocol.writer_features or []))
    last = RsTable(path).history(1)[0]["timestamp"]
    row = (
        "delta", meta.id, meta.name, meta.description, snap.root,
        dt.datetime.fromtimestamp(meta.created_time / 1000, dt.timezone.utc),
        dt.datetime.fromtimestamp(last / 1000, dt.timezone.utc),
        list(meta.partition_columns), len(snap.files), sum(f.size for f in snap.files),
        dict(meta.configuration), protocol.min_reader_version, protocol.min_writer_version, features,
    )  # fmt: skip
    schema = (
        "format string, id string, name string, description string, location string, "
        "createdAt timestamp, lastModified timestamp, partitionColumns array<string>, numFiles long, "
        "sizeInBytes long, properties map<string,string>, minReaderVersion int, minWriterVersion int, "
        "tableFeatures array<string>"
    )
    return spark.createDataFrame([row], schema)


def vacuum(
    spark: SparkSession, path: str, retention_hours: float | None = None, dry_run: bool = False
) -> DataFrame:
    """Delete files no version within the retention window references (default 7 days).

    ``dry_run``: delete nothing, list the files that would be deleted (``VACUUM ... DRY RUN``).
    """
    hours = MIN_RETENTION_HOURS if retention_hours is None else float(retention_hours)
    check = spark.conf.get("spark.databricks.delta.retentionDurationCheck.enabled", "true").lower()
    if hours < MIN_RETENTION_HOURS and check != "false":
        raise DeltaError(
            f"[DELTA_VACUUM_RETENTION_PERIOD_TOO_SHORT] Refusing to vacuum {path} with a retention of "
            f"{hours:g} hours, below the safe minimum of {MIN_RETENTION_HOURS:g} hours: concurrent readers "
            "and writers may still need those files. If you are certain, set "
            "spark.databricks.delta.retentionDurationCheck.enabled=false."
        )
    table = RsTable(path)
    # full=True: also files no commit ever referenced (left by killed writers), as delta-spark does.
    if "deletionVectors" in (table.protocol().reader_features or []):
        deleted = _vacuum_keeping_vectors(table, path, int(hours), dry_run)
    else:
        deleted = table.vacuum(
            retention_hours=int(hours), dry_run=dry_run, enforce_retention_duration=False, full=True
        )
    cutoff = time.time() - hours * 3600
    for info in storage.list_files(storage.join(path, STAGING_DIR)):  # leftovers of killed writes
        if (info.mtime_ns or 0) / 1e9 < cutoff:
            if not dry_run:
                storage.delete_file(info.path)
            deleted.append(info.path)
    return spark.createDataFrame([(p,) for p in deleted], "path string")


def _vacuum_keeping_vectors(table: RsTable, path: str, hours: int, dry_run: bool) -> list[str]:
    """delta-rs's full vacuum counts deletion-vector files as unreferenced and would delete
    those live files still need (their deleted rows would come back, or reads would fail).
    Its dry-run list is filtered here, and the rest deleted by us."""
    from headwater.delta.dv_descriptors import referenced_vector_files

    dlog = DeltaLog(path)
    keep = referenced_vector_files(dlog, table.version(), int((time.time() - hours * 3600) * 1000))
    listed = table.vacuum(
        retention_hours=hours, dry_run=True, enforce_retention_duration=False, full=True
    )

    def full(p: str) -> str:
        return p if p.startswith("/") or "://" in p else storage.join(dlog.root, p)

    doomed = [p for p in listed if storage.normalize(full(p)) not in keep]
    if not dry_run:
        for p in doomed:
            storage.delete_file(full(p))
    return doomed


def restore(
    spark: SparkSession, path: str, version: int | None = None, timestamp: str | None = None
) -> DataFrame:
    table = RsTable(path)
    target = (
        version if version is not None else DeltaLog._version_at(table, _parse_timestamp(timestamp))
    )
    metrics = table.restore(target)
    return spark.createDataFrame(
        [{k: int(v) for k, v in metrics.items() if isinstance(v, (int, float))}]
    )


class OptimizeBuilder:
    def __init__(self, spark: SparkSession, path: str) -> None:
        self._spark = spark
        self._path = path
        self._where: str | None = None

    def where(self, partitionFilter: str) -> OptimizeBuilder:
        self._where = partitionFilter
        return self

    def executeCompaction(self) -> DataFrame:
        """Rewrite each partition's small files into one (dataChange=false)."""
        from headwater.delta.dml import FILE_COL, _commit, _partition_only, _removes, _target

        dlog = DeltaLog(self._path)
        snap = dlog.snapshot()
        snap.check_writable()
        candidates = [f for f in snap.files if f.size < SMALL_FILE_BYTES]
        if self._where:
            chosen = _partition_only(self._spark, snap, F.expr(self._where))
            if chosen is None:
                raise DeltaError(
                    f"OPTIMIZE ... WHERE '{self._where}' must refer to partition columns only."
                )
            candidates = [f for f in candidates if f.absolute(snap.root) in chosen]
        groups: dict[tuple, list] = {}
        for f in candidates:
            groups.setdefault(tuple(sorted(f.partition_values.items())), []).append(f)
        files = [f for group in groups.values() if len(group) > 1 for f in group]
        metrics = {"numFilesAdded": 0, "numFilesRemoved": 0}
        if files:
            # Read through the DML reader: it drops rows deleted by deletion vectors and
            # renames column-mapped physical columns, which a plain Parquet read would not.
            parts = snap.partition_columns
            df = _target(self._spark, snap, files).drop(FILE_COL)
            df = df.repartition(*parts) if parts else df.coalesce(1)
            adds, _, _ = write_files(
                df.select(*[f"`{c.name}`" for c in snap.schema]),
                snap.root,
                parts,
                snap.schema,
                data_change=False,
            )
            removes = [
                RemoveAction(r.path, False, r.deletion_timestamp, r.size, r.partition_values)
                for r in _removes(snap, {f.absolute(snap.root) for f in files})
            ]
            metrics = {"numFilesAdded": len(adds), "numFilesRemoved": len(removes)}
            _commit(dlog, snap, adds, removes, snap.schema, "OPTIMIZE", {}, metrics)
        return self._spark.createDataFrame(
            [(self._path, metrics)], "path string, metrics map<string,long>"
        )


class CreateBuilder:
    """``DeltaTable.create(spark).tableName(...).addColumn(...)....execute()``"""

    def __init__(self, spark: SparkSession, if_not_exists: bool) -> None:
        self._spark = spark
        self._if_not_exists = if_not_exists
        self._name: str | None = None
        self._location: str | None = None
        self._fields: list[StructField] = []
        self._partitions: list[str] = []
        self._properties: dict[str, str] = {}
        self._comment: str | None = None

    def tableName(self, identifier: str) -> CreateBuilder:
        self._name = identifier
        return self

    def location(self, location: str) -> CreateBuilder:
        self._location = location
        return self

    def comment(self, comment: str) -> CreateBuilder:
        self._comment = comment
        return self

    def addColumn(
        self, colName: str, dataType: str | DataType, nullable: bool = True, **_: object
    ) -> CreateBuilder:
        from headwater.ddl import parse_type

        dtype = parse_type(dataType) if isinstance(dataType, str) else dataType
        self._fields.append(StructField(colName, dtype, True))
        return self

    def addColumns(self, cols: StructType | list[StructField]) -> CreateBuilder:
        self._fields.extend(StructField(f.name, f.dataType, True) for f in cols)
        return self

    def partitionedBy(self, *cols: str) -> CreateBuilder:
        self._partitions = [
            c for group in cols for c in ([group] if isinstance(group, str) else group)
        ]
        return self

    def property(self, key: str, value: str) -> CreateBuilder:
        self._properties[key] = value
        return self

    def execute(self):
        from headwater.catalog import Catalog
        from headwater.delta.tables import DeltaTable

        schema = StructType(self._fields)
        delta_props = {k: v for k, v in self._properties.items() if k.startswith("delta.")}
        if self._name:
            catalog = Catalog.of(self._spark)
            existed = catalog.get(self._name) is not None
            entry = catalog.create_table(
                self._name,
                schema,
                self._location,
                self._partitions,
                delta_props or None,
                self._if_not_exists,
            )
            if not existed:
                self._set_metadata(entry.location)
            return DeltaTable(self._spark, entry.location)
        if not self._location:
            raise DeltaError("DeltaTable.create() needs .tableName(...) or .location(...).")
        dlog = DeltaLog(self._location)
        if dlog.exists():
            if not self._if_not_exists:
                raise DeltaError(f"A Delta table already exists at {self._location}.")
        else:
            commit(
                dlog,
                CommitRequest([], schema, self._partitions, configuration=delta_props or None),
            )
            self._set_metadata(self._location)
        return DeltaTable(self._spark, self._location)

    def _set_metadata(self, path: str) -> None:
        """delta-rs takes only ``delta.*`` keys when it creates a table: other properties and
        the comment (the table's description) are set by a metadata commit right after."""
        from headwater.delta import alter

        other = {k: v for k, v in self._properties.items() if not k.startswith("delta.")}
        if other:
            alter.set_properties(path, other)
        if self._comment is not None:
            alter.set_description(path, self._comment)
