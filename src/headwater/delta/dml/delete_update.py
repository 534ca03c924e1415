"""DELETE and UPDATE, executed by Spark and committed as one Delta transaction.

Both follow delta-spark's plan: find the files that hold rows the operation touches (a
filter over the target read with its file path, after pruning files by the log's stats),
rewrite only those files with executors (Spark's native Parquet writer), and commit the
removes of the old files and the adds of the new ones together (:mod:`.rewrite`). A crash
before the commit leaves the table at its previous version; a concurrent commit that
conflicts fails the operation cleanly. Tables with deletion vectors enabled take the plan
of :mod:`.vectors` instead: the touched rows are marked deleted and no file is rewritten.
MERGE is in :mod:`.merge`.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from headwater.delta.dml import row_ids, vectors
from headwater.delta.dml.metrics import Clock
from headwater.delta.dml.rewrite import Result, commit_rewrite, open_transaction
from headwater.delta.dml.target import FILE_COL, files_named, live_rows, read_target, touched
from headwater.delta.files import change_data, column_values, identity
from headwater.delta.files.data_files import discard_files, write_files
from headwater.delta.log import protocol
from headwater.delta.log.commit import Transaction
from headwater.delta.log.delta_log import DataFile, DeltaLog, Snapshot
from headwater.delta.log.operations import Operation
from headwater.delta.read import pruning
from headwater.delta.schema.expressions import (
    ExprLike,
    as_column,
    column_name,
    condition_text,
    holds,
)
from headwater.errors import DeltaError

ACTION_COL = "__hw_action"


def _file_rows(snapshot: Snapshot, files: list[DataFile]) -> int:
    """Live rows in ``files``, from the log."""
    counts = live_rows(snapshot)
    return sum(counts.get(f.path) or 0 for f in files)


def partition_only_files(
    spark: SparkSession, snapshot: Snapshot, cond: ExprLike
) -> list[DataFile] | None:
    """Files matched by a condition over partition columns alone (None: not such a
    condition): they can be removed whole, without reading them."""
    files = snapshot.files
    if not files:
        return None
    matches = pruning.partitions_matching(
        spark, snapshot, cond, [f.partition_values for f in files]
    )
    if matches is None:
        return None
    return [f for f, hit in zip(files, matches, strict=True) if hit]


def delete(spark: SparkSession, path: str, condition: ExprLike | None = None) -> Result:
    clock = Clock()
    snapshot = DeltaLog(path).snapshot()
    protocol.check_removable(snapshot.metadata, snapshot.root)
    text = condition_text(condition)
    txn, done = open_transaction(spark, snapshot, Operation.predicate("DELETE", text))
    if done:
        return Result(None, {})
    whole_files = (
        snapshot.files if condition is None else partition_only_files(spark, snapshot, condition)
    )
    if whole_files is not None:
        clock.scanned()
        metrics = {
            "numDeletedRows": _file_rows(snapshot, whole_files),
            "numRemovedFiles": len(whole_files),
            "numAddedFiles": 0,
            "numCopiedRows": 0,
        }
        version = commit_rewrite(
            txn,
            read=whole_files,
            partitions=pruning.partition_filter(spark, snapshot, condition),
            removed=whole_files,
            adds=[],
            metrics=metrics,
            clock=clock,
        )
        return Result(version, metrics)
    assert condition is not None
    files = pruning.keep_files(snapshot, pruning.predicate_filters(condition, snapshot.schema))
    if vectors.applies(snapshot):
        return _delete_with_vectors(spark, txn, files, condition, clock)
    target = read_target(spark, snapshot, files)
    hit_uris = touched(target.where(holds(condition)))
    clock.scanned()
    if not hit_uris:
        return Result(None, {"numDeletedRows": 0, "numRemovedFiles": 0, "numAddedFiles": 0})
    hit = files_named(snapshot, hit_uris)
    in_hit = F.col(FILE_COL).isin(list(hit_uris))
    kept = target.where(in_hit).where(~holds(condition)).drop(FILE_COL)
    written = write_files(
        kept,
        snapshot.root,
        snapshot.partition_columns,
        snapshot.schema,
        constraints=snapshot.check_constraints,
    )
    metrics = {
        "numDeletedRows": _file_rows(snapshot, hit) - written.rows,
        "numRemovedFiles": len(hit),
        "numAddedFiles": len(written.adds),
        "numCopiedRows": written.rows,
    }
    version = commit_rewrite(
        txn,
        read=files,
        partitions=pruning.partition_filter(spark, snapshot, condition),
        removed=hit,
        adds=written.adds,
        metrics=metrics,
        changes=lambda: (
            target.where(in_hit)
            .where(holds(condition))
            .drop(FILE_COL)
            .withColumn(change_data.CHANGE_TYPE, F.lit("delete"))
        ),
        clock=clock,
    )
    return Result(version, metrics)


def _delete_with_vectors(
    spark: SparkSession,
    txn: Transaction,
    files: list[DataFile],
    condition: ExprLike,
    clock: Clock,
) -> Result:
    """DELETE on a table with deletion vectors enabled: the matching rows' positions go into
    their files' vectors; nothing is rewritten."""
    snapshot = txn.snapshot
    assert snapshot is not None
    target = read_target(spark, snapshot, files, row_index=True)
    deleted = vectors.positions(target.where(holds(condition)))
    clock.scanned()
    txn.read_files([f.path for f in files], pruning.partition_filter(spark, snapshot, condition))
    metrics = {"numDeletedRows": deleted.num_rows, "numAddedFiles": 0, "numCopiedRows": 0}
    if deleted.num_rows == 0:
        return Result(None, {**metrics, "numRemovedFiles": 0})
    version, metrics = vectors.commit(txn, deleted, [], metrics, clock=clock)
    return Result(version, metrics)


