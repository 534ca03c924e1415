"""Executor side of the Python read path: Delta data files to Arrow batches.

Runs inside Spark's Python workers from a pickled reader, so it takes only plain values
(paths, partition values, the schema) and yields ``pyarrow.RecordBatch``es that match the
declared Spark schema exactly (Spark refuses anything else).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import StructType

from headwater import storage
from headwater.delta.schema import column_mapping as mapping
from headwater.errors import CorruptLogError
from headwater.sqltypes import arrow_schema

BATCH_ROWS = 65536
TARGET_PARTITION_BYTES = 128 * 1024 * 1024


@dataclass(frozen=True)
class FileTask:
    """One data file to read: plain values only, so it pickles into an InputPartition."""

    path: str  # absolute path or URI
    size: int
    partition_values: tuple[tuple[str, str | None], ...]
    selection: tuple[bool, ...] | None = None  # deletion vector: False = deleted row
    # change feed: (change type, or None when the file holds _change_type; version; ms)
    change: tuple[str | None, int, int] | None = None
    # row tracking: (the column the rows' ids are read into, the file's baseRowId); a row's
    # id is the file's hidden row id column where it holds one, else baseRowId + position
    row_ids: tuple[str, int] | None = None


def read_files(
    tasks: list[FileTask], schema: StructType, physical: StructType | None = None
) -> Iterator[pa.RecordBatch]:
    """Rows of ``tasks`` in ``schema``; ``physical`` is the same schema under the names the
    files use, for column-mapped tables."""
    target = arrow_schema(schema)
    stored = arrow_schema(physical) if physical is not None else None
    for task in tasks:
        yield from read_file(task, target, stored)


def read_file(
    task: FileTask, target: pa.Schema, physical: pa.Schema | None = None
) -> Iterator[pa.RecordBatch]:
    fs, path = storage.filesystem(task.path)
    try:
        handle = fs.open_input_file(path)
    except FileNotFoundError as e:
        raise CorruptLogError(
            f"Data file {task.path} is referenced by the Delta log but missing. "
            "Restore it, or run FSCK/repair on the table to drop the reference."
        ) from e
    parts = dict(task.partition_values)
    stored = physical or target
    # A column the target types as a dictionary is read as one (not decoded value by value).
    dictionary = [p.name for p, f in zip(stored, target, strict=True) if _is_dictionary(f.type)]
    with handle:
        pf = pq.ParquetFile(handle, read_dictionary=dictionary or None)
        file_names = set(pf.schema_arrow.names)
        wanted = [
            p.name
            for p, f in zip(stored, target, strict=True)
            if p.name in file_names and f.name not in parts
        ]
        offset = 0
        for batch in pf.iter_batches(batch_size=BATCH_ROWS, columns=wanted, use_threads=False):
            n = batch.num_rows
            if task.row_ids is not None:
                batch = _with_row_ids(batch, task.row_ids, offset)
            if task.selection is not None:
                live = list(task.selection[offset : offset + n])
                live += [True] * (n - len(live))
                batch = batch.filter(pa.array(live, pa.bool_()))
            offset += n
            if physical is not None:
                batch = _logical(batch, physical, target, parts)
            yield conform(batch, target, parts)


def _with_row_ids(batch: pa.RecordBatch, row_ids: tuple[str, int], offset: int) -> pa.RecordBatch:
    """``batch`` (rows ``offset``.. of its file) with each row's id in the column named
    ``row_ids[0]``: the file's own value there, else the fresh id (``baseRowId`` plus the
    row's position)."""
    name, base = row_ids
    fresh = pa.array(range(base + offset, base + offset + batch.num_rows), pa.int64())
    at = batch.schema.get_field_index(name)
    if at < 0:
        return batch.append_column(name, fresh)
    kept = pc.coalesce(batch.column(at).cast(pa.int64()), fresh)
    return batch.set_column(at, name, kept)


def _is_dictionary(kind: pa.DataType) -> bool:
    return bool(pa.types.is_dictionary(kind))


def _logical(
    batch: pa.RecordBatch, physical: pa.Schema, target: pa.Schema, parts: dict
) -> pa.RecordBatch:
    names, arrays = [], []
    for p, f in zip(physical, target, strict=True):
        idx = batch.schema.get_field_index(p.name)
        if idx >= 0 and f.name not in parts:
            names.append(f.name)
            arrays.append(mapping.rename(batch.column(idx), p.type, f.type))
    return pa.RecordBatch.from_arrays(arrays, names=names) if names else batch.select([])


def conform(
    batch: pa.RecordBatch, target: pa.Schema, parts: dict[str, str | None]
) -> pa.RecordBatch:
    n = batch.num_rows
    arrays = []
    for field in target:
        if field.name in parts:
            value = parts[field.name]
            arr = (
                pa.repeat(pa.scalar(value, pa.string()), n)
                if value not in (None, "")
                else pa.nulls(n, pa.string())
            )
            arrays.append(_cast(arr, field.type))
        elif field.name in batch.schema.names:
            arrays.append(_cast(batch.column(field.name), field.type))
        else:
            arrays.append(pa.nulls(n, field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def _cast(arr: pa.Array, to: pa.DataType) -> pa.Array:
    if arr.type == to:
        return arr
    if pa.types.is_timestamp(to) and pa.types.is_string(arr.type):
        # Partition values: "2024-01-01 10:00:00", with fractions or a trailing Z (UTC).
        text = pc.replace_substring_regex(arr, pattern="Z$", replacement="")
        return pc.cast(text.cast(pa.timestamp("us")), to)
    if pa.types.is_struct(to) and pa.types.is_struct(arr.type):
        children = []
        for f in to:
            idx = arr.type.get_field_index(f.name)
            child = arr.field(idx) if idx >= 0 else pa.nulls(len(arr), f.type)
            children.append(_cast(child, f.type))
        return pa.StructArray.from_arrays(children, fields=list(to), mask=arr.is_null())
    return arr.cast(to, safe=False)


class FilePartition(InputPartition):
    def __init__(self, tasks: list[FileTask], physical: str | None = None) -> None:
        super().__init__(tasks)
        self.tasks = tasks
        self.physical = physical  # JSON of the physical schema (column-mapped tables)

    def input_bytes(self) -> int:
        """The data files' bytes (a stream's sink collects a small batch to the driver:
        headwater.delta.write.small_batch)."""
        return sum(task.size for task in self.tasks)

    @property
    def physical_schema(self) -> StructType | None:
        return StructType.fromJson(json.loads(self.physical)) if self.physical else None


def plan_partitions(
    tasks: list[FileTask],
    target_bytes: int = TARGET_PARTITION_BYTES,
    physical: StructType | None = None,
) -> list[FilePartition]:
    """Pack files into partitions of about ``target_bytes`` (at least one partition)."""
    phys = json.dumps(physical.jsonValue()) if physical is not None else None
    partitions: list[FilePartition] = []
    current: list[FileTask] = []
    size = 0
    for task in sorted(tasks, key=lambda t: t.path):
        if current and size + task.size > target_bytes:
            partitions.append(FilePartition(current, phys))
            current, size = [], 0
        current.append(task)
        size += task.size
    if current or not partitions:
        partitions.append(FilePartition(current, phys))
    return partitions


def physical_for(snapshot, schema: StructType) -> StructType | None:
    """The physical names of ``schema``'s columns (None without column mapping)."""
    if snapshot.physical_schema is None:
        return None
    by_name = dict(zip(snapshot.schema.fieldNames(), snapshot.physical_schema.fields, strict=True))
    return StructType([by_name.get(f.name, f) for f in schema.fields])
