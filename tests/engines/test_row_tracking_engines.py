"""Row tracking shared by the engines: a table headwater's engine creates with
``delta.enableRowTracking``, appends to and changes (UPDATE, DELETE, MERGE, OPTIMIZE)
reads on delta-spark with the row ids and row commit versions headwater gave its rows,
and delta-spark, then headwater again, go on writing it without an id handed out twice."""

from __future__ import annotations

from tests.engines.test_feature_matrix_read_only import create, insert
from tests.engines.test_shared_tables import assert_same_table, table

ON = "'delta.enableRowTracking' = 'true', 'delta.enableDeletionVectors' = 'true'"


def row_lineage(spark, path: str, version: int | None = None) -> list[tuple]:
    """(id, row id, row commit version) of every row, as delta-spark reads them."""
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    found = reader.load(path).select("id", "_metadata.row_id", "_metadata.row_commit_version")
    return sorted(tuple(r) for r in found.collect())


def our_lineage(spark, path: str) -> list[tuple]:
    """The same as headwater's rewrites read them (the ids they write again)."""
    from headwater.delta.dml.target import read_target
    from headwater.delta.log import row_tracking
    from headwater.delta.log.delta_log import DeltaLog

    snapshot = DeltaLog(path).snapshot()
    names = row_tracking.materialized(snapshot.configuration)
    assert names is not None
    rows = read_target(spark, snapshot).select("id", *[f"`{n}`" for n in names]).collect()
    return sorted(tuple(r) for r in rows)


def test_row_ids_headwater_writes_read_the_same_on_delta_spark(engines, tmp_path):
    ours, theirs = engines["headwater"], engines["delta-spark"]
    path = str(tmp_path / "t")
    ours.sql(create(path, ON), insert(path, 0, 10), insert(path, 10, 20))  # versions 0-2
    first = {r[0]: r[1:] for r in theirs.call(row_lineage, path)}
    assert sorted(i for i, _ in first.values()) == list(range(20))
    ours.sql(
        f"UPDATE {table(path)} SET v = 'u' WHERE id % 4 = 0",  # 3: a deletion vector
        f"DELETE FROM {table(path)} WHERE id = 5",  # 4
        f"MERGE INTO {table(path)} t USING (SELECT 1 AS id, 'm' AS v UNION ALL "
        "SELECT 100, 'new') s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",  # 5
        f"OPTIMIZE {table(path)}",  # 6: every row copied
    )
    theirs_now = theirs.call(row_lineage, path)
    assert theirs_now == ours.call(our_lineage, path)
    now = {r[0]: r[1:] for r in theirs_now}
    assert set(now) == (set(range(20)) - {5}) | {100}
    for i in set(now) - {100}:
        changed = 5 if i == 1 else 3 if i % 4 == 0 else None
        assert now[i] == (first[i][0], changed or first[i][1])
    assert now[100][0] >= 20 and now[100][1] == 5
    # delta-spark goes on writing: new ids past headwater's high water mark, old ids kept.
    theirs.sql(insert(path, 200, 205), f"UPDATE {table(path)} SET v = 'x' WHERE id = 7")
    later = {r[0]: r[1:] for r in theirs.call(row_lineage, path)}
    assert later[7] == (now[7][0], 8)
    assert {i: later[i] for i in now if i != 7} == {i: now[i] for i in now if i != 7}
    assert len({r for r, _ in later.values()}) == len(later)
    assert min(later[i][0] for i in range(200, 205)) > now[100][0]
    assert_same_table(theirs, ours, path)
    # ... and headwater after it: ids kept by its rewrite, none handed out twice.
    ours.sql(insert(path, 300, 303), f"DELETE FROM {table(path)} WHERE id = 202")
    last = {r[0]: r[1:] for r in theirs.call(row_lineage, path)}
    assert len({r for r, _ in last.values()}) == len(last) == len(later) + 2
    assert {i: last[i] for i in later if i != 202} == {i: later[i] for i in later if i != 202}
