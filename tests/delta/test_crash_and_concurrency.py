"""Exactly-once under SIGKILL, and concurrent writers from separate processes."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from tests.conftest import REPO

STREAM_CHILD = textwrap.dedent(
    """
    import sys, headwater
    src, dst, ckpt = sys.argv[1:4]
    spark = headwater.session(master="local[2]", warehouse=ckpt + "_wh")
    stream = spark.readStream.schema("id long, file int").option("maxFilesPerTrigger", 2).parquet(src)
    q = (stream.writeStream.format("delta").option("checkpointLocation", ckpt)
         .trigger(processingTime="100 milliseconds").start(dst))
    print("STARTED", flush=True)
    q.awaitTermination()
    """
)


def _land(src: str, n: int, rows: int = 50) -> None:
    for i in range(n):
        name = f"part-{i:04d}.parquet"
        if os.path.exists(os.path.join(src, name)):
            continue
        table = pa.table(
            {
                "id": pa.array(range(i * rows, (i + 1) * rows), pa.int64()),
                "file": pa.array([i] * rows, pa.int32()),
            }
        )
        tmp = os.path.join(src, f".{name}.tmp")
        pq.write_table(table, tmp)
        os.rename(tmp, os.path.join(src, name))


@pytest.mark.slow
def test_file_to_delta_stream_killed_repeatedly_holds_every_row_once(spark, tmp_path):
    src, dst, ckpt = str(tmp_path / "src"), str(tmp_path / "dst"), str(tmp_path / "ckpt")
    os.makedirs(src)
    rng = random.Random(7)
    total_files = 0
    kills = 0
    for round_ in range(4):
        total_files += 6
        _land(src, total_files)
        proc = subprocess.Popen(
            [sys.executable, "-c", STREAM_CHILD, src, dst, ckpt],
            cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        proc.stdout.readline()  # STARTED
        time.sleep(rng.uniform(0.5, 4.0) + (2.0 if round_ == 0 else 0))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        kills += 1
    assert kills == 4
    # A final run that is allowed to finish, by a new driver: the test's own session.
    stream = spark.readStream.schema("id long, file int").parquet(src)
    writer = stream.writeStream.format("delta").option("checkpointLocation", ckpt)
    writer.trigger(availableNow=True).start(dst).awaitTermination()
    ids = DeltaTable(dst).to_pyarrow_table(columns=["id"]).column("id").to_pylist()
    assert len(ids) == total_files * 50
    assert sorted(ids) == list(range(total_files * 50))


APPEND_CHILD = textwrap.dedent(
    """
    import sys, headwater
    path, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    spark = headwater.session(master="local[1]", warehouse=path + "_wh_" + tag)
    for i in range(n):
        spark.range(i * 10, i * 10 + 10).selectExpr("id", f"'{tag}' as writer").write.format("delta").mode("append").save(path)
    print("DONE", flush=True)
    """
)


@pytest.mark.slow
def test_two_processes_appending_at_once_lose_no_commit(spark, tmp_path):
    path = str(tmp_path / "shared")
    spark.range(0).selectExpr("id", "'seed' as writer").write.format("delta").save(path)
    procs = [
        subprocess.Popen([sys.executable, "-c", APPEND_CHILD, path, tag, "6"], cwd=str(REPO),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for tag in ("a", "b")
    ]  # fmt: skip
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
    table = DeltaTable(path)
    assert table.version() == 12
    rows = table.to_pyarrow_table().to_pylist()
    for tag in ("a", "b"):
        assert sorted(r["id"] for r in rows if r["writer"] == tag) == list(range(60))


def test_append_racing_an_overwrite_is_retried_not_lost(spark, tmp_path):
    """An append whose read snapshot predates a concurrent overwrite commits after it."""
    from headwater.delta.log.actions import AddFile
    from headwater.delta.log.commit import Transaction
    from headwater.delta.log.delta_log import DeltaLog
    from headwater.delta.log.operations import Operation
    from headwater.delta.options import WriteSpec
    from headwater.delta.write.batch import write

    path = str(tmp_path / "race")
    spark.range(5).write.format("delta").save(path)
    # Prepare an append as of version 0, then let an overwrite land first.
    stale = DeltaTable(path)
    stale_snapshot = DeltaLog(path).snapshot()
    write(spark.range(100, 101), path, WriteSpec(mode="overwrite"))
    from deltalake.transaction import AddAction

    pq.write_table(pa.table({"id": pa.array([7], pa.int64())}), os.path.join(path, "late.parquet"))
    size = os.path.getsize(os.path.join(path, "late.parquet"))
    add = AddAction("late.parquet", size, {}, 0, True, '{"numRecords":1}')
    with pytest.raises(Exception, match="(?i)concurrent"):
        stale.create_write_transaction([add], "append", stale.schema())  # delta-rs alone refuses
    txn = Transaction(DeltaLog(path), stale_snapshot, Operation.write("append"))
    txn.add_files([AddFile("late.parquet", {}, size, 0, True, '{"numRecords":1}')])
    assert txn.commit() == 2
    assert sorted(r.id for r in spark.read.format("delta").load(path).collect()) == [7, 100]


DELTA_STREAM_CHILD = textwrap.dedent(
    """
    import os, signal, sys, headwater
    src, dst, ckpt, die_at_first = sys.argv[1:5]
    spark = headwater.session(master="local[1]", warehouse=ckpt + "_wh")

    def batch(rows, batch_id):
        if batch_id == 0 and die_at_first == "yes":  # its end checkpointed, not committed
            os.killpg(os.getpgid(0), signal.SIGKILL)
        (rows.write.format("delta").mode("append")
             .option("txnAppId", "copy").option("txnVersion", batch_id).save(dst))

    (spark.readStream.format("delta").load(src).writeStream.foreachBatch(batch)
         .option("checkpointLocation", ckpt).trigger(availableNow=True).start()
         .awaitTermination())
    """
)


@pytest.mark.slow
def test_a_delta_stream_killed_in_its_first_batch_reads_that_snapshot_after_a_restart(
    spark, tmp_path
):
    """Spark runs a first batch that did not commit again from the source's initial offset,
    asked of a new reader after the restart: the table's snapshot the batch was planned on,
    not the table as it is then (its rows were lost while the table grew in between)."""
    src, dst, ckpt = (str(tmp_path / n) for n in ("src", "dst", "ckpt"))
    spark.range(0, 3).write.format("delta").save(src)
    for die, appended in (("yes", (3, 6)), ("no", None)):
        child = subprocess.run(
            [sys.executable, "-c", DELTA_STREAM_CHILD, src, dst, ckpt, die],
            cwd=str(REPO), capture_output=True, text=True, timeout=300,
            start_new_session=True,
        )  # fmt: skip
        if die == "yes":
            assert child.returncode == -signal.SIGKILL, child.stderr[-3000:]
            assert os.path.exists(os.path.join(ckpt, "offsets", "0"))
            assert not os.path.exists(os.path.join(ckpt, "commits", "0"))
            spark.range(*appended).write.format("delta").mode("append").save(src)
        else:
            assert child.returncode == 0, child.stderr[-3000:]
    got = sorted(r.id for r in spark.read.format("delta").load(dst).collect())
    assert got == list(range(6))
