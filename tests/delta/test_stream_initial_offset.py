"""A new stream's first position is taken once: Spark asks the source for its initial offset
when it plans the first micro-batch and again when it runs it, and a table that gained a
commit in between must not move the start (found by a stream over a table delta-spark kept
appending to: the first batch read nothing, and the rows of the table as it was when the
stream started were never delivered)."""

from __future__ import annotations

import pyarrow as pa
from deltalake import write_deltalake
from pyspark.sql.types import LongType, StructField, StructType

from headwater.delta.read.stream import DeltaStreamReader

SCHEMA = StructType([StructField("id", LongType())])


def rows(start: int, stop: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, stop), pa.int64())})


def test_the_initial_offset_stays_put_while_the_table_grows(tmp_path):
    path = str(tmp_path / "t")
    write_deltalake(path, rows(0, 3))  # version 0: the snapshot the stream starts from
    reader = DeltaStreamReader(path, {}, SCHEMA)
    first = reader.initialOffset()
    write_deltalake(path, rows(3, 6), mode="append")  # version 1, by another writer
    assert reader.initialOffset() == first == {"version": 0, "index": 0, "snapshot": True}
    # The first batch, from that start, holds the snapshot's rows and the new commit's.
    end = reader.latestOffset(first, reader.getDefaultReadLimit())
    assert end == {"version": 2, "index": 0, "snapshot": False}
    tasks = [t for p in reader.partitions(first, end) for t in p.tasks]
    assert len(tasks) == 2
