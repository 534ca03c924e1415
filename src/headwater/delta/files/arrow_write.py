"""New data files written by pyarrow on the executors: how tables on object stores are written.

Spark's own writer needs a Hadoop filesystem for the store (the pyspark wheel has no S3
connector) and publishes by rename, which object stores do as a copy. Each task instead
writes its rows with pyarrow straight to their final place
(``<root>/<partition dirs>/part-<uuid>.parquet``: on object stores there is no rename to
publish with, and none is needed — a file no commit names is invisible to readers and
VACUUM removes it, as Delta specifies) and returns the add-action facts of each file: path,
size, partition values, statistics. Rows arrive and leave as Arrow batches.

Partition values are Spark's own string casts (taken in Spark before the rows reach
Python), so a partition directory and its value read the same as Spark's writer makes them.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from headwater import storage
from headwater.delta.files.stats import file_stats
from headwater.delta.log.actions import AddFile, encode_path
from headwater.storage.partition_dirs import partition_dir

_KEY = "__headwater_partition__"  # the row's partition values, as JSON
_RESULT = "path string, size long, partition_values string, stats string"
# Rows buffered per open file before a row group is written: Spark hands 10,000-row batches,
# which as row groups would be small and slow to scan.
ROW_GROUP_ROWS = 1 << 17


def write(
    out: DataFrame,
    root: str,
    partition_by: Sequence[str],
    data_schema: StructType,
    *,
    data_change: bool,
    compression: str,
    max_records_per_file: int | None,
) -> list[AddFile]:
    """Write ``out`` as Parquet files under ``root``; their add actions (not committed)."""
    partition_by = list(partition_by)
    if partition_by:
        values = F.struct(*[F.col(f"`{c}`").cast("string").alias(c) for c in partition_by])
        out = out.withColumn(_KEY, F.to_json(values))
    task = _Task(
        root=storage.normalize(root),
        partition_by=partition_by,
        data_schema=data_schema,
        compression=compression,
        max_records=max_records_per_file or 0,
    )
    now = int(time.time() * 1000)
    return [
        AddFile(
            path=row.path,
            partition_values=json.loads(row.partition_values),
            size=row.size,
            modification_time=now,
            data_change=data_change,
            stats=row.stats,
        )
        for row in out.mapInArrow(task, _RESULT).collect()
    ]


@dataclass
class _OpenFile:
    rel: str
    values: dict[str, str | None]
    stream: pa.NativeFile
    writer: pq.ParquetWriter
    pending: list[pa.RecordBatch] = field(default_factory=list)
    pending_rows: int = 0
    rows: int = 0


@dataclass(frozen=True)
class _Task:
    """What a task needs to write its rows: picklable values only (it runs on executors)."""

    root: str
    partition_by: list[str]
    data_schema: StructType
    compression: str
    max_records: int

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        files: dict[str, _OpenFile] = {}
        done: list[dict[str, object]] = []
        for batch in batches:
            for key, rows in self._split(batch):
                self._append(files, done, key, rows)
        for key in list(files):
            done.append(self._close(files.pop(key)))
        if done:
            yield pa.RecordBatch.from_pylist(done, schema=_result_schema())

    def _split(self, batch: pa.RecordBatch) -> Iterator[tuple[str, pa.RecordBatch]]:
        if not self.partition_by:
            yield "", batch
            return
        keys = batch.column(batch.schema.get_field_index(_KEY))
        data = batch.drop_columns([_KEY, *self.partition_by])
        uniques = pc.unique(keys)
        if len(uniques) == 1:
            yield uniques[0].as_py(), data
            return
        for key in uniques.to_pylist():
            yield key, data.filter(pc.equal(keys, key))

    def _append(
        self,
        files: dict[str, _OpenFile],
        done: list[dict[str, object]],
        key: str,
        rows: pa.RecordBatch,
    ) -> None:
        while rows.num_rows:
            current = files.get(key) or files.setdefault(key, self._open(key, rows.schema))
            room = rows.num_rows
            if self.max_records:
                room = min(room, self.max_records - current.rows - current.pending_rows)
            current.pending.append(rows.slice(0, room))
            current.pending_rows += room
            rows = rows.slice(room)
            if current.pending_rows >= ROW_GROUP_ROWS:
                self._flush(current)
            if self.max_records and current.rows + current.pending_rows >= self.max_records:
                done.append(self._close(files.pop(key)))

    def _open(self, key: str, schema: pa.Schema) -> _OpenFile:
        values: dict[str, str | None] = {}
        if self.partition_by:
            given = json.loads(key)
            values = {c: given.get(c) for c in self.partition_by}
        name = f"part-{uuid.uuid4()}.c000.{self.compression}.parquet"
        folder = partition_dir(values, self.partition_by) if self.partition_by else ""
        rel = f"{folder}/{name}" if folder else name
        fs, inner = storage.filesystem(storage.join(self.root, rel))
        stream = fs.open_output_stream(inner)
        writer = pq.ParquetWriter(
            stream, schema, compression=self.compression, write_page_checksum=False
        )
        return _OpenFile(rel, values, stream, writer)

    def _flush(self, current: _OpenFile) -> None:
        if current.pending:
            current.writer.write_table(pa.Table.from_batches(current.pending))
            current.rows += current.pending_rows
            current.pending, current.pending_rows = [], 0

    def _close(self, current: _OpenFile) -> dict[str, object]:
        self._flush(current)
        current.writer.close()
        size = current.stream.tell()
        current.stream.close()
        return {
            "path": encode_path(current.rel),
            "size": size,
            "partition_values": json.dumps(current.values),
            "stats": file_stats(current.writer.writer.metadata, self.data_schema),
        }


def _result_schema() -> pa.Schema:
    return pa.schema(
        [
            ("path", pa.string()),
            ("size", pa.int64()),
            ("partition_values", pa.string()),
            ("stats", pa.string()),
        ]
    )
