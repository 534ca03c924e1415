"""A new stream's first position is taken once: Spark asks the source for its initial offset
when it plans the first micro-batch and again when it runs it, and a table that gained a
commit in between must not move the start (found by a stream over a table delta-spark kept
appending to: the first batch read nothing, and the rows of the table as it was when the
stream started were never delivered). And the same after a restart: Spark keeps no start for
a first batch, and a query killed before that batch committed runs it again from the
initial offset of a new reader."""

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
    assert reader.initialOffset() == first
    # The first batch, from that start, holds the snapshot's rows and the new commit's.
    end = reader.latestOffset(first, reader.getDefaultReadLimit())
    assert end == {"version": 2, "index": 0, "snapshot": False, "began": 1}
    tasks = [t for p in reader.partitions(first, end) for t in p.tasks]
    assert len(tasks) == 2


def read_ids(reader: DeltaStreamReader, start: dict, end: dict) -> list[int]:
    return sorted(
        i
        for p in reader.partitions(start, end)
        for batch in reader.read(p)
        for i in batch.column("id").to_pylist()
    )


def test_a_first_batch_run_again_after_a_restart_reads_the_snapshot_it_was_planned_on(tmp_path):
    path = str(tmp_path / "t")
    write_deltalake(path, rows(0, 3))
    write_deltalake(path, rows(3, 6), mode="append")  # version 1: the snapshot read first
    planned = DeltaStreamReader(path, {"maxfilespertrigger": "1"}, SCHEMA)
    end = planned.latestOffset(planned.initialOffset(), planned.getDefaultReadLimit())
    assert read_ids(planned, planned.initialOffset(), end) in ([0, 1, 2], [3, 4, 5])
    # killed with that end checkpointed and the batch uncommitted; the table grows meanwhile
    write_deltalake(path, rows(6, 9), mode="append")
    restarted = DeltaStreamReader(path, {"maxfilespertrigger": "1"}, SCHEMA)
    again = read_ids(restarted, restarted.initialOffset(), end)
    assert again == read_ids(planned, planned.initialOffset(), end)
    # ...and the batches after it read the rest of the snapshot, then the new commit, once
    seen, start = list(again), end
    while True:
        following = restarted.latestOffset(start, restarted.getDefaultReadLimit())
        if following == start:
            break
        seen += read_ids(restarted, start, following)
        start = following
    assert sorted(seen) == list(range(9))


def test_a_whole_snapshot_first_batch_run_again_after_a_restart_reads_it_all(tmp_path):
    path = str(tmp_path / "t")
    write_deltalake(path, rows(0, 3))
    planned = DeltaStreamReader(path, {}, SCHEMA)
    end = planned.latestOffset(planned.initialOffset(), planned.getDefaultReadLimit())
    write_deltalake(path, rows(3, 6), mode="append")
    restarted = DeltaStreamReader(path, {}, SCHEMA)
    assert read_ids(restarted, restarted.initialOffset(), end) == [0, 1, 2]
    following = restarted.latestOffset(end, restarted.getDefaultReadLimit())
    assert read_ids(restarted, end, following) == [3, 4, 5]
    assert restarted.latestOffset(following, restarted.getDefaultReadLimit()) == following
