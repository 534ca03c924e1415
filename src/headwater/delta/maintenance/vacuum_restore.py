"""Table maintenance: VACUUM and RESTORE (OPTIMIZE is :mod:`.optimize`).

RESTORE commits the
difference between the current files and those of an older version (files re-added as
the log had them, deletion vectors included). VACUUM deletes files no version within the
retention window reads; it logs ``VACUUM START`` / ``VACUUM END`` commits, as delta-spark
does, and changes no data.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime

from pyarrow import fs as pafs
from pyspark.sql import DataFrame, SparkSession

from headwater import storage
from headwater.delta.files.data_files import STAGING_DIR
from headwater.delta.log import replay, time_travel
from headwater.delta.log.actions import AddFile
from headwater.delta.log.commit import Transaction
from headwater.delta.log.delta_log import DeltaLog, parse_timestamp
from headwater.delta.log.operations import Operation
from headwater.errors import (
    CorruptLogError,
    DeltaError,
    TableNotFoundError,
)
from headwater.storage.paths import hadoop_uri

MIN_RETENTION_HOURS = 168.0
RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"


def vacuum(
    spark: SparkSession, path: str, retention_hours: float | None = None, dry_run: bool = False
) -> DataFrame:
    """Delete files no version within the retention window references (default 7 days):
    files of removed versions, files no commit ever named (left by killed writers), and
    deletion-vector files no live or recent file names.

    ``dry_run``: delete nothing, list the files that would be deleted (``VACUUM ... DRY RUN``).
    Otherwise the result is the table's path, as delta-spark's SQL returns it; the count of
    deleted files is in the ``VACUUM END`` commit's metrics (``numDeletedFiles``).
    """
    hours = MIN_RETENTION_HOURS if retention_hours is None else float(retention_hours)
    check = str(spark.conf.get(RETENTION_CHECK, "true")).lower() != "false"
    if hours < MIN_RETENTION_HOURS and check:
        raise DeltaError(
            f"[DELTA_VACUUM_RETENTION_PERIOD_TOO_SHORT] Refusing to vacuum {path} with a retention of "
            f"{hours:g} hours, below the safe minimum of {MIN_RETENTION_HOURS:g} hours: concurrent readers "
            f"and writers may still need those files. If you are certain, set {RETENTION_CHECK}=false."
        )
    dlog = DeltaLog(path)
    snapshot = dlog.snapshot()
    table = snapshot.table
    cutoff_ms = int((time.time() - hours * 3600) * 1000)
    # delta-rs lists (dry run; full: also files no commit ever named); deleting is ours.
    listed = table.vacuum(
        retention_hours=int(hours), dry_run=True, enforce_retention_duration=False, full=True
    )
    doomed = [p if p.startswith("/") or "://" in p else storage.join(dlog.root, p) for p in listed]
    if replay.has_vectors(snapshot):
        # delta-rs counts deletion-vector files as unreferenced: keep those still named.
        keep = replay.referenced_vector_files(dlog, snapshot.version, cutoff_ms)
        doomed = [p for p in doomed if storage.normalize(p) not in keep]
    for info in storage.list_files(storage.join(dlog.root, STAGING_DIR)):  # killed writes
        if (info.mtime_ns or 0) / 1e6 < cutoff_ms:
            doomed.append(info.path)
    if not dry_run:
        _log_vacuum(dlog, "VACUUM START", hours, check, {"numFilesToDelete": len(doomed)})
        for p in doomed:
            storage.delete_file(p)
        _log_vacuum(dlog, "VACUUM END", hours, check, {"numDeletedFiles": len(doomed)})
    # Qualified, as delta-spark's are (file:/... for a local table).
    rows = [(hadoop_uri(p),) for p in doomed] if dry_run else [(hadoop_uri(dlog.root),)]
    return spark.createDataFrame(rows, "path string")


def _log_vacuum(dlog: DeltaLog, name: str, hours: float, check: bool, metrics: dict) -> None:
    params = (
        {"retentionCheckEnabled": check, "specifiedRetentionMillis": int(hours * 3_600_000)}
        if name == "VACUUM START"
        else {"status": "COMPLETED"}
    )
    txn = Transaction(dlog, dlog.snapshot(), Operation(name, params))
    txn.metrics = metrics
    txn.commit()


def _restore_timestamp(root: str, text: str) -> datetime:
    try:
        return parse_timestamp(text)
    except ValueError:
        raise DeltaError(
            f"[DELTA_TIMESTAMP_INVALID] The provided timestamp ('{text}') cannot be converted to "
            f"a valid timestamp, so {root} was not restored. Give a date or a timestamp such as '2024-05-01', "
            "'2024-05-01 12:30:00', '2024-05-01T12:30:00.123' or '2024-05-01T12:30:00+02:00' "
            "(UTC when no zone is given)."
        ) from None


def restore(
    spark: SparkSession, path: str, version: int | None = None, timestamp: str | None = None
) -> DataFrame:
    """Make the table's current version hold what ``version`` (or the version current at
    ``timestamp``) held: one commit removing the files added since and re-adding the files
    removed since, with that version's schema and properties."""
    dlog = DeltaLog(path)
    snapshot = dlog.snapshot()
    if version is not None:
        time_travel.check_version(dlog.log_dir, int(version), restoring=True)
        target_version = int(version)
    else:
        when = _restore_timestamp(dlog.root, str(timestamp))
        target_version = time_travel.version_as_of(dlog.history(), when, restoring=True)
    if not 0 <= target_version <= snapshot.version:
        raise TableNotFoundError(
            f"Cannot restore {dlog.root} to version {target_version}: its versions are "
            f"0..{snapshot.version}."
        )
    target = dlog.snapshot(version=target_version)
    now = replay.live_adds(dlog, snapshot.version)
    then = replay.live_adds(dlog, target_version)
    gone = [a for k, a in now.items() if k not in then or _vector(then[k]) != _vector(a)]
    back = [a for k, a in then.items() if k not in now or _vector(now[k]) != _vector(a)]
    missing = [a.relative_path for a in back if not _exists(dlog.root, a)]
    if missing:
        raise CorruptLogError(
            f"Cannot restore {dlog.root} to version {target_version}: {len(missing)} of its "
            f"files were deleted (by VACUUM), e.g. {missing[0]}. Restore a later version."
        )
    txn = Transaction(dlog, snapshot, Operation.restore(target_version, timestamp))
    txn.read_whole_table()
    if target.metadata != snapshot.metadata:
        txn.update_metadata(replace(target.metadata, id=snapshot.metadata.id))
    txn.remove_files(a.remove() for a in gone)
    txn.add_files(replace(a, data_change=True) for a in back)
    metrics = {
        "tableSizeAfterRestore": sum(a.size for a in then.values()),
        "numOfFilesAfterRestore": len(then),
        "numRemovedFiles": len(gone),
        "numRestoredFiles": len(back),
        "removedFilesSize": sum(a.size for a in gone),
        "restoredFilesSize": sum(a.size for a in back),
    }
    txn.metrics = dict(metrics)
    txn.commit()
    # delta-spark's result: the metrics, in its column names and order.
    return spark.createDataFrame([tuple(metrics.values())], RESTORE_RESULT)


RESTORE_RESULT = (
    "table_size_after_restore long, num_of_files_after_restore long, num_removed_files long, "
    "num_restored_files long, removed_files_size long, restored_files_size long"
)


def _vector(add: AddFile) -> tuple | None:
    """What tells two adds of the same path apart: their deletion vector."""
    dv = add.deletion_vector
    return None if dv is None else (dv["storageType"], dv["pathOrInlineDv"], dv.get("offset"))


def _exists(root: str, add: AddFile) -> bool:
    path = add.relative_path
    full = path if "://" in path or path.startswith("/") else storage.join(root, path)
    fs, inner = storage.filesystem(full)
    return fs.get_file_info(inner).type == pafs.FileType.File
