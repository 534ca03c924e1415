"""Row tracking in the log (Spark-free): new files numbered past the high water mark at the
version they land on, a commit that lost the race to a concurrent one numbered again, the
hidden columns named when a table turns it on, and turning it on over rows without ids
refused."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable as RsTable
from pyspark.sql.types import LongType, StructField, StructType

from headwater.delta.log import row_tracking
from headwater.delta.log.actions import AddFile, encode_path, now_ms
from headwater.delta.log.commit import Transaction
from headwater.delta.log.delta_log import DeltaLog
from headwater.delta.log.operations import Operation
from headwater.delta.write.create import create_table
from headwater.errors import UnsupportedFeatureError

SCHEMA = StructType([StructField("id", LongType())])
ON = {row_tracking.ENABLE: "true"}


def new_file(root: str, name: str, rows: int) -> AddFile:
    pq.write_table(pa.table({"id": pa.array(range(rows), pa.int64())}), os.path.join(root, name))
    size = os.path.getsize(os.path.join(root, name))
    return AddFile(encode_path(name), {}, size, now_ms(), True, json.dumps({"numRecords": rows}))


def appending(root: str) -> Transaction:
    dlog = DeltaLog(root)
    return Transaction(dlog, dlog.snapshot(), Operation.write("append"))


def logged(root: str, version: int) -> tuple[dict[str, dict], list[dict]]:
    """The adds (by path) and domain actions of one commit."""
    actions = DeltaLog(root).commit_actions(version)
    adds = {a["add"]["path"]: a["add"] for a in actions if "add" in a}
    return adds, [a["domainMetadata"] for a in actions if "domainMetadata" in a]


def ids_of(add: dict) -> tuple[int, int]:
    return add["baseRowId"], add["defaultRowCommitVersion"]


def test_new_files_are_numbered_past_the_high_water_mark(tmp_path):
    root = str(tmp_path / "t")
    create_table(root, SCHEMA, properties=ON)
    snapshot = DeltaLog(root).snapshot()
    assert {"rowTracking", "domainMetadata"} <= snapshot.protocol.writer_features
    config = snapshot.configuration
    assert config[row_tracking.ROW_ID_COLUMN].startswith("_row-id-col-")
    assert config[row_tracking.ROW_VERSION_COLUMN].startswith("_row-commit-version-col-")
    txn = appending(root)
    txn.add_files([new_file(root, "a.parquet", 3), new_file(root, "b.parquet", 2)])
    assert txn.commit() == 1
    txn = appending(root)
    txn.add_files([new_file(root, "c.parquet", 4)])
    assert txn.commit() == 2
    adds, domains = logged(root, 1)
    assert (ids_of(adds["a.parquet"]), ids_of(adds["b.parquet"])) == ((0, 1), (3, 1))
    assert [json.loads(d["configuration"]) for d in domains] == [{"rowIdHighWaterMark": 4}]
    adds, domains = logged(root, 2)
    assert ids_of(adds["c.parquet"]) == (5, 2)
    assert domains[0]["domain"] == row_tracking.DOMAIN
    assert row_tracking.high_water_mark(DeltaLog(root), 2) == 8
    assert len(RsTable(root).to_pyarrow_table()) == 9  # delta-rs reads the table


def test_a_commit_after_a_concurrent_one_is_numbered_again(tmp_path):
    root = str(tmp_path / "t")
    create_table(root, SCHEMA, properties=ON)
    first, second = appending(root), appending(root)  # both read version 0
    first.add_files([new_file(root, "a.parquet", 3)])
    second.add_files([new_file(root, "b.parquet", 5)])
    assert first.commit() == 1
    assert second.commit() == 2  # a blind append: no conflict, its ids follow the winner's
    assert ids_of(logged(root, 1)[0]["a.parquet"]) == (0, 1)
    assert ids_of(logged(root, 2)[0]["b.parquet"]) == (3, 2)
    assert row_tracking.high_water_mark(DeltaLog(root), 2) == 7


def test_turning_it_on_over_rows_without_ids_is_refused(tmp_path):
    root = str(tmp_path / "t")
    create_table(root, SCHEMA)
    txn = appending(root)
    txn.add_files([new_file(root, "a.parquet", 2)])
    txn.commit()
    dlog = DeltaLog(root)
    snapshot = dlog.snapshot()
    alter = Transaction(dlog, snapshot, Operation("SET TBLPROPERTIES"))
    alter.update_metadata(replace(snapshot.metadata, configuration=ON))
    with pytest.raises(UnsupportedFeatureError, match="rowTracking.*backfilled"):
        alter.commit()
    assert dlog.latest_version() == 1
    empty = str(tmp_path / "empty")
    create_table(empty, SCHEMA)
    dlog = DeltaLog(empty)
    snapshot = dlog.snapshot()
    alter = Transaction(dlog, snapshot, Operation("SET TBLPROPERTIES"))
    alter.update_metadata(replace(snapshot.metadata, configuration=ON))
    alter.commit()
    assert row_tracking.materialized(dlog.snapshot().configuration) is not None