def update(
    spark: SparkSession, path: str, condition: ExprLike | None, assignments: Mapping[str, ExprLike]
) -> Result:
    clock = Clock()
    snapshot = DeltaLog(path).snapshot()
    protocol.check_removable(snapshot.metadata, snapshot.root)
    schema = snapshot.schema
    _check_columns(schema, assignments, path)
    identity.refuse_explicit([str(k) for k in assignments], schema, "UPDATE")
    txn, done = open_transaction(
        spark, snapshot, Operation.predicate("UPDATE", condition_text(condition))
    )
    if done:
        return Result(None, {})
    cond = holds(condition)
    files = pruning.keep_files(snapshot, pruning.predicate_filters(condition, schema))
    by_name = {column_name(k).lower(): as_column(v) for k, v in assignments.items()}
    partitions = pruning.partition_filter(spark, snapshot, condition)
    if vectors.applies(snapshot):
        return _update_with_vectors(spark, txn, files, condition, cond, by_name, clock)
    target = read_target(spark, snapshot, files)
    per_file = target.where(cond).groupBy(FILE_COL).count().collect()
    clock.scanned()
    hit_uris = [r[0] for r in per_file]
    updated = sum(r[1] for r in per_file)
    if not hit_uris:
        return Result(None, {"numUpdatedRows": 0, "numRemovedFiles": 0, "numAddedFiles": 0})
    rows = target.where(F.col(FILE_COL).isin(hit_uris)).withColumn(ACTION_COL, cond)
    out = rows.select(
        *[
            F.when(F.col(ACTION_COL), by_name[f.name.lower()].cast(f.dataType))
            .otherwise(F.col(f"`{f.name}`"))
            .alias(f.name)
            if f.name.lower() in by_name
            else F.col(f"`{f.name}`")
            for f in schema
        ],
        *row_ids.carried(snapshot, F.col(ACTION_COL)),
        F.col(ACTION_COL),
    )
    written = write_files(
        column_values.recompute(out.drop(ACTION_COL), schema, set(by_name)),
        snapshot.root,
        snapshot.partition_columns,
        schema,
        constraints=snapshot.check_constraints,
    )
    hit = files_named(snapshot, hit_uris)
    metrics = {
        "numUpdatedRows": updated,
        "numCopiedRows": written.rows - updated,
        "numRemovedFiles": len(hit),
        "numAddedFiles": len(written.adds),
    }

    def changes() -> DataFrame:
        changed = rows.where(F.col(ACTION_COL)).drop(FILE_COL)
        before = changed.select(*[F.col(f"`{f.name}`") for f in schema])
        after = out.where(F.col(ACTION_COL)).drop(ACTION_COL)
        return before.withColumn(change_data.CHANGE_TYPE, F.lit("update_preimage")).unionByName(
            after.withColumn(change_data.CHANGE_TYPE, F.lit("update_postimage"))
        )

    version = commit_rewrite(
        txn,
        read=files,
        partitions=partitions,
        removed=hit,
        adds=written.adds,
        metrics=metrics,
        changes=changes,
        clock=clock,
    )
    return Result(version, metrics)


def _update_with_vectors(
    spark: SparkSession,
    txn: Transaction,
    files: list[DataFile],
    condition: ExprLike | None,
    cond: Column,
    by_name: dict[str, Column],
    clock: Clock,
) -> Result:
    """UPDATE on a table with deletion vectors enabled: the matching rows' positions go into
    their files' vectors and only the updated rows are written."""
    snapshot = txn.snapshot
    assert snapshot is not None
    schema = snapshot.schema
    matched = read_target(spark, snapshot, files, row_index=True).where(cond)
    deleted = vectors.positions(matched)
    clock.scanned()
    txn.read_files([f.path for f in files], pruning.partition_filter(spark, snapshot, condition))
    metrics = {"numUpdatedRows": deleted.num_rows, "numCopiedRows": 0}
    if deleted.num_rows == 0:
        return Result(None, {**metrics, "numRemovedFiles": 0, "numAddedFiles": 0})
    out = matched.select(
        *[
            by_name[f.name.lower()].cast(f.dataType).alias(f.name)
            if f.name.lower() in by_name
            else F.col(f"`{f.name}`")
            for f in schema
        ],
        *row_ids.carried(snapshot, F.lit(True)),
    )
    written = write_files(
        column_values.recompute(out, schema, set(by_name)),
        snapshot.root,
        snapshot.partition_columns,
        schema,
        constraints=snapshot.check_constraints,
    )
    if written.rows != deleted.num_rows:  # a non-deterministic condition picked other rows
        discard_files(snapshot.root, written.adds)
        raise DeltaError(
            f"UPDATE of {snapshot.root} matched {deleted.num_rows} rows, then wrote "
            f"{written.rows}: the condition {condition} is not deterministic. Nothing was "
            "committed."
        )
    metrics["numAddedFiles"] = len(written.adds)
    try:
        version, metrics = vectors.commit(
            txn, deleted, written.adds, metrics, clock=clock, touched=True
        )
    except BaseException:
        discard_files(snapshot.root, written.adds)
        raise
    return Result(version, metrics)


def _check_columns(schema: StructType, assignments: Mapping[str, ExprLike], path: str) -> None:
    names = {f.name.lower() for f in schema}
    unknown = [k for k in assignments if column_name(k).lower() not in names]
    if unknown:
        raise DeltaError(
            f"Cannot set column(s) {', '.join(unknown)}: the table at {path} has columns "
            f"{', '.join(f.name for f in schema)}."
        )
