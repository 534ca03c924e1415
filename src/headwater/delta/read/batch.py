"""Batch reads of a Delta snapshot.

Two paths, same rows:

* **native** (default): the snapshot's file list handed to Spark's own Parquet scan, with
  the partition values recovered from the ``k=v`` directories by Spark's partition
  discovery. Column pruning, vectorised decoding, row-group skipping and partition pruning
  all come from Spark, so a scan costs what a plain Parquet scan costs. Rows deleted by
  deletion vectors are dropped by an anti-join on (``_metadata.file_path``,
  ``_metadata.row_index``) against the vectors' positions.
* **python**: the ``delta`` Python data source (:mod:`headwater.delta.read.source`), used when
  the files cannot be described to Spark's scan exactly (partition values that do not match
  their directories, paths Spark would treat as globs or hidden files).

The native path is chosen only after checking, file by file, that it is exact.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, DataFrameReader, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    ByteType,
    DateType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
)

from headwater import storage
from headwater.delta.files import io_choice
from headwater.delta.log import replay
from headwater.delta.log.delta_log import DataFile, DeltaLog, Snapshot
from headwater.delta.options import READ_OPTIONS, check_known
from headwater.delta.read import change_feed as cdf
from headwater.delta.read import native_scan
from headwater.delta.read.filtered import DeltaFrame
from headwater.delta.read.pruned import PrunedFrame
from headwater.delta.read.source import FILE_COLUMN_OPTION
from headwater.errors import CorruptLogError
from headwater.originals import original
from headwater.storage.partition_dirs import NULL_PARTITION, unescape
from headwater.storage.paths import file_uri_spellings

# Partition types whose directory text Spark parses back to exactly the logged value.
_NATIVE_PARTITION_TYPES = (
    StringType,
    IntegerType,
    LongType,
    ShortType,
    ByteType,
    DateType,
    BooleanType,
)
_GLOB_CHARS = set("*?[]{}\\")
_DV_FILE, _DV_ROW = "__hw_dv_file", "__hw_dv_row"


def read_delta(spark: SparkSession, path: str, options: dict[str, str] | None = None) -> DataFrame:
    """``spark.read.format("delta").load(path)`` with time travel options."""
    opts = check_known(options or {}, READ_OPTIONS, "reading a delta table")
    if "versionasof" in opts and "timestampasof" in opts:
        from headwater.errors import OptionError

        raise OptionError("Give only one of versionAsOf and timestampAsOf.")
    dlog = DeltaLog(path)
    if cdf.requested(opts):
        # Resolve and check the range here, so a bad one fails with our error, not Spark's.
        start, end = cdf.resolve_range(dlog, opts)
        cdf.range_tasks(dlog, start, end)
        reader = spark.read.format("delta").options(
            readChangeFeed="true", startingVersion=str(start), endingVersion=str(end)
        )
        return original(DataFrameReader, "load")(reader, dlog.root)
    snapshot = dlog.snapshot(version=opts.get("versionasof"), timestamp=opts.get("timestampasof"))
    return read_snapshot(spark, snapshot)


def read_snapshot(
    spark: SparkSession, snapshot: Snapshot, files: list[DataFile] | None = None
) -> DataFrame:
    """The snapshot's rows (only those of ``files``, a subset of its files, when given)."""
    snapshot.check_readable()
    schema = snapshot.schema
    subset = files is not None
    files = snapshot.files if files is None else files
    if not files:
        return spark.createDataFrame([], schema)
    native = native_eligible(snapshot, with_vectors=True)
    if subset and not native:
        raise ValueError("a subset of files can be read only on the native path")
    if native:
        df, uris = native_scan.scan(spark, snapshot, files, schema)
        if replay.has_vectors(snapshot) or df.columns != schema.fieldNames():
            df = without_deleted_rows(spark, snapshot, files, df, uris)
            df = df.select(*[f"`{f.name}`" for f in schema])
        # A whole snapshot's scan skips files by the log's stats once filtered.
        return df if subset else DeltaFrame(df, snapshot)
    snapshot.check_python_readable()
    # Spark prunes no column of a Python source: the frame reads only those a query uses.
    return PrunedFrame(python_read(spark, snapshot), snapshot, _python_scan)


def read_appended(spark: SparkSession, path: str, since: int, until: int) -> DataFrame | None:
    """The rows that commits ``since + 1 .. until`` added, when those commits only added
    rows and what they added is still read exactly from its own files at ``until``;
    None otherwise (a removed or rewritten row, a file compacted away by OPTIMIZE since,
    a snapshot Spark's scan cannot read exactly): the caller reads the whole table.

    What an incremental refresh of a materialized view reads of an append-only input:
    the files named by the add actions are the new rows, no more and no fewer."""
    dlog = DeltaLog(path)
    snapshot = dlog.snapshot(version=until)
    live = {f.logged_path: f for f in snapshot.files}
    files: list[DataFile] = []
    for version in range(since + 1, until + 1):
        commit = dlog.read_commit(version)
        if any(r.data_change for r in commit.removes):
            return None
        for add in commit.adds:
            if not add.data_change:
                continue
            found = live.get(add.path)
            if found is None or add.deletion_vector is not None:
                return None
            files.append(found)
    if not files:
        snapshot.check_readable()
        return spark.createDataFrame([], snapshot.schema)
    if not native_eligible(snapshot, with_vectors=True):
        return None
    return read_snapshot(spark, snapshot, files)


