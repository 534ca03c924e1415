"""New data files of a table: Spark's native Parquet writer, then add actions.

Executors write Parquet with Spark's own writer (vectorised, partitioned, no Python on the
data path) into a private staging directory inside the table; the driver then moves the
files into place and reads their footers for Delta statistics. On object stores, which
have no rename, pyarrow writes them instead, straight to their place
(:mod:`headwater.delta.files.arrow_write`; why: :mod:`headwater.delta.files.io_choice`). Nothing is committed here:
the caller stages the returned add actions in a transaction. Until that commit the files
are invisible to readers; a crash leaves only unreferenced files, which VACUUM removes.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pyarrow.parquet as pq
from pyarrow import fs as pafs
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from headwater import storage
from headwater.delta.files import arrow_write, column_values, identity, io_choice
from headwater.delta.files.constraints import checked, raise_if_violated
from headwater.delta.files.stats import file_stats
from headwater.delta.log.actions import AddCDCFile, AddFile, decode_path, encode_path
from headwater.delta.schema import column_mapping as mapping
from headwater.storage.partition_dirs import parse_partition_dir
from headwater.storage.paths import local_path as local_path  # re-exported for callers

STAGING_DIR = "_headwater_staging"
# Hadoop's output committer stages a job's files in ``_temporary/<attempt>/_temporary``
# below the output folder (the job's first attempt: 0). Made here beforehand, in Python:
# Hadoop makes each missing folder with its permissions set, which on the local file system
# without Hadoop's native library (a pip install has none) is a ``chmod`` child process per
# folder: four of a one-file write's, the staging folder's among them (the task attempt's
# own folder and the file itself still cost one each; see headwater.session for the rest).
COMMITTER_DIRS = ("_temporary", "0", "_temporary")


@dataclass(frozen=True)
class Written:
    """The files one write placed in the table (not yet committed)."""

    adds: list[AddFile]
    rows: int
    bytes: int
    # Identity column -> the furthest value this write assigned: the new high-water mark
    # the commit must record (see :mod:`headwater.delta.files.identity`).
    identity_marks: dict[str, int] = field(default_factory=dict)


def write_files(
    out: DataFrame,
    root: str,
    partition_by: Sequence[str],
    schema: StructType,
    *,
    data_change: bool = True,
    constraints: Mapping[str, str] | None = None,
    compression: str = "snappy",
    max_records_per_file: int | None = None,
) -> Written:
    """Write ``out`` as new Parquet files of the table at ``root``.

    ``constraints`` (the table's CHECK constraints) and the NOT NULL columns of ``schema``
    are enforced on every row written: a violation fails the write, and nothing is placed.
    Identity columns' new rows are numbered here; the commit records ``identity_marks``.
    """
    out, numbered = identity.assign(out, schema)
    required = [f.name for f in schema if not f.nullable and f.name in out.columns]
    out = checked(out, {**(constraints or {}), **column_values.checks(schema)}, required)
    partition_by = list(partition_by)
    if mapping.is_mapped(schema):
        out, schema, partition_by = _to_physical(out, schema, partition_by)
    data_schema = StructType([f for f in schema if f.name not in partition_by])
    if not io_choice.writes_natively(out.sparkSession, root):
        try:
            adds = arrow_write.write(
                out,
                root,
                partition_by,
                data_schema,
                data_change=data_change,
                compression=compression,
                max_records_per_file=max_records_per_file,
            )
        except Exception as e:
            raise_if_violated(e, root)
            raise
        rows = sum(a.num_records or 0 for a in adds)
        return Written(adds, rows, sum(a.size for a in adds), identity.marks(numbered))
    staging = storage.join(root, STAGING_DIR, uuid.uuid4().hex)
    storage.make_dir(storage.join(staging, *COMMITTER_DIRS))
    # Page checksums are optional in Parquet; readers of Delta tables neither need nor check
    # them, and computing them costs ~10% of the write. Appending to the folder made above
    # keeps it (an overwrite would delete and make it again); no `_SUCCESS` marker, and the
    # committer's `_temporary` is left for the staging folder's own removal below (Hadoop's
    # recursive delete took 27 of a one-row write's 118 ms).
    writer = (
        out.write.mode("append")
        .option("compression", compression)
        .option("parquet.page.write-checksum.enabled", "false")
        .option("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
        .option("mapreduce.fileoutputcommitter.cleanup.skipped", "true")
    )
    if max_records_per_file:
        writer = writer.option("maxRecordsPerFile", str(max_records_per_file))
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    try:
        writer.parquet(staging)
    except Exception as e:
        storage.delete_dir(staging)
        raise_if_violated(e, root)
        raise
    try:
        staged = staged_files(staging)

        def place(info: pafs.FileInfo) -> AddFile | None:
            return _place(info, staging, root, partition_by, data_schema, data_change)

        with ThreadPoolExecutor(max_workers=8) as pool:
            placed = list(pool.map(place, staged))
    finally:
        storage.delete_dir(staging)
    adds = [a for a in placed if a is not None]
    rows = sum(a.num_records or 0 for a in adds)
    return Written(adds, rows, sum(a.size for a in adds), identity.marks(numbered))


def staged_files(staging: str) -> list[pafs.FileInfo]:
    """The data files a committed job left in ``staging``: Parquet files, not hidden, and
    not under the committer's own folder, where a failed task attempt's files stay (its
    removal is left to the staging folder's, see :data:`COMMITTER_DIRS`)."""
    return [
        f
        for f in storage.list_files(staging)
        if f.path.endswith(".parquet")
        and not f.base_name.startswith((".", "_"))
        and not storage.relative(f.path, staging).startswith(f"{COMMITTER_DIRS[0]}/")
    ]


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


def _place(
    info: pafs.FileInfo,
    staging: str,
    root: str,
    partition_by: list[str],
    data_schema: StructType,
    data_change: bool,
) -> AddFile | None:
    rel = storage.relative(info.path, staging)
    fs, inner = storage.filesystem(info.path)
    meta = pq.read_metadata(fs.open_input_file(inner))
    if meta.num_rows == 0:
        return None  # Spark writes an empty file for an empty partition; Delta needs none
    values = parse_partition_dir(rel, partition_by)
    storage.move(info.path, storage.join(root, rel))
    return AddFile(
        path=encode_path(rel),
        partition_values=values,
        size=info.size or 0,
        modification_time=int(time.time() * 1000),
        data_change=data_change,
        stats=file_stats(meta, data_schema),
    )


def discard_files(root: str, files: Sequence[AddFile | AddCDCFile]) -> None:
    """Delete files :func:`write_files` placed that will not be committed."""
    for f in files:
        storage.delete_file(storage.join(root, decode_path(f.path)))
