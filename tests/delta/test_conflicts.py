"""Concurrent writers through the public API: which races fail, with which of delta-spark's
exceptions, and which commit side by side.

Each test holds the first operation just before its commit (its files written, its
transaction staged), lets the second operation run to completion, then releases the first;
so the second always lands in between, as it would in a real race.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable

from deltalake import DeltaTable as RsTable

from headwater.delta.exceptions import (  # delta-spark's names
    ConcurrentAppendException,
    ConcurrentDeleteReadException,
    ConcurrentTransactionException,
    MetadataChangedException,
    ProtocolChangedException,
)
from headwater.delta.log.commit import Transaction
from headwater.delta.tables import DeltaTable


def race(monkeypatch, first: Callable[[], object], second: Callable[[], object]) -> object:
    """Run ``first`` up to its commit, then ``second`` whole, then let ``first`` commit;
    returns what ``first`` returned or raised."""
    ready, go = threading.Event(), threading.Event()
    outcome: dict[str, object] = {}
    real = Transaction.commit
    held: list[threading.Thread] = []

    def commit(self: Transaction) -> int:
        if held and threading.current_thread() is held[0] and not go.is_set():
            ready.set()
            go.wait(300)
        return real(self)

    def run() -> None:
        try:
            outcome["value"] = first()
        except BaseException as e:  # handed to the test
            outcome["error"] = e

    monkeypatch.setattr(Transaction, "commit", commit)
    thread = threading.Thread(target=run)
    held.append(thread)
    thread.start()
    try:
        assert ready.wait(300), outcome.get("error")
        second()
    finally:
        go.set()
        thread.join(300)
    return outcome.get("error", outcome.get("value"))


def _table(spark, path: str, partitioned: bool = False) -> DeltaTable:
    df = spark.range(10).selectExpr("id", "cast(id % 2 as int) AS k", "'v' AS v").coalesce(1)
    writer = df.write.format("delta")
    if partitioned:
        writer = writer.partitionBy("k")
    writer.save(path)
    return DeltaTable.forPath(spark, path)


def _appender(spark, path: str, first: int, **options: object) -> Callable[[], None]:
    """An append of ids ``first`` and ``first + 1``, to run later."""

    def append() -> None:
        df = spark.range(first, first + 2).selectExpr("id", "1 AS k", "'x' AS v")
        df.write.format("delta").mode("append").options(**options).save(path)

    return append


def _unreferenced(path: str) -> set[str]:
    """Data files in the table's folder that no version of its log names."""
    named = set()
    for commit in sorted(os.listdir(os.path.join(path, "_delta_log"))):
        if commit.endswith(".json"):
            with open(os.path.join(path, "_delta_log", commit)) as f:
                named |= {json.loads(line)["add"]["path"] for line in f if '"add"' in line}
    return {n for n in os.listdir(path) if n.endswith(".parquet")} - named


def _ids(spark, path: str) -> list[int]:
    return sorted(r.id for r in spark.read.format("delta").load(path).collect())


def test_an_update_racing_a_delete_of_its_file_fails_with_concurrent_delete_read(
    spark, tmp_path, monkeypatch
):
    path = str(tmp_path / "t")
    table = _table(spark, path)
    result = race(
        monkeypatch,
        lambda: table.update("id = 7", {"v": "'updated'"}),
        lambda: table.delete(),
    )
    assert isinstance(result, ConcurrentDeleteReadException)
    assert result.error_class == "DELTA_CONCURRENT_DELETE_READ"
    assert _ids(spark, path) == []  # only the delete landed
    assert RsTable(path).history(1)[0]["operation"] == "DELETE"


def test_a_delete_racing_an_update_that_rewrote_its_file_fails_with_concurrent_append(
    spark, tmp_path, monkeypatch
):
    """delta-spark's order of checks: the rewritten file is a file the DELETE's data
    predicate would have read, which is found before the removal of the file it read."""
    path = str(tmp_path / "t")
    table = _table(spark, path)
    result = race(
        monkeypatch,
        lambda: table.delete("id < 3"),
        lambda: table.update("id = 7", {"v": "'updated'"}),
    )
    assert isinstance(result, ConcurrentAppendException)
    assert _ids(spark, path) == list(range(10))


