"""DELETE, UPDATE and MERGE, executed by Spark and committed as one Delta transaction.

Every operation follows the same plan, as delta-spark does: find the files that hold rows
the operation touches (a filter or join over the target read with its file path), rewrite
only those files with executors (Spark's native Parquet writer), and commit the removes of
the old files and the adds of the new ones together. A crash before the commit leaves the
table at its previous version; a concurrent commit in between fails the operation cleanly.
Tables with deletion vectors enabled take the plan of :mod:`vector_commit` instead: the
touched rows are marked deleted and no file is rewritten.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from deltalake.transaction import RemoveAction
from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from headwater.delta import change_data, dv_descriptors, pruning, raw_commit
from headwater.delta.commit import CommitRequest, commit
from headwater.delta.log import DataFile, DeltaLog, Snapshot
from headwater.delta.read import native_eligible, python_read, read_snapshot
from headwater.delta.write import _strip_file_scheme, discard_files, write_files
from headwater.errors import DeltaError

FILE_COL = "__hw_file"
ROW_INDEX_COL = "__hw_row_index"
ACTION_COL = "__hw_action"

ExprLike = str | Column


def as_column(e: ExprLike) -> Column:
    return F.expr(e) if isinstance(e, str) else e


@dataclass
class Clause:
    """One WHEN clause of a MERGE: ``kind`` matched / not_matched / not_matched_by_source."""

    kind: str
    action: str  # update, delete, insert
    condition: ExprLike | None = None
    assignments: Mapping[str, ExprLike] | None = None  # None with update/insert: all columns


@dataclass
class Result:
    version: int | None
    metrics: dict[str, int] = field(default_factory=dict)


def _target(
    spark: SparkSession,
    snapshot: Snapshot,
    files: list[DataFile] | None = None,
    row_index: bool = False,
) -> DataFrame:
    """The table's rows (of ``files`` only, when given) with the path of the file holding
    each, to rewrite only those files (``row_index``: and each row's position in its file,
    which deletion vectors name; native reads only)."""
    snapshot.check_writable()
    vectors = "deletionVectors" in (snapshot.table.protocol().reader_features or [])
    if change_data.enabled(snapshot.configuration) or vectors:
        raw_commit.check_writer_features(snapshot, removes=True)  # commits through raw_commit
    files = snapshot.files if files is None else files
    if not files:
        extra = [StructField(FILE_COL, StringType())]
        if row_index:
            extra.append(StructField(ROW_INDEX_COL, LongType()))
        return spark.createDataFrame([], StructType([*snapshot.schema.fields, *extra]))
    if native_eligible(snapshot, with_vectors=True):
        rows = read_snapshot(spark, snapshot, files).withColumn(
            FILE_COL, F.col("_metadata.file_path")
        )
        return rows.withColumn(ROW_INDEX_COL, F.col("_metadata.row_index")) if row_index else rows
    if row_index:
        raise ValueError("row positions are read only on the native path")
    rows = python_read(spark, snapshot, file_column=FILE_COL)
    if len(files) < len(snapshot.files):
        rows = rows.where(F.col(FILE_COL).isin([f.absolute(snapshot.root) for f in files]))
    return rows


def _removes(snapshot: Snapshot, touched: set[str]) -> list[RemoveAction]:
    now = int(time.time() * 1000)
    wanted = {_strip_file_scheme(p) for p in touched}
    return [
        RemoveAction(f.path, True, now, f.size, f.partition_values)
        for f in snapshot.files
        if _strip_file_scheme(f.absolute(snapshot.root)) in wanted
    ]


def live_rows(snapshot: Snapshot) -> dict[str, int | None]:
    """Live rows of each file: the log's numRecords less the rows its deletion vector
    deletes (None: the log does not count the file's rows)."""
    deleted = dv_descriptors.deleted_counts(snapshot)
    return {
        f.path: None if n is None else int(n) - deleted.get(f.path, 0)
        for f, n in zip(
            snapshot.files, snapshot.add_actions.column("num_records").to_pylist(), strict=True
        )
    }


def _file_rows(snapshot: Snapshot, removes: list[RemoveAction]) -> int:
    """Live rows in the removed files, from the log."""
    counts = live_rows(snapshot)
    return sum(counts.get(r.path) or 0 for r in removes)


def _commit(
    dlog: DeltaLog,
    snapshot: Snapshot,
    adds,
    removes: list[RemoveAction],
    schema: StructType,
    operation: str,
    parameters: dict,
    metrics: dict[str, int],
    evolve: bool = False,
    txn: tuple[str, int] | None = None,
    changes: Callable[[], DataFrame] | None = None,
) -> int | None:
    """Commit a DML's removes and adds at once (checked against the version it read).

    ``changes`` builds the changed rows (with ``_change_type``); they are recorded when the
    table has the change data feed enabled and files were rewritten.
    """
    if not adds and not removes and not evolve and txn is None:
        return None
    record_changes = bool(
        changes is not None and removes and change_data.enabled(snapshot.configuration)
    )
    vectors = dv_descriptors.removed_vectors(dlog, snapshot, removes)
    if record_changes or vectors:
        # delta-rs's Python API can commit neither cdc actions nor removes that name a
        # deletion vector: such commits are written by raw_commit.
        cdc = change_data.write_changes(changes(), snapshot, schema) if record_changes else []
        return raw_commit.commit_actions(
            dlog,
            snapshot,
            adds=adds,
            removes=removes,
            cdc=cdc,
            operation=operation,
            info={
                "operationParameters": {k: str(v) for k, v in parameters.items()},
                "operationMetrics": {k: str(v) for k, v in metrics.items()},
            },
            schema=schema if evolve else None,
            txn=txn,
            removed_vectors=vectors,
        )
    request = CommitRequest(
        adds=adds,
        schema=schema,
        partition_by=snapshot.partition_columns,
        mode="replace",
        schema_mode="merge" if evolve else "enforce",
        select_removes=lambda _snap: removes,
        read_version=snapshot.version,
        txn=txn,
        metadata={
            "headwaterOperation": operation,
            "operationParameters": {k: str(v) for k, v in parameters.items()},
            "operationMetrics": {k: str(v) for k, v in metrics.items()},
        },
    )
    return commit(dlog, request).version


TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"


def _session_txn(spark: SparkSession, snapshot: Snapshot) -> tuple[tuple[str, int] | None, bool]:
    """delta-spark's idempotent-write confs: ``(txn, already_committed)``.

    Set both in a ``foreachBatch`` function (app id: a stable name; version: the batch id)
    so a replayed batch's MERGE/UPDATE/DELETE is skipped.
    """
    app_id = spark.conf.get(TXN_APP_ID, None)
    version = spark.conf.get(TXN_VERSION, None)
    if not app_id or version is None:
        return None, False
    txn = (app_id, int(version))
    done = snapshot.table.transaction_version(app_id)
    return txn, done is not None and done >= txn[1]


def _touched(df: DataFrame) -> set[str]:
    return {r[0] for r in df.select(FILE_COL).distinct().collect()}


def _partition_only(spark: SparkSession, snapshot: Snapshot, cond: Column) -> set[str] | None:
    """Files matched by a condition over partition columns alone (None: not such a condition)."""
    parts = snapshot.partition_columns
    if not parts or not snapshot.files:
        return None
    refs = pruning.referenced_columns(cond)
    if refs is not None and not refs <= {p.lower() for p in parts}:
        return None  # reads data columns (checked without an analysis error in the log)
    part_fields = [f for f in snapshot.schema if f.name in parts]
    rows = [
        tuple(f.partition_values.get(p) for p in parts) + (f.absolute(snapshot.root),)
        for f in snapshot.files
    ]
    text_schema = ", ".join(f"`{p}` string" for p in parts) + f", `{FILE_COL}` string"
    frame = spark.createDataFrame(rows, text_schema).select(
        *[F.col(f"`{f.name}`").cast(f.dataType).alias(f.name) for f in part_fields], F.col(FILE_COL)
    )
    try:
        return {
            r[0] for r in frame.where(F.coalesce(cond, F.lit(False))).select(FILE_COL).collect()
        }
    except AnalysisException:
        return None


def delete(spark: SparkSession, path: str, condition: ExprLike | None = None) -> Result:
    dlog = DeltaLog(path)
    snapshot = dlog.snapshot()
    if condition is None:
        removes = _removes(snapshot, {f.absolute(snapshot.root) for f in snapshot.files})
        deleted = _file_rows(snapshot, removes)
        metrics = {"numDeletedRows": deleted, "numRemovedFiles": len(removes), "numAddedFiles": 0}
        version = _commit(
            dlog, snapshot, [], removes, snapshot.schema, "DELETE", {"predicate": "true"}, metrics
        )
        return Result(version, metrics)
    cond = as_column(condition)
    whole_files = _partition_only(spark, snapshot, cond)
    if whole_files is not None:
        removes = _removes(snapshot, whole_files)
        metrics = {
            "numDeletedRows": _file_rows(snapshot, removes),
            "numRemovedFiles": len(removes),
            "numAddedFiles": 0,
        }
        version = _commit(
            dlog,
            snapshot,
            [],
            removes,
            snapshot.schema,
            "DELETE",
            {"predicate": str(condition)},
            metrics,
        )
        return Result(version, metrics)
    files = pruning.keep_files(snapshot, pruning.predicate_filters(condition, snapshot.schema))
    if vector_commit().applies(snapshot):
        return _delete_with_vectors(spark, dlog, snapshot, files, condition)
    target = _target(spark, snapshot, files)
    touched = _touched(target.where(F.coalesce(cond, F.lit(False))))
    if not touched:
        return Result(None, {"numDeletedRows": 0, "numRemovedFiles": 0, "numAddedFiles": 0})
    kept = (
        target.where(F.col(FILE_COL).isin(list(touched)))
        .where(~F.coalesce(cond, F.lit(False)))
        .drop(FILE_COL)
    )
    adds, written, _ = write_files(
        kept,
        snapshot.root,
        snapshot.partition_columns,
        snapshot.schema,
        constraints=snapshot.check_constraints,
    )
    removes = _removes(snapshot, touched)
    metrics = {
        "numDeletedRows": _file_rows(snapshot, removes) - written,
        "numRemovedFiles": len(removes),
        "numAddedFiles": len(adds),
        "numCopiedRows": written,
    }
    version = _commit(
        dlog,
        snapshot,
        adds,
        removes,
        snapshot.schema,
        "DELETE",
        {"predicate": str(condition)},
        metrics,
        changes=lambda: (
            target.where(F.col(FILE_COL).isin(list(touched)))
            .where(F.coalesce(cond, F.lit(False)))
            .drop(FILE_COL)
            .withColumn(change_data.CHANGE_TYPE, F.lit("delete"))
        ),
    )
    return Result(version, metrics)


def vector_commit():
    from headwater.delta import vector_commit as module  # imports this module

    return module


def _delete_with_vectors(
    spark: SparkSession,
    dlog: DeltaLog,
    snapshot: Snapshot,
    files: list[DataFile],
    condition: ExprLike,
) -> Result:
    """DELETE on a table with deletion vectors enabled: the matching rows' positions go into
    their files' vectors; nothing is rewritten."""
    target = _target(spark, snapshot, files, row_index=True)
    deleted = vector_commit().positions(
        target.where(F.coalesce(as_column(condition), F.lit(False)))
    )
    metrics = {"numDeletedRows": deleted.num_rows, "numAddedFiles": 0, "numCopiedRows": 0}
    if deleted.num_rows == 0:
        return Result(None, {**metrics, "numRemovedFiles": 0})
    version, metrics = vector_commit().commit(
        dlog, snapshot, deleted, [], "DELETE", {"predicate": str(condition)}, metrics
    )
    return Result(version, metrics)


def update(
    spark: SparkSession, path: str, condition: ExprLike | None, assignments: Mapping[str, ExprLike]
) -> Result:
    dlog = DeltaLog(path)
    snapshot = dlog.snapshot()
    schema = snapshot.schema
    _check_columns(schema, assignments, path)
    cond = F.lit(True) if condition is None else F.coalesce(as_column(condition), F.lit(False))
    files = pruning.keep_files(snapshot, pruning.predicate_filters(condition, schema))
    by_name = {_column_name(k).lower(): as_column(v) for k, v in assignments.items()}
    if vector_commit().applies(snapshot):
        return _update_with_vectors(spark, dlog, snapshot, files, condition, cond, by_name)
    target = _target(spark, snapshot, files)
    per_file = target.where(cond).groupBy(FILE_COL).count().collect()
    touched = {r[0] for r in per_file}
    updated = sum(r[1] for r in per_file)
    if not touched:
        return Result(None, {"numUpdatedRows": 0, "numRemovedFiles": 0, "numAddedFiles": 0})
    rows = target.where(F.col(FILE_COL).isin(list(touched))).withColumn(ACTION_COL, cond)
    out = rows.select(
        *[
            F.when(F.col(ACTION_COL), by_name[f.name.lower()].cast(f.dataType))
            .otherwise(F.col(f"`{f.name}`"))
            .alias(f.name)
            if f.name.lower() in by_name
            else F.col(f"`{f.name}`")
            for f in schema
        ],
        F.col(ACTION_COL),
    )
    adds, written, _ = write_files(
        out.drop(ACTION_COL),
        snapshot.root,
        snapshot.partition_columns,
        schema,
        constraints=snapshot.check_constraints,
    )
    removes = _removes(snapshot, touched)
    metrics = {
        "numUpdatedRows": updated,
        "numCopiedRows": written - updated,
        "numRemovedFiles": len(removes),
        "numAddedFiles": len(adds),
    }
    params = {"predicate": str(condition)}

    def changes() -> DataFrame:
        changed = rows.where(F.col(ACTION_COL)).drop(FILE_COL)
        before = changed.select(*[F.col(f"`{f.name}`") for f in schema])
        after = out.where(F.col(ACTION_COL)).drop(ACTION_COL)
        return before.withColumn(change_data.CHANGE_TYPE, F.lit("update_preimage")).unionByName(
            after.withColumn(change_data.CHANGE_TYPE, F.lit("update_postimage"))
        )

    version = _commit(
        dlog, snapshot, adds, removes, schema, "UPDATE", params, metrics, changes=changes
    )
    return Result(version, metrics)


def _update_with_vectors(
    spark: SparkSession,
    dlog: DeltaLog,
    snapshot: Snapshot,
    files: list[DataFile],
    condition: ExprLike | None,
    cond: Column,
    by_name: dict[str, Column],
) -> Result:
    """UPDATE on a table with deletion vectors enabled: the matching rows' positions go into
    their files' vectors and only the updated rows are written."""
    schema = snapshot.schema
    matched = _target(spark, snapshot, files, row_index=True).where(cond)
    deleted = vector_commit().positions(matched)
    metrics = {"numUpdatedRows": deleted.num_rows, "numCopiedRows": 0}
    if deleted.num_rows == 0:
        return Result(None, {**metrics, "numRemovedFiles": 0, "numAddedFiles": 0})
    out = matched.select(
        *[
            by_name[f.name.lower()].cast(f.dataType).alias(f.name)
            if f.name.lower() in by_name
            else F.col(f"`{f.name}`")
            for f in schema
        ]
    )
    adds, written, _ = write_files(
        out,
        snapshot.root,
        snapshot.partition_columns,
        schema,
        constraints=snapshot.check_constraints,
    )
    if written != deleted.num_rows:  # a non-deterministic condition picked other rows
        discard_files(snapshot.root, adds)
        raise DeltaError(
            f"UPDATE of {snapshot.root} matched {deleted.num_rows} rows, then wrote "
            f"{written}: the condition {condition} is not deterministic. Nothing was committed."
        )
    metrics["numAddedFiles"] = len(adds)
    try:
        version, metrics = vector_commit().commit(
            dlog, snapshot, deleted, adds, "UPDATE", {"predicate": str(condition)}, metrics
        )
    except BaseException:
        discard_files(snapshot.root, adds)
        raise
    return Result(version, metrics)


def _column_name(key: str) -> str:
    """A ``set`` key as a column name (``\`added later\``` or ``added later``)."""
    if len(key) > 1 and key.startswith("`") and key.endswith("`"):
        return key[1:-1].replace("``", "`")
    return key


def _check_columns(schema: StructType, assignments: Mapping[str, ExprLike], path: str) -> None:
    names = {f.name.lower() for f in schema}
    unknown = [k for k in assignments if _column_name(k).lower() not in names]
    if unknown:
        raise DeltaError(
            f"Cannot set column(s) {', '.join(unknown)}: the table at {path} has columns "
            f"{', '.join(f.name for f in schema)}."
        )
