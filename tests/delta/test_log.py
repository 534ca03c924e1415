"""Log hygiene: checkpoints at a steady interval; long logs stay fast to read."""

from __future__ import annotations

import os
import time

import pyarrow as pa
from pyspark.sql.types import LongType, StructField, StructType

from headwater.delta.log.commit import Transaction
from headwater.delta.log.delta_log import DeltaLog
from headwater.delta.log.operations import Operation
from headwater.delta.write.create import create_table

SCHEMA = StructType([StructField("id", LongType())])


def test_a_checkpoint_is_written_every_hundred_commits_and_reads_stay_fast(spark, tmp_path):
    root = str(tmp_path / "long")
    dlog = DeltaLog(root)
    create_table(root, SCHEMA)
    for i in range(119):
        txn = Transaction(dlog, dlog.snapshot(), Operation("TEST", {"n": i}))
        assert txn.commit() == i + 1
    log_dir = os.path.join(root, "_delta_log")
    checkpoints = sorted(f for f in os.listdir(log_dir) if f.endswith(".checkpoint.parquet"))
    assert [int(f.split(".")[0]) for f in checkpoints] == [99]  # every 100 commits
    assert os.path.exists(os.path.join(log_dir, "_last_checkpoint"))
    t0 = time.perf_counter()
    snap = dlog.snapshot()
    assert snap.version == 119
    assert time.perf_counter() - t0 < 2.0
    assert spark.read.format("delta").load(root).count() == 0
    assert isinstance(snap.add_actions, pa.Table)
