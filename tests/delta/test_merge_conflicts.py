"""MERGE, UPDATE and DELETE racing other commits, through the public API: what they record
as read is the partition part of their condition, as in delta-spark, so writers into other
partitions commit beside them (no conflict, nothing run again), while a commit into a
partition they read still fails them with ``ConcurrentAppendException`` naming it.

Each race holds the first operation just before its commit and runs the second whole
(:func:`tests.delta.test_conflicts.race`).
"""

from __future__ import annotations

from deltalake import DeltaTable as RsTable

from headwater.delta.exceptions import ConcurrentAppendException
from headwater.delta.tables import DeltaTable
from tests.delta.test_conflicts import race


def _partitioned(spark, path: str, properties: str = "") -> DeltaTable:
    """ids 0..9 in partitions k = id % 2."""
    df = spark.range(10).selectExpr("id", "cast(id % 2 as int) AS k", "'v' AS v").coalesce(1)
    df.write.format("delta").partitionBy("k").save(path)
    if properties:
        spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({properties})")
    return DeltaTable.forPath(spark, path)


def _merge(spark, path: str, on: str, rows: list[tuple[int, int]], tag: str):
    """A SQL MERGE upserting ``rows`` (id, k), to run later."""
    values = ", ".join(f"({i}, {k})" for i, k in rows)
    statement = (
        f"MERGE INTO delta.`{path}` AS t USING (SELECT CAST(col1 AS BIGINT) AS id, "
        f"CAST(col2 AS INT) AS k, '{tag}' AS v FROM VALUES {values}) AS s ON {on} "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
    )
    return lambda: spark.sql(statement).collect()


def _rows(spark, path: str) -> dict[int, str]:
    return {r.id: r.v for r in spark.read.format("delta").load(path).collect()}


def _last(path: str) -> dict:
    return RsTable(path).history(1)[0]


def test_merges_into_different_partitions_commit_side_by_side(spark, tmp_path, monkeypatch):
    """MERGE into k = 0 (the partition named in its condition) while a MERGE into k = 1
    lands: both commit, the first at its own read version (not run again). A condition
    without a partition predicate read the whole table and conflicts, as before."""
    path = str(tmp_path / "t")
    _partitioned(spark, path)
    result = race(
        monkeypatch,
        _merge(spark, path, "t.k = 0 AND t.id = s.id", [(2, 0), (20, 0)], "a"),
        _merge(spark, path, "t.k = 1 AND t.id = s.id", [(3, 1), (21, 1)], "b"),
    )
    assert not isinstance(result, BaseException), result
    rows = _rows(spark, path)
    assert (rows[2], rows[20], rows[3], rows[21]) == ("a", "a", "b", "b")
    first, second = RsTable(path).history(2)  # newest first
    assert (first["operation"], second["operation"]) == ("MERGE", "MERGE")
    assert first["readVersion"] == second["readVersion"] == 0  # neither read the other

    whole = race(
        monkeypatch,
        _merge(spark, path, "t.id = s.id", [(4, 0)], "c"),
        _merge(spark, path, "t.k = 1 AND t.id = s.id", [(5, 1)], "d"),
    )
    assert isinstance(whole, ConcurrentAppendException), whole
    assert "(partition {'k': '1'})" in str(whole) and _rows(spark, path)[4] == "v"


def test_a_merge_conflicts_with_a_merge_into_its_partition(spark, tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    _partitioned(spark, path)
    result = race(
        monkeypatch,
        _merge(spark, path, "t.k = 0 AND t.id = s.id", [(2, 0)], "a"),
        _merge(spark, path, "t.k = 0 AND t.id = s.id", [(4, 0)], "b"),
    )
    assert isinstance(result, ConcurrentAppendException), result
    assert "(partition {'k': '0'})" in str(result)
    assert (_rows(spark, path)[2], _rows(spark, path)[4]) == ("v", "b")


def test_a_merge_on_a_serializable_table_fails_only_on_appends_to_its_partition(
    spark, tmp_path, monkeypatch
):
    path = str(tmp_path / "t")
    _partitioned(spark, path, "'delta.isolationLevel' = 'Serializable'")

    def append(ids: list[int], k: int):
        df = spark.createDataFrame([(i, k, "x") for i in ids], "id long, k int, v string")
        return lambda: df.write.format("delta").mode("append").save(path)

    elsewhere = race(
        monkeypatch,
        _merge(spark, path, "t.k = 0 AND t.id = s.id", [(2, 0)], "a"),
        append([31], 1),
    )
    assert not isinstance(elsewhere, BaseException), elsewhere
    assert _last(path)["readVersion"] == 1  # committed past the append, not run again
    same = race(
        monkeypatch,
        _merge(spark, path, "t.k = 0 AND t.id = s.id", [(4, 0)], "b"),
        append([40], 0),
    )
    assert isinstance(same, ConcurrentAppendException), same
    assert "(partition {'k': '0'})" in str(same) and "Serializable" in str(same)
    rows = _rows(spark, path)
    assert (rows[2], rows[4], rows[31], rows[40]) == ("a", "v", "x", "x")


def test_update_and_delete_with_data_predicates_read_only_their_partition(
    spark, tmp_path, monkeypatch
):
    """``k = 0 AND id > 2`` reads partition k = 0 alone: a MERGE into k = 1 does not
    conflict with it; one into k = 0 does."""
    path = str(tmp_path / "t")
    table = _partitioned(spark, path)
    updated = race(
        monkeypatch,
        lambda: table.update("k = 0 AND id > 2", {"v": "'u'"}),
        _merge(spark, path, "t.k = 1 AND t.id = s.id", [(3, 1)], "b"),
    )
    assert not isinstance(updated, BaseException), updated
    assert _last(path)["readVersion"] == 0
    deleted = race(
        monkeypatch,
        lambda: spark.sql(f"DELETE FROM delta.`{path}` WHERE k = 0 AND id > 6"),
        _merge(spark, path, "t.k = 0 AND t.id = s.id", [(0, 0)], "c"),
    )
    assert isinstance(deleted, ConcurrentAppendException), deleted
    assert "(partition {'k': '0'})" in str(deleted)
    rows = _rows(spark, path)
    assert (rows[0], rows[2], rows[4], rows[3], rows[8]) == ("c", "v", "u", "b", "u")


def test_a_column_mapped_table_conflicts_in_the_partition_read(spark, tmp_path, monkeypatch):
    """Under column mapping the log keys partition values by physical names; a DELETE of
    partition k = 1 must still see a MERGE's files added there (it missed them)."""
    path = str(tmp_path / "t")
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT, k INT, v STRING) USING DELTA "
        "PARTITIONED BY (k) TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"
    )
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 1, 'v'), (2, 0, 'v'), (3, 1, 'v')")
    result = race(
        monkeypatch,
        lambda: spark.sql(f"DELETE FROM delta.`{path}` WHERE k = 1 AND id > 2"),
        _merge(spark, path, "t.k = 1 AND t.id = s.id", [(1, 1)], "b"),
    )
    assert isinstance(result, ConcurrentAppendException), result
    assert _rows(spark, path) == {1: "b", 2: "v", 3: "v"}