def python_read(
    spark: SparkSession,
    snapshot: Snapshot,
    file_column: str | None = None,
    columns: StructType | None = None,
) -> DataFrame:
    """Read through the ``delta`` Python source; ``file_column`` adds each row's file path
    (what ``_metadata.file_path`` gives on the native path); ``columns`` (some of the
    snapshot's) reads only those."""
    reader = spark.read.format("delta").option("versionAsOf", str(snapshot.version))
    if file_column:
        reader = reader.option(FILE_COLUMN_OPTION, file_column)
    if columns is not None:
        reader = reader.schema(columns)
    return original(DataFrameReader, "load")(reader, snapshot.root)


def _python_scan(spark: SparkSession, snapshot: Snapshot, columns: StructType) -> DataFrame:
    return python_read(spark, snapshot, columns=columns)


def without_deleted_rows(
    spark: SparkSession,
    snapshot: Snapshot,
    files: list[DataFile],
    df: DataFrame,
    uris: dict[str, str] | None = None,
) -> DataFrame:
    """``df`` (Spark's scan of ``files``) without the rows their deletion vectors delete:
    an anti-join on (file, row position) against the vectors' positions. ``uris``: the
    files as the scan lists them, when known."""
    if not replay.has_vectors(snapshot):
        return df  # no vector can exist: skip the log replay
    positions = replay.deleted_positions(
        DeltaLog(snapshot.root), snapshot.version, {f.path for f in files}
    )
    if not positions:
        return df
    # The text _metadata.file_path will hold: the scan's own URIs (file:/..., URL-encoded).
    if not uris:
        listed = native_scan.listed_files(spark, df)
        uris = {f.path: u for f in files if (u := listed.get(f.absolute(snapshot.root)))}
    names, rows = [], []
    for path, deleted in positions.items():
        uri = uris.get(path)
        if uri is None:
            raise CorruptLogError(
                f"The scan of {snapshot.root} does not list {path}, which has a deletion "
                "vector; its deleted rows cannot be dropped. Nothing was read."
            )
        for name in file_uri_spellings(uri):
            names.append(name)
            rows.append(deleted.astype("int64"))
    table = pa.table(
        {
            _DV_FILE: pa.array(np.repeat(names, [len(r) for r in rows]), pa.string()),
            _DV_ROW: pa.array(np.concatenate(rows), pa.int64()),
        }
    )
    gone = spark.createDataFrame(table)
    on = (F.col("_metadata.file_path") == gone[_DV_FILE]) & (
        F.col("_metadata.row_index") == gone[_DV_ROW]
    )
    return df.join(gone, on, "left_anti")


def native_eligible(snapshot: Snapshot, with_vectors: bool = False) -> bool:
    """True when Spark's Parquet scan of the file list yields exactly the snapshot's rows
    (``with_vectors``: once :func:`without_deleted_rows` drops the deleted ones)."""
    if storage.is_remote(snapshot.root):
        spark = SparkSession.getActiveSession()
        if spark is None or not io_choice.spark_has_filesystem(spark, snapshot.root):
            return False  # no Hadoop filesystem for the store: the Python path reads it
    schema: StructType = snapshot.schema
    parts = snapshot.partition_columns
    if not with_vectors and snapshot.deletion_vectors:
        return False  # Spark's scan cannot drop the deleted rows itself
    if snapshot.physical_schema is not None:
        return False  # files hold physical column names; the Python path renames them
    by_name = {f.name: f for f in schema}
    if any(not isinstance(by_name[c].dataType, _NATIVE_PARTITION_TYPES) for c in parts):
        return False
    if any(f.name.lower() != f.name and f.name in parts for f in schema):
        return (
            False  # mixed-case partition names: not verified against Spark's discovery; exact path
        )
    for f in snapshot.files:
        name = f.path.rsplit("/", 1)[-1]
        if name.startswith(("_", ".")) or _GLOB_CHARS & set(f.path):
            return False
        if parts and not _dirs_match(f.path, f.partition_values, parts):
            return False
        if not parts and "/" in f.path and "=" in f.path.rsplit("/", 1)[0]:
            return False  # k=v directories in an unpartitioned table would become columns
    return True


def _dirs_match(path: str, values: dict[str, str | None], parts: list[str]) -> bool:
    segments = path.split("/")[:-1]
    if len(segments) != len(parts):
        return False
    for segment, column in zip(segments, parts, strict=True):
        if "=" not in segment:
            return False
        key, raw = segment.split("=", 1)
        if unescape(key) != column:
            return False
        text = unescape(raw)
        expected = values.get(column)
        if expected in (None, ""):
            if text != NULL_PARTITION:
                return False
        elif text != expected:
            return False
    return True
