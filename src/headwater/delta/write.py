"""Writing a DataFrame into a Delta table: Spark's native Parquet writer, one Delta commit.

Executors write Parquet with Spark's own writer (vectorised, partitioned, no Python on the
data path) into a private staging directory inside the table; the driver then moves the
files into place, reads their footers for Delta statistics, and commits every file in a
single Delta transaction. Until that commit the files are invisible to readers; a crash
leaves only unreferenced files, which VACUUM removes.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow.parquet as pq
from deltalake.transaction import AddAction, RemoveAction
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from headwater import storage
from headwater.delta import mapping
from headwater.delta import schema as schemas
from headwater.delta.commit import CommitRequest, CommitResult, commit
from headwater.delta.constraints import checked, raise_if_violated
from headwater.delta.log import DeltaLog, Snapshot
from headwater.delta.options import WriteOptions
from headwater.delta.partitions import parse_partition_dir
from headwater.delta.stats import file_stats
from headwater.errors import SchemaMismatchError, TableAlreadyExistsError, TableNotFoundError

log = logging.getLogger(__name__)

STAGING_DIR = "_headwater_staging"


@dataclass
class WriteResult:
    version: int | None  # None: nothing committed (ignore mode, or txn already committed)
    num_files: int = 0
    num_rows: int = 0
    num_bytes: int = 0
    created: bool = False
    schema_changed: bool = False


def write_dataframe(
    df: DataFrame,
    path: str,
    mode: str = "errorifexists",
    options: Mapping[str, str] | None = None,
    partition_by: list[str] | None = None,
    txn: tuple[str, int] | None = None,
    configuration: dict[str, str] | None = None,
) -> WriteResult:
    """Write ``df`` to the Delta table at ``path`` as one commit (see module docstring).

    ``mode``: ``append``, ``overwrite``, ``errorifexists``/``error``, ``ignore``.
    ``txn``: ``(app_id, version)``; a write whose transaction is already recorded is skipped.
    """
    opts = WriteOptions.parse(options or {})
    mode = _normalize_mode(mode)
    dlog = DeltaLog(path)
    try:
        snapshot: Snapshot | None = dlog.snapshot()
    except TableNotFoundError:
        snapshot = None  # a new table (a non-Delta directory was refused above)
    exists = snapshot is not None
    if exists:
        snapshot.check_writable(schema_change=mode == "overwrite" and opts.overwrite_schema)
    if exists and mode == "error":
        raise TableAlreadyExistsError(
            f"A Delta table already exists at {dlog.root}; use mode('append') or mode('overwrite')."
        )
    if exists and mode == "ignore":
        return WriteResult(version=None)
    if opts.overwrite_schema and mode != "overwrite":
        raise SchemaMismatchError("Option overwriteSchema=true requires mode('overwrite').")
    partition_by = list(partition_by or opts.partition_by)
    if txn is None and opts.txn_app_id is not None:
        txn = (opts.txn_app_id, opts.txn_version)

    if txn is not None and snapshot is not None:
        done = snapshot.table.transaction_version(txn[0])
        if done is not None and done >= txn[1]:
            return WriteResult(version=None)

    data_schema = schemas.as_nullable(df.schema)
    if snapshot is None or opts.overwrite_schema:
        schemas.check_writable(data_schema, partition_by)
        target = data_schema
        table_partitions = partition_by
        out = df
    else:
        table_partitions = snapshot.partition_columns
        if partition_by and [c.lower() for c in partition_by] != [
            c.lower() for c in table_partitions
        ]:
            raise SchemaMismatchError(
                f"The table at {dlog.root} is partitioned by {table_partitions or 'nothing'}, "
                f"not {partition_by}. Omit partitionBy, or overwrite with overwriteSchema=true."
            )
        target = schemas.reconcile(snapshot.schema, data_schema, merge=opts.merge_schema).schema
        if target != snapshot.schema:
            snapshot.check_writable(schema_change=True)
        out = _conform(df, target)

    replace_removes = None
    if mode == "overwrite" and opts.replace_where and snapshot is not None:
        out, replace_removes = _replace_where(df.sparkSession, out, snapshot, opts.replace_where)

    part_cols = _resolve_names(target, table_partitions)
    if snapshot is None:
        dlog.claim()
    checks = snapshot.check_constraints if snapshot is not None else None
    adds, nrows, nbytes = write_files(out, dlog.root, part_cols, target, opts, constraints=checks)

    if replace_removes is not None:
        request_mode = "replace"
    else:
        request_mode = "overwrite" if mode == "overwrite" else "append"
    request = CommitRequest(
        adds=adds,
        schema=target,
        partition_by=part_cols,
        mode=request_mode,
        schema_mode="overwrite"
        if opts.overwrite_schema
        else ("merge" if opts.merge_schema else "enforce"),
        select_removes=replace_removes,
        read_version=snapshot.version if snapshot is not None else None,
        txn=txn,
        metadata=_commit_metadata(opts, adds, nrows, nbytes, request_mode),
        configuration=configuration,
        base=snapshot.table if snapshot is not None else None,
    )
    result: CommitResult = commit(dlog, request)
    return WriteResult(
        version=result.version,
        num_files=len(adds),
        num_rows=nrows,
        num_bytes=nbytes,
        created=result.created,
        schema_changed=result.schema_changed,
    )


def _normalize_mode(mode: str | None) -> str:
    m = (mode or "errorifexists").lower()
    if m in ("error", "errorifexists", "default"):
        return "error"
    if m in ("append", "overwrite", "ignore"):
        return m
    raise SchemaMismatchError(
        f"Unknown save mode '{mode}'. Use append, overwrite, errorifexists or ignore."
    )


def _resolve_names(schema: StructType, names: list[str]) -> list[str]:
    by_lower = {f.name.lower(): f.name for f in schema}
    return [by_lower.get(n.lower(), n) for n in names]


def _conform(df: DataFrame, target: StructType) -> DataFrame:
    """Select the data in the table's column order and names; missing columns write null."""
    present = {f.name.lower(): f for f in df.schema}
    cols = []
    for f in target:
        src = present.get(f.name.lower())
        if src is None:
            cols.append(F.lit(None).cast(f.dataType).alias(f.name))
        elif src.dataType != f.dataType:
            cols.append(F.col(f"`{src.name}`").cast(f.dataType).alias(f.name))
        else:
            cols.append(F.col(f"`{src.name}`").alias(f.name))
    return df.select(*cols)


