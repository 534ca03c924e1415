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


def test_latest_version_is_the_newest_commit_named_and_a_missing_log_still_fails(tmp_path):
    """``latest_version`` reads the log's folder listing, not a table built by delta-rs:
    the same number delta-rs gives, after checkpoints and after the oldest commits are
    cleaned away; temporary files and other names are not commits; no table still fails
    as delta-rs makes it fail."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError

    root = str(tmp_path / "t")
    dlog = DeltaLog(root)
    create_table(root, SCHEMA)
    for i in range(102):
        Transaction(dlog, dlog.snapshot(), Operation("TEST", {"n": i})).commit()
    log_dir = os.path.join(root, "_delta_log")
    assert dlog.latest_version() == DeltaTable(root).version() == 102
    for name in (".00000000000000000103.json.tmp", "00000000000000000104.json.tmp", "notes.json"):
        open(os.path.join(log_dir, name), "w").close()
    for v in range(50):  # cleaned before the checkpoint at 99
        os.remove(os.path.join(log_dir, f"{v:020d}.json"))
    assert dlog.latest_version() == DeltaTable(root).version() == 102
    try:
        DeltaLog(str(tmp_path / "none")).latest_version()
    except DeltaError:
        pass
    else:
        raise AssertionError("a folder without a log has no latest version")