def test_updates_of_different_partitions_both_commit(spark, tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    table = _table(spark, path, partitioned=True)
    result = race(
        monkeypatch,
        lambda: table.update("k = 0", {"v": "'even'"}),
        lambda: table.update("k = 1", {"v": "'odd'"}),
    )
    assert not isinstance(result, BaseException), result
    rows = spark.read.format("delta").load(path).collect()
    assert {(r.k, r.v) for r in rows} == {(0, "even"), (1, "odd")}
    assert [h["operation"] for h in RsTable(path).history(2)] == ["UPDATE", "UPDATE"]


def _insert(spark, table: DeltaTable, id_: int, k: int) -> None:
    source = spark.createDataFrame([(id_, k, "new")], "id long, k int, v string")
    (table.alias("t").merge(source.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute())


def test_a_delete_of_a_partition_conflicts_with_rows_merged_into_that_partition_only(
    spark, tmp_path, monkeypatch
):
    path = str(tmp_path / "t")
    table = _table(spark, path, partitioned=True)
    elsewhere = race(
        monkeypatch, lambda: table.delete("k = 0"), lambda: _insert(spark, table, 11, 1)
    )
    assert not isinstance(elsewhere, BaseException), elsewhere
    assert _ids(spark, path) == [1, 3, 5, 7, 9, 11]
    same = race(monkeypatch, lambda: table.delete("k = 1"), lambda: _insert(spark, table, 20, 1))
    assert isinstance(same, ConcurrentAppendException)
    assert "k" in str(same) and _ids(spark, path) == [1, 3, 5, 7, 9, 11, 20]


def test_an_append_racing_a_schema_change_fails_with_metadata_changed(spark, tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    _table(spark, path)
    result = race(
        monkeypatch,
        _appender(spark, path, 10),
        lambda: spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (extra STRING)"),
    )
    assert isinstance(result, MetadataChangedException)
    assert _ids(spark, path) == list(range(10))
    assert _unreferenced(path) == set()  # the loser deleted the files it wrote


def test_an_append_racing_a_protocol_upgrade_fails_with_protocol_changed(
    spark, tmp_path, monkeypatch
):
    path = str(tmp_path / "t")
    _table(spark, path)
    result = race(
        monkeypatch,
        _appender(spark, path, 10),
        lambda: spark.sql(
            f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = true)"
        ),
    )
    assert isinstance(result, ProtocolChangedException)
    assert RsTable(path).protocol().reader_features == ["deletionVectors"]


def test_two_writers_recording_the_same_application_fail_the_second(spark, tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    _table(spark, path)
    result = race(
        monkeypatch,
        _appender(spark, path, 101, txnAppId="nightly-load", txnVersion=1),
        _appender(spark, path, 102, txnAppId="nightly-load", txnVersion=2),
    )
    assert isinstance(result, ConcurrentTransactionException)
    assert RsTable(path).transaction_version("nightly-load") == 2
    assert _ids(spark, path) == [*range(10), 102, 103]


def test_appends_racing_appends_both_commit(spark, tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    _table(spark, path)
    result = race(monkeypatch, _appender(spark, path, 100), _appender(spark, path, 200))
    assert not isinstance(result, BaseException), result
    assert _ids(spark, path) == [*range(10), 100, 101, 200, 201]
    assert [h["isBlindAppend"] for h in RsTable(path).history(2)] == [True, True]


def _isolation(spark, path: str, level: str) -> None:
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.isolationLevel' = '{level}')")


def test_a_delete_on_a_serializable_table_fails_on_a_blind_append_to_its_partition(
    spark, tmp_path, monkeypatch
):
    """``delta.isolationLevel = Serializable``, as delta-spark: a DELETE that read partition
    k = 1 fails when an append into k = 1 lands first; an append elsewhere does not. (A
    condition on partition columns alone: one that reads data columns depends on every
    partition.) The SQL statement raises the conflict as itself, for callers to catch."""
    path = str(tmp_path / "t")
    table = _table(spark, path, partitioned=True)
    _isolation(spark, path, "Serializable")
    same = race(
        monkeypatch,
        lambda: spark.sql(f"DELETE FROM delta.`{path}` WHERE k = 1"),
        _appender(spark, path, 20),
    )
    assert isinstance(same, ConcurrentAppendException), same  # through SQL too
    assert "(partition {'k': '1'})" in str(same) and "delta.isolationLevel is Serializable" in str(
        same
    )
    assert _ids(spark, path) == [*range(10), 20, 21]  # the DELETE committed nothing
    elsewhere = race(monkeypatch, lambda: table.delete("k = 0"), _appender(spark, path, 30))
    assert not isinstance(elsewhere, BaseException), elsewhere
    assert _ids(spark, path) == [1, 3, 5, 7, 9, 20, 21, 30, 31]
    levels = [h["isolationLevel"] for h in RsTable(path).history(4)]
    assert levels == ["Serializable"] * 4


def test_a_delete_on_a_write_serializable_table_commits_past_a_blind_append(
    spark, tmp_path, monkeypatch
):
    path = str(tmp_path / "t")
    table = _table(spark, path, partitioned=True)
    _isolation(spark, path, "WriteSerializable")
    result = race(monkeypatch, lambda: table.delete("k = 1"), _appender(spark, path, 20))
    assert not isinstance(result, BaseException), result
    assert _ids(spark, path) == [0, 2, 4, 6, 8, 20, 21]  # as if the DELETE ran first
    assert RsTable(path).history(1)[0]["isolationLevel"] == "WriteSerializable"


def test_optimize_on_a_serializable_table_commits_past_an_append(spark, tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    _table(spark, path, partitioned=True)
    _appender(spark, path, 20)()
    _isolation(spark, path, "Serializable")
    result = race(
        monkeypatch,
        lambda: spark.sql(f"OPTIMIZE delta.`{path}`").collect(),
        _appender(spark, path, 30),
    )
    assert not isinstance(result, BaseException), result
    assert _ids(spark, path) == [*range(10), 20, 21, 30, 31]
    last = RsTable(path).history(1)[0]
    assert (last["operation"], last["isolationLevel"]) == ("OPTIMIZE", "SnapshotIsolation")