def _replace_where(spark, out: DataFrame, snapshot: Snapshot, predicate: str):
    """Check the new rows fit ``predicate``; keep old rows outside it; pick the files to remove."""
    from headwater.delta.read import read_snapshot

    cond = F.expr(predicate)
    bad = out.filter(~F.coalesce(cond, F.lit(False))).limit(1).count()
    if bad:
        raise SchemaMismatchError(
            f"Data written with replaceWhere '{predicate}' contains rows that do not match the "
            "predicate. Filter the data to the replaced range first."
        )
    current = read_snapshot(spark, snapshot).withColumn("__hw_file", F.col("_metadata.file_path"))
    touched = {
        r[0]
        for r in current.filter(F.coalesce(cond, F.lit(False)))
        .select("__hw_file")
        .distinct()
        .collect()
    }
    if not touched:
        return out, lambda snap: []
    touched_paths = {_strip_file_scheme(p) for p in touched}
    kept = current.filter(F.col("__hw_file").isin(list(touched))).filter(
        ~F.coalesce(cond, F.lit(False))
    )
    kept = kept.drop("__hw_file").select(*[F.col(f"`{c}`") for c in out.columns])
    now = int(time.time() * 1000)

    def select(snap: Snapshot) -> list[RemoveAction]:
        return [
            RemoveAction(f.path, True, now, f.size, f.partition_values)
            for f in snap.files
            if _strip_file_scheme(f.absolute(snap.root)) in touched_paths
        ]

    return out.unionByName(kept), select


def _strip_file_scheme(path: str) -> str:
    from urllib.parse import unquote, urlparse

    parsed = urlparse(path)
    return unquote(parsed.path) if parsed.scheme == "file" else path


