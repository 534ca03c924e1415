"""Writing a DataFrame into a Delta table: Spark's native Parquet writer, one Delta commit.

The data files are written first (:mod:`.data_files`), then one transaction commits them
with whatever the write changes besides: the table's creation, a wider schema
(``mergeSchema``), a replaced schema and partitioning (``overwriteSchema``), the removal
of the files an overwrite or ``replaceWhere`` replaces, and the application version that
makes a replayed write a no-op. All of it lands as one version.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from dataclasses import dataclass, replace

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from headwater.delta.files import column_values, identity
from headwater.delta.files.data_files import Written, discard_files, local_path, write_files
from headwater.delta.log import clustering, protocol, replay
from headwater.delta.log.actions import Metadata, now_ms
from headwater.delta.log.commit import Transaction
from headwater.delta.log.delta_log import DataFile, DeltaLog, Snapshot
from headwater.delta.log.follow import FollowedLog
from headwater.delta.log.operations import Operation
from headwater.delta.options import WriteSpec, auto_merge
from headwater.delta.read.batch import read_snapshot
from headwater.delta.read.pruning import partition_filter
from headwater.delta.schema import column_mapping as mapping
from headwater.delta.schema import table_schema as schemas
from headwater.delta.write.create import session_defaults
from headwater.errors import (
    ConcurrentModificationException,
    MetadataChangedException,
    ProtocolChangedException,
    SchemaMismatchError,
    TableAlreadyExistsError,
    TableNotFoundError,
)

log = logging.getLogger(__name__)
# Writes into a table with identity columns race on its high-water mark; each lost race
# costs one rewrite of the batch.
IDENTITY_ATTEMPTS = 10


@dataclass(frozen=True)
class WriteResult:
    version: int | None  # None: nothing committed (ignore mode, or txn already committed)
    num_files: int = 0
    num_rows: int = 0
    num_bytes: int = 0
    created: bool = False
    schema_changed: bool = False


def write(
    df: DataFrame,
    path: str,
    spec: WriteSpec,
    operation: Operation | None = None,
    follow: FollowedLog | None = None,
) -> WriteResult:
    """Write ``df`` to the Delta table at ``path`` as one commit.

    ``operation`` names the commit in the table's history (default ``WRITE`` with the save
    mode). A table created concurrently by another writer between our read and our commit
    is written into as it then is (errorifexists fails instead). ``follow``: the table's
    log as a writer that commits again and again keeps it (a stream's sink), read from
    there instead of loaded afresh.
    """
    dlog = follow.log if follow is not None else DeltaLog(path)
    attempts = 3
    for attempt in range(IDENTITY_ATTEMPTS):
        snapshot = _snapshot_or_none(dlog, follow)
        try:
            return _write(df, dlog, snapshot, spec, operation)
        except MetadataChangedException:
            # Identity values were numbered from a high-water mark a concurrent write has
            # since moved: number them again from the new one (the files were discarded).
            numbered = snapshot is not None and identity.of(snapshot.schema)
            if not numbered or attempt == IDENTITY_ATTEMPTS - 1:
                raise
            time.sleep(random.uniform(0.05, 0.5) * (attempt + 1))
            log.info("%s: identity high-water mark moved; writing again", dlog.root)
        except ProtocolChangedException:
            if snapshot is not None or attempt == attempts - 1:
                raise
            if spec.mode == "error":
                raise TableAlreadyExistsError(
                    f"[DELTA_PATH_EXISTS] A Delta table was created at {dlog.root} while this "
                    "write ran; use mode('append') or mode('overwrite')."
                ) from None
            log.info("table %s created concurrently; writing into it", dlog.root)
    raise AssertionError("unreachable")


def _snapshot_or_none(dlog: DeltaLog, follow: FollowedLog | None = None) -> Snapshot | None:
    try:
        return follow.snapshot() if follow is not None else dlog.snapshot()
    except TableNotFoundError:
        return None  # a new table (a non-Delta directory was refused by the log)


def _write(
    df: DataFrame,
    dlog: DeltaLog,
    snapshot: Snapshot | None,
    spec: WriteSpec,
    operation: Operation | None,
) -> WriteResult:
    mode = spec.mode
    if snapshot is not None and spec.txn is not None:
        # A replayed write (same txnAppId and txnVersion) is skipped before anything else,
        # whatever the mode: the default errorifexists must not fail the replay of a
        # write that created the table (delta-spark checks it first too).
        done = snapshot.table.transaction_version(spec.txn[0])
        if done is not None and done >= spec.txn[1]:
            return WriteResult(version=None)
    if snapshot is not None:
        snapshot.check_writable(schema_change=mode == "overwrite" and spec.overwrite_schema)
        if mode == "error":
            raise TableAlreadyExistsError(
                f"[DELTA_PATH_EXISTS] A Delta table already exists at {dlog.root}; use "
                "mode('append') or mode('overwrite')."
            )
        if mode == "ignore":
            return WriteResult(version=None)
    if spec.overwrite_schema and mode != "overwrite":
        raise SchemaMismatchError("Option overwriteSchema=true requires mode('overwrite').")
    partition_by = list(spec.partition_by)
    if snapshot is not None:  # refused by feature name before any file is written
        protocol.check_writable(
            snapshot.protocol, snapshot.metadata, dlog.root, removes=mode == "overwrite"
        )
    txn = Transaction(dlog, snapshot, operation or _operation(snapshot, mode, spec))
    if spec.txn is not None:
        done = txn.app_version(spec.txn[0])
        if done is not None and done >= spec.txn[1]:
            return WriteResult(version=None)

    # A DataFrame read from a column-mapped table names its source's physical columns.
    data_schema = mapping.without_mapping(schemas.as_nullable(df.schema))
    if snapshot is None or spec.overwrite_schema:
        schemas.check_writable(data_schema, partition_by)
        target, table_partitions, out = data_schema, partition_by, df
    else:
        table_partitions = snapshot.partition_columns
        if partition_by and [c.lower() for c in partition_by] != [
            c.lower() for c in table_partitions
        ]:
            raise SchemaMismatchError(
                f"[DELTA_METADATA_MISMATCH] The table at {dlog.root} is partitioned by "
                f"{table_partitions or 'nothing'}, not {partition_by}. Omit partitionBy, or "
                "overwrite with overwriteSchema=true."
            )
        evolve = spec.merge_schema or auto_merge(df.sparkSession)
        target = schemas.reconcile(snapshot.schema, data_schema, merge=evolve).schema
        if target != snapshot.schema:
            snapshot.check_writable(schema_change=True)
        # Already in the table's column order, names and types (every micro-batch of a
        # stream): nothing to select, which saves the JVM calls of a projection.
        identity.refuse_explicit(df.columns, snapshot.schema, f"The write to {dlog.root}")
        out = df if data_schema == target else _conform(df, target)

    replaced: list[DataFile] | None = None
    if mode == "overwrite" and snapshot is not None:
        if spec.replace_where:
            out, replaced = _replace_where(df.sparkSession, out, snapshot, spec.replace_where)
            txn.read_files(
                [f.path for f in replaced],
                partition_filter(df.sparkSession, snapshot, spec.replace_where),
            )
        else:
            replaced = snapshot.files
            txn.read_files([f.path for f in replaced])

    part_cols = _resolve_names(target, table_partitions)
    if spec.cluster_by is not None:  # refused before any file is written
        _check_clustering(snapshot, spec, target, part_cols)
    if snapshot is None:
        dlog.claim()
    written = write_files(
        out,
        dlog.root,
        part_cols,
        target,
        constraints=snapshot.check_constraints if snapshot is not None else None,
        compression=spec.compression,
        max_records_per_file=spec.max_records_per_file,
    )
    schema_changed = _stage_metadata(txn, snapshot, target, part_cols, spec)
    if written.identity_marks:
        txn.update_metadata(
            replace(
                txn.metadata,
                schema_string=identity.schema_string(
                    txn.metadata.schema_string, written.identity_marks
                ),
            )
        )
    if spec.cluster_by is not None:
        _stage_clustering(txn, snapshot, spec)
    if replaced:
        txn.remove_files(replay.removes(snapshot, replaced, spec.data_change))  # type: ignore[arg-type]
    txn.add_files([replace(a, data_change=spec.data_change) for a in written.adds])
    if spec.txn is not None:
        txn.set_app_version(*spec.txn)
    txn.metrics = _metrics(written)
    txn.user_metadata = spec.user_metadata
    try:
        version = txn.commit()
    except ConcurrentModificationException:
        discard_files(dlog.root, written.adds)  # never committed: nobody references them
        raise
    return WriteResult(
        version=version,
        num_files=len(written.adds),
        num_rows=written.rows,
        num_bytes=written.bytes,
        created=snapshot is None,
        schema_changed=schema_changed,
    )


def _operation(snapshot: Snapshot | None, mode: str, spec: WriteSpec) -> Operation:
    if spec.as_table and (snapshot is None or mode == "overwrite"):
        return Operation.create_table(
            spec.partition_by,
            dict(spec.configuration or {}),
            spec.description,
            as_select=True,
            replace=snapshot is not None,
        )
    return Operation.write(mode, spec.partition_by, spec.replace_where)


def _stage_metadata(
    txn: Transaction,
    snapshot: Snapshot | None,
    schema: StructType,
    partition_by: list[str],
    spec: WriteSpec,
) -> bool:
    """Stage the table's new metadata, if the write changes it; True when it does."""
    schema_string = schemas.to_delta_json(schemas.as_nullable(schema))
    if snapshot is None:
        txn.update_metadata(
            Metadata(
                id=str(uuid.uuid4()),
                schema_string=schema_string,
                partition_columns=tuple(partition_by),
                configuration={**session_defaults(), **dict(spec.configuration or {})},
                description=spec.description,
                created_time=now_ms(),
            )
        )
        return True
    current = snapshot.metadata
    new = current
    if spec.overwrite_schema:
        new = replace(
            current,
            schema_string=schema_string,
            partition_columns=tuple(partition_by),
            configuration=dict(spec.configuration)
            if spec.configuration is not None
            else current.configuration,
            description=spec.description if spec.description is not None else current.description,
        )
    elif schema != snapshot.schema:
        new = replace(current, schema_string=schema_string)
    if new == current:
        return False
    txn.update_metadata(new)
    return txn.changes_schema


def _check_clustering(
    snapshot: Snapshot | None, spec: WriteSpec, schema: StructType, partition_by: list[str]
) -> None:
    """``df.write.clusterBy(...)``: columns a new (or schema-replacing) table can be
    clustered by; an append to a table clustered otherwise is refused, as in delta-spark."""
    assert spec.cluster_by is not None
    if snapshot is None or spec.overwrite_schema:
        clustering.check(spec.cluster_by, schema, partition_by)
        return
    current = clustering.columns_of(snapshot) or []
    if [c.lower() for c in current] != [c.lower() for c in spec.cluster_by]:
        raise SchemaMismatchError(
            f"[DELTA_CLUSTERING_COLUMNS_MISMATCH] clusterBy({', '.join(spec.cluster_by)}) does "
            f"not match the clustering columns of {snapshot.root} "
            f"({', '.join(current) or 'none'}). Drop clusterBy, change the table's columns "
            "with ALTER TABLE ... CLUSTER BY, or overwrite with overwriteSchema=true."
        )


def _stage_clustering(txn: Transaction, snapshot: Snapshot | None, spec: WriteSpec) -> None:
    """The clustering of a table this write creates or redefines (checked already)."""
    if spec.cluster_by is not None and (snapshot is None or spec.overwrite_schema):
        clustering.stage(txn, spec.cluster_by)


def _metrics(written: Written) -> dict[str, int | str]:
    return {
        "numFiles": len(written.adds),
        "numOutputRows": written.rows,
        "numOutputBytes": written.bytes,
    }


def _resolve_names(schema: StructType, names: list[str]) -> list[str]:
    by_lower = {f.name.lower(): f.name for f in schema}
    return [by_lower.get(n.lower(), n) for n in names]


def _conform(df: DataFrame, target: StructType) -> DataFrame:
    """Select the data in the table's column order and names; missing columns write null,
    their default, or (generated columns) their expression."""
    present = {f.name.lower(): f for f in df.schema}
    cols = []
    for f in target:
        src = present.get(f.name.lower())
        if src is None:
            cols.append(column_values.missing_value(f).alias(f.name))
        elif src.dataType != f.dataType:
            cols.append(F.col(f"`{src.name}`").cast(f.dataType).alias(f.name))
        else:
            cols.append(F.col(f"`{src.name}`").alias(f.name))
    return df.select(*cols)


def _replace_where(
    spark: SparkSession, out: DataFrame, snapshot: Snapshot, predicate: str
) -> tuple[DataFrame, list[DataFile]]:
    """Check the new rows fit ``predicate``; keep old rows outside it; the files replaced."""
    cond = F.coalesce(F.expr(predicate), F.lit(False))
    if out.filter(~cond).limit(1).count():
        raise SchemaMismatchError(
            f"[DELTA_REPLACE_WHERE_MISMATCH] Data written with replaceWhere '{predicate}' "
            "contains rows that do not match the predicate. Filter the data to the replaced "
            "range first."
        )
    current = read_snapshot(spark, snapshot).withColumn("__hw_file", F.col("_metadata.file_path"))
    touched = {r[0] for r in current.filter(cond).select("__hw_file").distinct().collect()}
    if not touched:
        return out, []
    touched_paths = {local_path(p) for p in touched}
    kept = current.filter(F.col("__hw_file").isin(list(touched))).filter(~cond)
    kept = kept.drop("__hw_file").select(*[F.col(f"`{c}`") for c in out.columns])
    files = [f for f in snapshot.files if local_path(f.absolute(snapshot.root)) in touched_paths]
    return out.unionByName(kept), files
