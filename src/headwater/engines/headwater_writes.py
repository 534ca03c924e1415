"""headwater's engine's side of the door's writes that are not a DataFrame written.

* :func:`append_arrow` / :func:`overwrite_arrow`: rows the driver holds (an event log's
  events, a materialized view refreshed in Arrow) written with pyarrow as one Parquet file
  and committed, with no Spark job, through the same transaction every headwater write
  commits with (:mod:`headwater.delta.write.arrow_append`).
* :func:`append_recorded`: COPY INTO's load. Its files are written into the table's folder
  first (Spark's native writer), then one commit adds them *and* records the load in its
  ``commitInfo``, checked against every commit that landed since the load was planned
  (the caller's requirement), so no file is loaded twice and none is lost.

``api.Table`` calls these and keeps Spark's catalog in step; delta-spark's side is in
:mod:`headwater.engines.delta_spark`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from headwater.delta.files import identity
from headwater.delta.files.data_files import discard_files, write_files
from headwater.delta.log import protocol, replay
from headwater.delta.log.commit import Transaction
from headwater.delta.log.delta_log import DeltaLog, Snapshot
from headwater.delta.log.operations import Operation
from headwater.delta.maintenance import optimize as optimizing
from headwater.delta.maintenance import vacuum_restore
from headwater.delta.schema import table_schema as schemas
from headwater.delta.write import arrow_append
from headwater.delta.write.batch import WriteResult
from headwater.delta.write.create import new_metadata
from headwater.engines.door import RecordedAppend
from headwater.errors import ConcurrentModificationException, UnsupportedFeatureError

Commit = Callable[[Transaction], int]


def append_arrow(
    location: str, rows: pa.Table, schema: StructType, commit: Commit
) -> WriteResult | None:
    """``rows`` appended in one commit without a Spark job, when the table exists and takes
    such an append (no partitions, constraints, generated columns or column mapping: what
    a Spark write lays out or enforces); None otherwise, nothing written."""
    log = DeltaLog(location)
    if not log.exists():
        return None
    snapshot = log.snapshot()
    if arrow_append.why_not(snapshot, schema) is not None:
        return None
    return arrow_append.append(log, snapshot, rows, commit)


def overwrite_arrow(
    rows: pa.Table, read: Snapshot, user_metadata: str | None, commit: Commit
) -> WriteResult:
    """The table's rows replaced by ``rows`` (one file, or none) in one commit, opened at
    the version ``read``: a commit that changed the table since is a conflict."""
    read.check_writable()
    log = DeltaLog(read.root)
    protocol.check_writable(read.protocol, read.metadata, log.root, removes=True)
    txn = Transaction(log, read, Operation.write("overwrite"))
    txn.read_files([f.path for f in read.files])
    txn.remove_files(replay.removes(read, read.files))
    add = arrow_append.write_file(rows, log.root, read.schema) if rows.num_rows else None
    txn.add_files([add] if add is not None else [])
    txn.metrics = {
        "numFiles": 1 if add is not None else 0,
        "numOutputRows": rows.num_rows,
        "numOutputBytes": add.size if add is not None else 0,
    }
    txn.user_metadata = user_metadata
    try:
        version = commit(txn)
    except ConcurrentModificationException:
        discard_files(log.root, [add] if add is not None else [])
        raise
    size = add.size if add is not None else 0
    return WriteResult(
        version, num_files=int(add is not None), num_rows=rows.num_rows, num_bytes=size
    )


def append_recorded(
    location: str,
    df: DataFrame | None,
    append: RecordedAppend,
    commit: Commit,
) -> WriteResult:
    """``df`` written into the table's folder, then committed with ``append``'s record
    (a :class:`~headwater.engines.door.RecordedAppend`) in one commit checked by its
    requirement; the written files are deleted when the commit fails."""
    read = append.read
    assert read is None or isinstance(read, Snapshot)
    if read is not None:
        read.check_writable()
        if read.physical_schema is not None:
            raise UnsupportedFeatureError(
                f"{append.operation} into {location}: the table uses column mapping, which "
                f"{append.operation} does not write yet. Read the files with spark.read and "
                "append them (df.write.format('delta').mode('append')), which writes such "
                "tables."
            )
    log = DeltaLog(location)
    schema = append.schema
    parts = _named(schema, read.partition_columns if read is not None else [])
    adds, rows, size = [], 0, 0
    marks: dict[str, int] = {}  # identity columns' new high-water marks
    if df is not None:
        if read is None:
            log.claim()  # a crash before the first commit must not orphan the location
        checks = read.check_constraints if read is not None else None
        written = write_files(df, log.root, parts, schema, constraints=checks)
        adds, rows, size, marks = written.adds, written.rows, written.bytes, written.identity_marks
    record = append.record()
    txn = Transaction(log, read, Operation(append.operation, dict(append.parameters)))
    if read is None:
        txn.update_metadata(new_metadata(schema, parts))
    elif schema != read.schema:
        read.check_writable(schema_change=True)
        logged = schemas.to_delta_json(schemas.with_declared_not_null(schema))
        txn.update_metadata(
            replace(read.metadata, schema_string=identity.schema_string(logged, marks))
        )
    elif marks:
        logged = identity.schema_string(read.metadata.schema_string, marks)
        txn.update_metadata(replace(read.metadata, schema_string=logged))
    txn.add_files(adds)
    txn.metrics = {
        **record.metrics,
        "numAddedFiles": len(adds),
        "numOutputRows": rows,
        "numOutputBytes": size,
    }
    txn.commit_info_extra = dict(record.commit_info)
    if append.requirement is not None:
        txn.require(append.requirement)
    if append.txn is not None:
        txn.set_app_version(*append.txn)
    try:
        version = commit(txn)
    except ConcurrentModificationException:
        discard_files(log.root, adds)  # never committed: nobody references them
        raise
    return WriteResult(
        version,
        num_files=len(adds),
        num_rows=rows,
        num_bytes=size,
        created=read is None,
        schema_changed=read is not None and schema != read.schema,
    )


def optimize(
    spark: SparkSession, location: str, where: str | None, z_order_by: list[str], full: bool
) -> DataFrame:
    return optimizing.optimize(spark, location, where, z_order_by, full)


def vacuum(
    spark: SparkSession, location: str, retention_hours: float | None, dry_run: bool
) -> DataFrame:
    return vacuum_restore.vacuum(spark, location, retention_hours, dry_run=dry_run)


def _named(schema: StructType, names: list[str]) -> list[str]:
    """``names`` as ``schema`` spells its columns (partition columns are matched without
    case)."""
    by_lower = {f.name.lower(): f.name for f in schema}
    return [by_lower.get(n.lower(), n) for n in names]