def write_files(
    out: DataFrame,
    root: str,
    partition_by: list[str],
    schema: StructType,
    opts: WriteOptions | None = None,
    data_change: bool = True,
    constraints: Mapping[str, str] | None = None,
):
    """Write ``out`` as new Parquet files of the table at ``root``: (adds, rows, bytes).

    Nothing is committed; the caller commits these add actions (and any removes) at once.
    ``constraints`` (the table's CHECK constraints) and the NOT NULL columns of ``schema``
    are enforced on every row written.
    """
    opts = opts or WriteOptions()
    required = [f.name for f in schema if not f.nullable and f.name in out.columns]
    out = checked(out, constraints or {}, required)
    if mapping.is_mapped(schema):
        out, schema, partition_by = _to_physical(out, schema, partition_by)
    staging = storage.join(root, STAGING_DIR, uuid.uuid4().hex)
    # Page checksums are optional in Parquet; readers of Delta tables neither need nor check
    # them, and computing them costs ~10% of the write.
    writer = (
        out.write.mode("overwrite")
        .option("compression", opts.compression)
        .option("parquet.page.write-checksum.enabled", "false")
    )
    if opts.max_records_per_file:
        writer = writer.option("maxRecordsPerFile", str(opts.max_records_per_file))
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    try:
        writer.parquet(staging)
    except Exception as e:
        storage.delete_dir(staging)
        raise_if_violated(e, root)
        raise
    try:
        staged = [
            f
            for f in storage.list_files(staging)
            if f.path.endswith(".parquet") and not f.base_name.startswith((".", "_"))
        ]
        data_schema = StructType([f for f in schema if f.name not in partition_by])
        staging_local = storage.filesystem(staging)[1]
        with ThreadPoolExecutor(max_workers=8) as pool:
            adds = list(
                pool.map(
                    lambda f: _place(
                        f, staging_local, root, partition_by, data_schema, data_change
                    ),
                    staged,
                )
            )
        adds = [a for a in adds if a is not None]
    finally:
        storage.delete_dir(staging)
    nrows = sum(int(a.stats.split('"numRecords":', 1)[1].split(",", 1)[0]) for a in adds)
    nbytes = sum(a.size for a in adds)
    return adds, nrows, nbytes


def _to_physical(
    out: DataFrame, logical: StructType, partition_by: list[str]
) -> tuple[DataFrame, StructType, list[str]]:
    """Rows, schema and partition columns under the physical names of a table with column
    mapping: files, partition directories, stats and partition values all use them."""
    physical = mapping.file_schema(logical)
    names = {f.name: p.name for f, p in zip(logical.fields, physical.fields, strict=True)}
    out = out.select(
        *[
            F.col(f"`{f.name}`").cast(p.dataType).alias(p.name, metadata=p.metadata)
            for f, p in zip(logical.fields, physical.fields, strict=True)
        ]
    )
    return out, physical, [names[c] for c in partition_by]


def discard_files(root: str, adds) -> None:
    """Delete files :func:`write_files` placed that will not be committed."""
    for add in adds:
        storage.delete_file(storage.join(root, add.path))


def _place(
    info,
    staging: str,
    root: str,
    partition_by: list[str],
    data_schema: StructType,
    data_change: bool,
) -> AddAction | None:
    fs, _ = storage.filesystem(root)
    rel = info.path[len(staging) :].lstrip("/")
    meta = pq.read_metadata(fs.open_input_file(info.path))
    if meta.num_rows == 0:
        return None  # Spark writes an empty file for an empty partition; Delta needs none
    values = parse_partition_dir(rel, partition_by)
    storage.move(info.path, storage.join(root, rel))
    return AddAction(
        rel,
        info.size,
        values,
        int(time.time() * 1000),
        data_change,
        file_stats(meta, data_schema),
    )


def _commit_metadata(opts: WriteOptions, adds, nrows: int, nbytes: int, mode: str) -> dict:
    meta: dict = {
        "operationMetrics": {
            "numFiles": str(len(adds)),
            "numOutputRows": str(nrows),
            "numOutputBytes": str(nbytes),
        },
        "isBlindAppend": mode == "append",
    }
    if opts.user_metadata:
        meta["userMetadata"] = opts.user_metadata
    return meta
