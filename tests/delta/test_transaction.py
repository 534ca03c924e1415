"""The one commit path, without Spark: typed actions staged on a read version, one version
per commit, delta-spark's conflict rules, read back with delta-rs."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable as RsTable
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampNTZType

from headwater.delta.log import protocol
from headwater.delta.log.actions import AddFile, Metadata, Protocol, encode_path, now_ms
from headwater.delta.log.commit import Transaction
from headwater.delta.log.delta_log import DeltaLog
from headwater.delta.log.operations import Operation
from headwater.delta.write.create import create_table, new_metadata
from headwater.errors import (
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentModificationException,
    ConcurrentTransactionException,
    DeltaError,
    MetadataChangedException,
    ProtocolChangedException,
    TableAlreadyExistsError,
    UnsupportedFeatureError,
)

SCHEMA = StructType([StructField("id", LongType()), StructField("p", StringType())])


def _file(root: str, name: str, ids: list[int], p: str | None = None) -> AddFile:
    """A Parquet file of ``ids`` in the table (in partition ``p`` when given)."""
    rel = f"p={p}/{name}" if p is not None else name
    os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
    columns = {"id": pa.array(ids, pa.int64())}
    if p is None:
        columns["p"] = pa.array(["x"] * len(ids), pa.string())
    pq.write_table(pa.table(columns), os.path.join(root, rel))
    stats = json.dumps({"numRecords": len(ids)})
    values = {"p": p} if p is not None else {}
    size = os.path.getsize(os.path.join(root, rel))
    return AddFile(encode_path(rel), values, size, now_ms(), True, stats)


def _append(root: str, *files: AddFile) -> int:
    dlog = DeltaLog(root)
    txn = Transaction(dlog, dlog.snapshot(), Operation.write("append"))
    txn.add_files(files)
    return txn.commit()


def _ids(root: str) -> list[int]:
    return sorted(RsTable(root).to_pyarrow_table(columns=["id"]).column("id").to_pylist())


def _history(root: str) -> list[dict]:
    return list(reversed(RsTable(root).history()))


@pytest.fixture
def table(tmp_path) -> str:
    root = str(tmp_path / "t")
    create_table(root, SCHEMA)
    return root


@pytest.fixture
def partitioned(tmp_path) -> str:
    root = str(tmp_path / "pt")
    create_table(root, SCHEMA, ["p"])
    return root


def test_a_commit_is_one_version_that_delta_rs_reads_back(table):
    assert _append(table, _file(table, "a.parquet", [1, 2])) == 1
    assert _ids(table) == [1, 2]
    info = _history(table)[1]
    assert info["operation"] == "WRITE"
    assert info["operationParameters"] == {"mode": "Append", "partitionBy": "[]"}
    assert info["isBlindAppend"] is True and info["readVersion"] == 0
    assert info["engineInfo"].startswith("headwater/")


def test_a_schema_change_lands_in_the_same_version_as_the_data(table):
    dlog = DeltaLog(table)
    snapshot = dlog.snapshot()
    wider = StructType([*SCHEMA.fields, StructField("extra", LongType())])
    txn = Transaction(dlog, snapshot, Operation.write("append"))
    txn.update_metadata(replace(snapshot.metadata, schema_string=wider.json()))
    txn.add_files([_file(table, "a.parquet", [1])])
    assert txn.commit() == 1
    rs = RsTable(table)
    assert rs.version() == 1 and [f.name for f in rs.schema().fields] == ["id", "p", "extra"]
    # Still a blind append, as delta-spark counts it: only adds, nothing read.
    assert _history(table)[1]["isBlindAppend"] is True


def test_blind_appends_at_the_same_read_version_both_commit(table):
    dlog = DeltaLog(table)
    snapshot = dlog.snapshot()
    first = Transaction(dlog, snapshot, Operation.write("append"))
    first.add_files([_file(table, "a.parquet", [1])])
    second = Transaction(dlog, snapshot, Operation.write("append"))
    second.add_files([_file(table, "b.parquet", [2])])
    assert first.commit() == 1
    assert second.commit() == 2  # retried at the next version
    assert _ids(table) == [1, 2]


def _reader(root: str, read: list[str] | None = None, partitions=None) -> Transaction:
    """A transaction that read the table (files ``read``, or all of it) as of now."""
    dlog = DeltaLog(root)
    snapshot = dlog.snapshot()
    txn = Transaction(dlog, snapshot, Operation.predicate("DELETE", "id > 1"))
    if read is None:
        txn.read_whole_table()
    else:
        txn.read_files(read, partitions)
    return txn


def _non_blind_append(root: str, add: AddFile) -> int:
    """What an insert-only MERGE commits: new files, after reading the table."""
    dlog = DeltaLog(root)
    txn = Transaction(dlog, dlog.snapshot(), Operation.merge("t.id = s.id", []))
    txn.read_files([])
    txn.add_files([add])
    return txn.commit()


def test_files_added_that_a_transaction_would_have_read_fail_it(table):
    _append(table, _file(table, "a.parquet", [1]))
    loser = _reader(table)
    _non_blind_append(table, _file(table, "b.parquet", [2]))
    loser.add_files([_file(table, "c.parquet", [3])])
    with pytest.raises(ConcurrentAppendException, match=r"b\.parquet") as info:
        loser.commit()
    assert info.value.error_class == "DELTA_CONCURRENT_APPEND"
    assert isinstance(info.value, ConcurrentModificationException)
    assert RsTable(table).version() == 2


def test_blind_appends_do_not_conflict_with_a_reader_under_write_serializable(table):
    _append(table, _file(table, "a.parquet", [1]))
    reader = _reader(table, read=[])
    _append(table, _file(table, "b.parquet", [2]))
    reader.add_files([_file(table, "c.parquet", [3])])
    assert reader.commit() == 3
    assert _history(table)[3]["isolationLevel"] == "WriteSerializable"


def _isolated(tmp_path, level: str | None) -> str:
    """A table partitioned by ``p`` whose ``delta.isolationLevel`` is ``level``."""
    root = str(tmp_path / "iso")
    create_table(root, SCHEMA, ["p"], {"delta.isolationLevel": level} if level else None)
    _append(root, _file(root, "a.parquet", [1], p="1"), _file(root, "b.parquet", [2], p="2"))
    return root


def _only(p: str):
    return lambda values: [v.get("p") == p for v in values]


def _delete_p1(root: str) -> Transaction:
    """A DELETE that read partition 1 and rewrites its file, not yet committed."""
    txn = _reader(root, read=["p=1/a.parquet"], partitions=_only("1"))
    txn.remove_files([_file(root, "a.parquet", [1], p="1").remove()])
    return txn


@pytest.mark.parametrize("level", ["Serializable", "serializable"])
def test_a_serializable_table_fails_a_reader_on_a_blind_append_where_it_read(tmp_path, level):
    """delta-spark's Serializable: blind appends count as files the reader should have
    read; in a partition it did not read they still go through."""
    root = _isolated(tmp_path, level)
    elsewhere = _delete_p1(root)
    _append(root, _file(root, "c.parquet", [3], p="2"))
    assert elsewhere.commit() == 3
    loser = _delete_p1(root)
    _append(root, _file(root, "d.parquet", [4], p="1"))
    with pytest.raises(ConcurrentAppendException) as info:
        loser.commit()
    message = str(info.value)
    assert info.value.error_class == "DELTA_CONCURRENT_APPEND"
    assert "version 4, WRITE" in message and "p=1/d.parquet" in message
    assert "{'p': '1'}" in message and "delta.isolationLevel is Serializable" in message
    assert RsTable(root).version() == 4 and _ids(root) == [2, 3, 4]
    levels = [h.get("isolationLevel") for h in _history(root)]
    assert levels[1:] == ["Serializable"] * 4  # appends and the DELETE alike


@pytest.mark.parametrize("level", [None, "WriteSerializable"])
def test_a_write_serializable_table_lets_a_blind_append_through_a_reader(tmp_path, level):
    root = _isolated(tmp_path, level)
    reader = _delete_p1(root)
    _append(root, _file(root, "d.parquet", [4], p="1"))
    assert reader.commit() == 3
    assert _ids(root) == [2, 4]  # as if the DELETE ran first
    assert _history(root)[3]["isolationLevel"] == "WriteSerializable"


def test_a_reader_that_changes_the_schema_counts_blind_appends_at_write_serializable(tmp_path):
    root = _isolated(tmp_path, None)
    dlog = DeltaLog(root)
    reader = _delete_p1(root)
    wider = StructType([*SCHEMA.fields, StructField("extra", LongType())])
    reader.update_metadata(replace(dlog.snapshot().metadata, schema_string=wider.json()))
    _append(root, _file(root, "d.parquet", [4], p="1"))
    with pytest.raises(ConcurrentAppendException, match="d.parquet"):
        reader.commit()


@pytest.mark.parametrize("level", [None, "Serializable"])
def test_a_rewrite_that_changes_no_data_runs_at_snapshot_isolation(tmp_path, level):
    """OPTIMIZE's commit (files swapped, no data change) does not depend on files added
    meanwhile, blind or not, at either level: delta-spark lowers it to SnapshotIsolation."""
    root = _isolated(tmp_path, level)
    dlog = DeltaLog(root)
    compact = Transaction(dlog, dlog.snapshot(), Operation.optimize(None))
    compact.read_files(["p=1/a.parquet"], _only("1"))
    a = _file(root, "a.parquet", [1], p="1")
    compact.remove_files([a.remove(data_change=False)])
    compact.add_files([replace(_file(root, "a2.parquet", [1], p="1"), data_change=False)])
    _non_blind_append(root, _file(root, "d.parquet", [4], p="1"))
    _append(root, _file(root, "e.parquet", [5], p="1"))
    assert compact.commit() == 4
    assert _ids(root) == [1, 2, 4, 5]
    assert [h["isolationLevel"] for h in _history(root)[2:]] == [
        level or "WriteSerializable",
        level or "WriteSerializable",
        "SnapshotIsolation",
    ]


def test_an_empty_dml_keeps_write_serializable_but_not_serializable(tmp_path):
    """delta-spark: a data-changing operation with no file to change is still checked at
    WriteSerializable; at Serializable it is lowered (it can be ordered first)."""
    for level, expected in (
        ("WriteSerializable", "WriteSerializable"),
        ("Serializable", "SnapshotIsolation"),
    ):
        root = _isolated(tmp_path / level, level)
        dlog = DeltaLog(root)
        txn = Transaction(dlog, dlog.snapshot(), Operation.predicate("DELETE", "id = 9"))
        assert txn.isolation_level == expected


def test_an_unknown_isolation_level_is_refused(tmp_path):
    root = str(tmp_path / "t")
    with pytest.raises(
        DeltaError, match=r"DELTA_INVALID_ISOLATION_LEVEL.*'Snapshot'.*Serializable"
    ):
        create_table(root, SCHEMA, properties={"delta.isolationLevel": "Snapshot"})
    assert not os.path.exists(os.path.join(root, "_delta_log", f"{0:020d}.json"))


def test_a_transaction_conflicts_only_with_files_added_in_partitions_it_read(partitioned):
    _append(partitioned, _file(partitioned, "a.parquet", [1], p="1"))

    def only_p1(values):
        return [v.get("p") == "1" for v in values]

    reader = _reader(partitioned, read=["p=1/a.parquet"], partitions=only_p1)
    _non_blind_append(partitioned, _file(partitioned, "b.parquet", [2], p="2"))
    reader.add_files([_file(partitioned, "c.parquet", [3], p="1")])
    assert reader.commit() == 3
    again = _reader(partitioned, read=["p=1/a.parquet"], partitions=only_p1)
    _non_blind_append(partitioned, _file(partitioned, "d.parquet", [4], p="1"))
    with pytest.raises(ConcurrentAppendException, match="partition"):
        again.commit()


def test_a_file_removed_that_a_transaction_read_fails_it(table):
    a = _file(table, "a.parquet", [1])
    _append(table, a, _file(table, "b.parquet", [2]))
    reader = _reader(table, read=["a.parquet"])
    dlog = DeltaLog(table)
    deleter = Transaction(dlog, dlog.snapshot(), Operation.predicate("DELETE", "id = 1"))
    deleter.read_files(["a.parquet"])
    deleter.remove_files([a.remove()])
    deleter.commit()
    with pytest.raises(ConcurrentDeleteReadException, match=r"a\.parquet"):
        reader.commit()


def test_a_file_removed_by_both_fails_the_second(table):
    a = _file(table, "a.parquet", [1])
    _append(table, a)
    dlog = DeltaLog(table)
    snapshot = dlog.snapshot()
    first = Transaction(dlog, snapshot, Operation.optimize(None))
    first.remove_files([a.remove(data_change=False)])
    second = Transaction(dlog, snapshot, Operation.optimize(None))
    second.remove_files([a.remove(data_change=False)])
    first.commit()
    with pytest.raises(ConcurrentDeleteDeleteException):
        second.commit()


def test_a_metadata_change_fails_concurrent_writers(table):
    dlog = DeltaLog(table)
    snapshot = dlog.snapshot()
    appender = Transaction(dlog, snapshot, Operation.write("append"))
    appender.add_files([_file(table, "a.parquet", [1])])
    alter = Transaction(dlog, snapshot, Operation("SET TBLPROPERTIES"))
    alter.update_metadata(replace(snapshot.metadata, configuration={"owner": "me"}))
    alter.commit()
    with pytest.raises(MetadataChangedException):
        appender.commit()


def test_a_protocol_change_fails_concurrent_writers(table):
    dlog = DeltaLog(table)
    snapshot = dlog.snapshot()
    appender = Transaction(dlog, snapshot, Operation.write("append"))
    appender.add_files([_file(table, "a.parquet", [1])])
    upgrade = Transaction(dlog, snapshot, Operation("SET TBLPROPERTIES"))
    vectors = {"delta.enableDeletionVectors": "true"}
    upgrade.update_metadata(replace(snapshot.metadata, configuration=vectors))
    upgrade.commit()
    assert RsTable(table).protocol().reader_features == ["deletionVectors"]
    with pytest.raises(ProtocolChangedException):
        appender.commit()


def test_two_creators_one_wins(tmp_path):
    root = str(tmp_path / "new")
    dlog = DeltaLog(root)
    creators = []
    for _ in range(2):
        txn = Transaction(dlog, None, Operation.write("append"))
        txn.update_metadata(new_metadata(SCHEMA, []))
        creators.append(txn)
    assert creators[0].commit() == 0
    with pytest.raises(ProtocolChangedException, match="created the table first"):
        creators[1].commit()
    with pytest.raises(TableAlreadyExistsError):
        create_table(root, SCHEMA)


def test_progress_of_the_same_application_conflicts(table):
    dlog = DeltaLog(table)
    snapshot = dlog.snapshot()
    writers = []
    for name in ("a", "b"):
        txn = Transaction(dlog, snapshot, Operation.streaming_update("append", "q", 0))
        assert txn.app_version("stream-1") is None
        txn.set_app_version("stream-1", 0)
        txn.add_files([_file(table, f"{name}.parquet", [1])])
        writers.append(txn)
    writers[0].commit()
    assert RsTable(table).transaction_version("stream-1") == 0
    with pytest.raises(ConcurrentTransactionException, match="stream-1"):
        writers[1].commit()
    assert _ids(table) == [1]


def test_a_requirement_sees_each_commit_in_between(table):
    dlog = DeltaLog(table)
    snapshot = dlog.snapshot()
    _append(table, _file(table, "a.parquet", [1]))
    _append(table, _file(table, "b.parquet", [2]))
    seen = []

    class Watch:
        def check(self, winner):
            seen.append((winner.version, [a.path for a in winner.adds]))

    txn = Transaction(dlog, snapshot, Operation.write("append"))
    txn.require(Watch())
    txn.add_files([_file(table, "c.parquet", [3])])
    assert txn.commit() == 3
    assert seen == [(1, ["a.parquet"]), (2, ["b.parquet"])]


def test_commit_info_encodes_parameters_as_delta_spark_does(table):
    dlog = DeltaLog(table)
    txn = Transaction(
        dlog,
        dlog.snapshot(),
        Operation.merge(
            "t.id = s.id", [("matched", "update", None), ("not_matched", "insert", "s.ok")]
        ),
    )
    txn.metrics = {"numTargetRowsInserted": 3}
    txn.user_metadata = "nightly"
    txn.commit()
    info = _history(table)[1]
    assert info["operation"] == "MERGE"
    params = info["operationParameters"]
    assert json.loads(params["predicate"]) == ["t.id = s.id"]
    assert json.loads(params["matchedPredicates"]) == [{"actionType": "update"}]
    assert json.loads(params["notMatchedPredicates"]) == [
        {"actionType": "insert", "predicate": "s.ok"}
    ]
    assert info["operationMetrics"] == {"numTargetRowsInserted": "3"}
    assert info["userMetadata"] == "nightly"


def test_new_tables_get_the_smallest_protocol_their_metadata_needs():
    def needed(schema: StructType, config: dict[str, str]) -> Protocol:
        return protocol.required(new_metadata(schema, [], config))

    assert needed(SCHEMA, {}) == Protocol(1, 2)
    assert needed(SCHEMA, {"delta.enableChangeDataFeed": "true"}) == Protocol(  # delta-spark's
        1, 7, None, frozenset({"changeDataFeed", "appendOnly", "invariants"})
    )
    assert needed(SCHEMA, {"delta.constraints.pos": "id > 0"}) == Protocol(1, 3)
    ntz = StructType([StructField("t", TimestampNTZType())])
    assert needed(ntz, {}) == Protocol(
        3,
        7,
        frozenset({"timestampNtz"}),
        frozenset({"timestampNtz", "appendOnly", "invariants"}),
    )
    upgraded = protocol.required(
        Metadata("x", SCHEMA.json(), configuration={"delta.enableDeletionVectors": "true"}),
        Protocol(1, 4),
    )
    assert upgraded.writer_features == {
        "deletionVectors", "appendOnly", "invariants", "changeDataFeed", "generatedColumns",
        "checkConstraints",
    }  # fmt: skip
    assert upgraded.reader_features == {"deletionVectors"}


def test_writer_features_headwater_cannot_keep_are_refused_before_writing(table):
    # Another engine turned on in-commit timestamps, whose rules headwater does not keep.
    upgrade = Protocol(3, 7, frozenset(), frozenset({"inCommitTimestamp", "appendOnly"}))
    commit = os.path.join(table, "_delta_log", f"{1:020d}.json")
    with open(commit, "w") as f:
        f.write(json.dumps(upgrade.to_json()) + "\n")
    with pytest.raises(UnsupportedFeatureError, match="inCommitTimestamp"):
        _append(table, _file(table, "a.parquet", [1]))
    assert RsTable(table).version() == 1


def test_append_only_tables_refuse_removes(table):
    a = _file(table, "a.parquet", [1])
    _append(table, a)
    dlog = DeltaLog(table)
    snapshot = dlog.snapshot()
    alter = Transaction(dlog, snapshot, Operation("SET TBLPROPERTIES"))
    alter.update_metadata(replace(snapshot.metadata, configuration={"delta.appendOnly": "true"}))
    alter.commit()
    deleter = Transaction(dlog, dlog.snapshot(), Operation.predicate("DELETE", None))
    deleter.remove_files([a.remove()])
    with pytest.raises(UnsupportedFeatureError, match="append-only"):
        deleter.commit()


def test_a_checkpoint_follows_every_interval_of_commits(tmp_path):
    root = str(tmp_path / "t")
    create_table(root, SCHEMA, properties={"delta.checkpointInterval": "5"})
    for i in range(6):
        _append(root, _file(root, f"f{i}.parquet", [i]))
    log_dir = os.path.join(root, "_delta_log")
    assert sorted(f for f in os.listdir(log_dir) if "checkpoint." in f) == [
        "00000000000000000004.checkpoint.parquet"
    ]
    assert _ids(root) == list(range(6))
