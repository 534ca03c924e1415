"""Committing what a DML changed: the removes of the rewritten files, the adds of their
replacements and, on tables with the change data feed, the changed rows, as one version.

A DML's transaction is opened on the snapshot it read (:func:`open_transaction`), so a
commit that lands in between is checked against the files it read (see
:mod:`.commit`). delta-spark's idempotent-write settings make a replayed
``foreachBatch`` MERGE/UPDATE/DELETE a no-op.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from headwater.delta.dml.metrics import Clock, files_changed
from headwater.delta.files import change_data
from headwater.delta.files.data_files import discard_files
from headwater.delta.log import replay
from headwater.delta.log.actions import AddCDCFile, AddFile
from headwater.delta.log.commit import PartitionFilter, Transaction
from headwater.delta.log.delta_log import DataFile, DeltaLog, Snapshot
from headwater.delta.log.operations import Operation
from headwater.delta.schema import table_schema as schemas
from headwater.errors import ConcurrentModificationException

TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"


@dataclass(frozen=True)
class Result:
    version: int | None  # None: nothing committed
    metrics: dict[str, int] = field(default_factory=dict)
    schema_changed: bool = False  # a catalog mirroring the table must learn the new schema


def open_transaction(
    spark: SparkSession,
    snapshot: Snapshot,
    operation: Operation,
    txn_id: tuple[str, int] | None = None,
) -> tuple[Transaction, bool]:
    """The DML's transaction, and True when it already ran: ``txn_id`` (an application id
    and version) or delta-spark's idempotent-write confs (set both in a ``foreachBatch``
    function: a stable app id, the batch id) name an application version the table has
    recorded. Callers that own the batch loop pass ``txn_id``: session confs are shared by
    every thread of the session."""
    txn = Transaction(DeltaLog(snapshot.root), snapshot, operation)
    app_id, version = txn_id or (
        spark.conf.get(TXN_APP_ID, None),
        spark.conf.get(TXN_VERSION, None),
    )
    if not app_id or version is None:
        return txn, False
    done = txn.app_version(app_id)
    if done is not None and done >= int(version):
        return txn, True
    txn.set_app_version(app_id, int(version))
    return txn, False


def evolve_schema(txn: Transaction, schema: StructType) -> None:
    """Stage ``schema`` (the read schema with columns added) as the table's new schema,
    when it differs (MERGE with schema evolution)."""
    snapshot = txn.snapshot
    assert snapshot is not None
    if schema == snapshot.schema:
        return
    snapshot.check_writable(schema_change=True)
    new = schemas.to_delta_json(schemas.with_declared_not_null(schema))
    txn.update_metadata(replace(snapshot.metadata, schema_string=new))


def commit_rewrite(
    txn: Transaction,
    *,
    read: list[DataFile],
    partitions: PartitionFilter | None,
    removed: list[DataFile],
    adds: list[AddFile],
    metrics: dict[str, int],
    schema: StructType | None = None,
    changes: Callable[[], DataFrame] | None = None,
    clock: Clock | None = None,
    merge: bool = False,
) -> int | None:
    """Commit a DML that rewrote files: ``read`` (files it read, in the partitions
    ``partitions`` selects), ``removed`` (files it replaces), ``adds`` (their replacements
    and new rows), ``schema`` (a wider schema, MERGE with schema evolution). ``changes``
    builds the changed rows (with ``_change_type``), recorded when the table has the change
    data feed and files were rewritten. ``metrics`` (the row and file counts) gain the
    bytes, change files, deletion vectors and ``clock``'s times, as delta-spark logs them
    (``merge``: MERGE's names). None when there was nothing to commit."""
    snapshot = txn.snapshot
    assert snapshot is not None
    txn.read_files([f.path for f in read], partitions)
    if schema is not None:
        evolve_schema(txn, schema)
    removes = replay.removes(snapshot, removed)
    cdc: list[AddCDCFile] = []
    if changes is not None and removes and change_data.enabled(snapshot.configuration):
        cdc = change_data.write_changes(changes(), snapshot, schema or snapshot.schema)
        txn.add_cdc_files(cdc)
    txn.remove_files(removes)
    txn.add_files(adds)
    metrics.update(files_changed(removes, adds, cdc).named(merge))
    metrics.update((clock or Clock()).times())
    txn.metrics = dict(metrics)
    if txn.is_empty:
        return None
    try:
        return txn.commit()
    except ConcurrentModificationException:
        discard_files(snapshot.root, [*adds, *cdc])
        raise
