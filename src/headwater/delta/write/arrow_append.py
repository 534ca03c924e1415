"""A few rows held in Arrow on the driver written as one Parquet file and committed, with
no Spark job.

A Spark write of a handful of rows costs a job (about 0.1-0.2 s on a few cores: planning,
a task, the commit protocol) for what is one small file: the pipeline's event log pays it
at every flush, an incremental view's refresh in Arrow at every commit. Here the rows are
written with pyarrow (:func:`write_file`) and committed through the same
:class:`~headwater.delta.log.commit.Transaction` every headwater write commits with, so the
log, its conflict checks and its checkpoints are the same. Only tables with nothing a
Spark write would enforce or lay out take this path (:func:`why_not`): the caller writes
through Spark otherwise.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.types import StructType

from headwater import storage
from headwater.delta.files.data_files import discard_files
from headwater.delta.files.stats import file_stats
from headwater.delta.log import protocol
from headwater.delta.log.actions import AddFile, encode_path
from headwater.delta.log.commit import Transaction
from headwater.delta.log.delta_log import DeltaLog, Snapshot
from headwater.delta.log.operations import Operation
from headwater.delta.write.batch import WriteResult
from headwater.errors import ConcurrentModificationException


def why_not(snapshot: Snapshot, schema: StructType) -> str | None:
    """Why rows of ``schema`` cannot be appended to ``snapshot``'s table here, if they
    cannot: its schema is another, or it has partitions, constraints, generated or
    identity columns, or column mapping (what a Spark write lays out or enforces)."""
    if snapshot.schema.simpleString() != schema.simpleString():
        return "the table's schema is not the rows'"
    if snapshot.partition_columns:
        return "the table is partitioned"
    used = protocol.needed_features(snapshot.metadata)
    enforced = used & {
        "checkConstraints",
        "generatedColumns",
        "identityColumns",
        "columnMapping",
        "invariants",
    }
    if enforced or any(not f.nullable for f in snapshot.schema.fields):
        return "the table enforces constraints or maps its columns"
    return None


def append(
    log: DeltaLog,
    snapshot: Snapshot,
    rows: pa.Table,
    commit: Callable[[Transaction], int],
    user_metadata: str | None = None,
    operation: Operation | None = None,
    app_version: tuple[str, int] | None = None,
    compression: str = "snappy",
) -> WriteResult:
    """``rows`` appended to the table as one file in one commit (``commit``: the table's
    commit of a staged transaction); the file is deleted when the commit fails.
    ``operation`` names the commit (default ``WRITE`` append); ``app_version`` is a
    stream's ``(app id, batch id)``, recorded in the same commit."""
    snapshot.check_writable()
    protocol.check_writable(snapshot.protocol, snapshot.metadata, log.root, removes=False)
    txn = Transaction(log, snapshot, operation or Operation.write("append"))
    add = write_file(rows, log.root, snapshot.schema, compression)
    txn.add_files([add])
    if app_version is not None:
        txn.set_app_version(*app_version)
    txn.metrics = {"numFiles": 1, "numOutputRows": rows.num_rows, "numOutputBytes": add.size}
    txn.user_metadata = user_metadata
    try:
        version = commit(txn)
    except ConcurrentModificationException:
        discard_files(log.root, [add])  # never committed: nobody references it
        raise
    return WriteResult(version, num_files=1, num_rows=rows.num_rows, num_bytes=add.size)


def write_file(
    rows: pa.Table, root: str, schema: StructType, compression: str = "snappy"
) -> AddFile:
    """``rows`` as one Parquet file at the table's root (not committed: a file no commit
    names is invisible, and VACUUM removes it)."""
    suffix = {"none": "", "gzip": ".gz"}.get(compression, f".{compression}")
    rel = f"part-{uuid.uuid4()}.c000{suffix}.parquet"  # (as Spark's writer names them)
    fs, inner = storage.filesystem(storage.join(storage.normalize(root), rel))
    stream = fs.open_output_stream(inner)
    writer = pq.ParquetWriter(
        stream, rows.schema, compression=compression, write_page_checksum=False
    )
    writer.write_table(rows)
    writer.close()
    size = stream.tell()
    stream.close()
    return AddFile(
        path=encode_path(rel),
        partition_values={},
        size=size,
        modification_time=int(time.time() * 1000),
        stats=file_stats(writer.writer.metadata, schema),
    )
