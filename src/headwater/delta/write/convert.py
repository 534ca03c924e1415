"""CONVERT TO DELTA: a directory of Parquet files becomes a Delta table in place.

One commit adds every existing file as it is (no data is read or rewritten beyond the
Parquet footers, which give the schema and each file's stats), so conversion costs
seconds for any size of data and the files stay readable by Parquet readers. Partition
directories (``k=v/``) need the partition schema, as in delta-spark: guessing types from
directory names could turn ``007`` into ``7``.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import pyarrow.parquet as pq
from pyarrow import fs as pafs
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from headwater import storage
from headwater.delta.files.stats import file_stats
from headwater.delta.log.actions import AddFile, encode_path
from headwater.delta.log.commit import Transaction
from headwater.delta.log.delta_log import DeltaLog
from headwater.delta.log.operations import Operation
from headwater.delta.schema import table_schema as schemas
from headwater.delta.write.create import new_metadata
from headwater.errors import DeltaAnalysisError, UnsupportedFeatureError
from headwater.sqltypes import parse_schema
from headwater.storage.partition_dirs import parse_partition_dir

_PARQUET_PATH = re.compile(r"^\s*parquet\s*\.\s*`(?P<path>(?:[^`]|``)+)`\s*$", re.IGNORECASE)


def parquet_path(identifier: str) -> str:
    """The directory of ``parquet.`/path``` (the form delta-spark takes)."""
    match = _PARQUET_PATH.match(identifier)
    if match is None:
        raise UnsupportedFeatureError(
            f"CONVERT TO DELTA {identifier}: give the Parquet directory as parquet.`/path`; "
            "converting a catalog table by name is not supported yet."
        )
    return match.group("path").replace("``", "`")


def convert_to_delta(
    spark: SparkSession,
    identifier: str,
    partition_schema: str | StructType | None = None,
    *,
    statistics: bool = True,
) -> str:
    """Write a Delta log over the Parquet files under ``parquet.`/path```; the table's path.
    A directory that already is a Delta table is left as it is. ``statistics=False``
    (``NO STATISTICS``) skips the footers' stats: faster, but no file skipping."""
    root = storage.normalize(parquet_path(identifier))
    dlog = DeltaLog(root)
    if dlog.exists():
        return dlog.root
    if not storage.is_dir(root):
        raise DeltaAnalysisError(
            f"[DELTA_PATH_DOES_NOT_EXIST] CONVERT TO DELTA: {root} does not exist."
        )
    parts = _partition_schema(partition_schema)
    files = _parquet_files(root)
    columns = parts.fieldNames()
    located = [(info, _relative(root, info), columns) for info in files]
    for _, rel, _ in located:
        _check_layout(rel, columns, root)
    data = _data_schema(spark, [info.path for info in files], set(columns))
    schema = StructType([*data.fields, *parts.fields])
    fs, _ = storage.filesystem(root)
    with ThreadPoolExecutor(max_workers=8) as pool:
        adds = list(
            pool.map(lambda item: _add(fs, item[0], item[1], columns, data, statistics), located)
        )
    operation = Operation(
        "CONVERT",
        {
            "numFiles": len(adds),
            "partitionedBy": columns,
            "collectStats": statistics,
            "sourceFormat": "parquet",
        },
    )
    dlog.claim()
    txn = Transaction(dlog, None, operation)
    txn.update_metadata(new_metadata(schema, columns))
    txn.add_files(adds)
    txn.metrics = {"numConvertedFiles": len(adds)}
    txn.commit()
    return dlog.root


def _partition_schema(given: str | StructType | None) -> StructType:
    if given is None:
        return StructType([])
    if isinstance(given, StructType):
        return given
    try:
        return parse_schema(given)
    except ValueError as e:
        raise DeltaAnalysisError(
            f"CONVERT TO DELTA: the partition schema '{given}' does not parse ({e}); write it "
            "as 'name TYPE, ...', e.g. 'day DATE, region STRING'."
        ) from None


def _parquet_files(root: str) -> list[pafs.FileInfo]:
    base = storage.filesystem(root)[1].rstrip("/")
    out = []
    for info in storage.list_files(root):
        rel = info.path[len(base) :].lstrip("/")
        if any(part.startswith(("_", ".")) for part in rel.split("/")):
            continue  # _SUCCESS, .crc files, _committed_* markers: not data
        out.append(info)
    if not out:
        raise DeltaAnalysisError(
            f"[DELTA_EMPTY_DIRECTORY] CONVERT TO DELTA: {root} holds no data file; there is "
            "nothing to convert (create an empty table with CREATE TABLE instead)."
        )
    return sorted(out, key=lambda info: info.path)


def _relative(root: str, info: pafs.FileInfo) -> str:
    base = storage.filesystem(root)[1].rstrip("/")
    return info.path[len(base) :].lstrip("/")


def _check_layout(rel: str, columns: list[str], root: str) -> None:
    dirs = rel.split("/")[:-1]
    found = [d.split("=", 1)[0] for d in dirs if "=" in d]
    if [c.lower() for c in found] != [c.lower() for c in columns] or len(dirs) != len(columns):
        expected = "/".join(f"{c}=..." for c in columns) or "no partition directories"
        raise DeltaAnalysisError(
            f"[DELTA_UNEXPECTED_NUM_PARTITION_COLUMNS_FROM_FILE_NAME] CONVERT TO DELTA "
            f"{root}: file {rel} does not match the partition schema (expected {expected}). "
            "Give the partition columns in order with PARTITIONED BY (...) / partitionSchema."
        )
    try:
        parse_partition_dir(rel, columns)
    except ValueError as e:
        raise DeltaAnalysisError(f"CONVERT TO DELTA {root}: {e}") from None


def _data_schema(spark: SparkSession, paths: list[str], partitions: set[str]) -> StructType:
    """The merged schema of the files' footers, as Spark reads it (INT96, decimals, ...)."""
    try:
        found = spark.read.option("mergeSchema", "true").parquet(*paths).schema
    except Exception as e:
        raise DeltaAnalysisError(
            f"CONVERT TO DELTA: the files cannot be read as one Parquet table: {e}"
        ) from None
    schema = StructType([f for f in found if f.name not in partitions])
    schemas.check_writable(schema, [])
    return schema


def _add(
    fs: pafs.FileSystem,
    info: pafs.FileInfo,
    rel: str,
    columns: list[str],
    data: StructType,
    statistics: bool,
) -> AddFile:
    try:
        meta = pq.read_metadata(fs.open_input_file(info.path))
    except Exception as e:
        raise DeltaAnalysisError(f"CONVERT TO DELTA: {rel} is not a Parquet file: {e}") from None
    return AddFile(
        path=encode_path(rel),
        partition_values=parse_partition_dir(rel, columns),
        size=info.size or 0,
        modification_time=int((info.mtime_ns or 0) / 1_000_000),
        data_change=True,
        stats=file_stats(meta, data) if statistics else json.dumps({"numRecords": meta.num_rows}),
    )
