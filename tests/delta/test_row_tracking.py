"""Row tracking through headwater's writes: appends number their rows, and UPDATE, DELETE,
MERGE and OPTIMIZE keep every surviving row's id, with the commit version of the last
change to it (copy-on-write, and with deletion vectors on)."""

from __future__ import annotations

import pytest

from headwater.delta.dml.target import read_target
from headwater.delta.log import row_tracking
from headwater.delta.log.delta_log import DeltaLog

ON = "'delta.enableRowTracking' = 'true'"


def lineage(spark, path: str) -> dict[int, tuple[int, int]]:
    """Each row's (row id, row commit version), by its ``id`` column."""
    snapshot = DeltaLog(path).snapshot()
    row_id, version = row_tracking.materialized(snapshot.configuration) or ("", "")
    rows = read_target(spark, snapshot).select("id", f"`{row_id}`", f"`{version}`").collect()
    found = {r[0]: (r[1], r[2]) for r in rows}
    assert len(found) == len(rows)
    return found


@pytest.mark.parametrize("vectors", [False, True], ids=["copy_on_write", "deletion_vectors"])
def test_rows_keep_their_ids_through_dml_and_optimize(spark, tmp_path, vectors):
    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    dv = ", 'delta.enableDeletionVectors' = 'true'" if vectors else ""
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING) USING DELTA TBLPROPERTIES ({ON}{dv})")
    spark.sql(f"INSERT INTO {t} SELECT id, 'a' FROM range(0, 10)")  # version 1
    spark.sql(f"INSERT INTO {t} SELECT id, 'b' FROM range(10, 20)")  # version 2
    before = lineage(spark, path)
    assert sorted(r for r, _ in before.values()) == list(range(20))
    assert {i: v for i, (_, v) in before.items()} == {i: 1 if i < 10 else 2 for i in range(20)}

    spark.sql(f"UPDATE {t} SET v = 'u' WHERE id % 4 = 0")  # version 3
    spark.sql(f"DELETE FROM {t} WHERE id = 5")  # version 4
    after = lineage(spark, path)
    assert set(after) == set(range(20)) - {5}
    for i, (row_id, version) in after.items():
        assert row_id == before[i][0]
        assert version == (3 if i % 4 == 0 else before[i][1])

    source = spark.createDataFrame([(1, "m"), (100, "new")], "id BIGINT, v STRING")
    source.createOrReplaceTempView("rt_source")
    spark.sql(
        f"MERGE INTO {t} AS t USING rt_source AS s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
    )  # version 5
    spark.sql(f"OPTIMIZE {t}")  # version 6: rows copied, ids and versions kept
    final = lineage(spark, path)
    assert final[1] == (before[1][0], 5)
    assert final[100][0] >= 20 and final[100][1] == 5  # a fresh id past every earlier one
    assert {i: final[i] for i in after if i != 1} == {i: after[i] for i in after if i != 1}
    assert len({r for r, _ in final.values()}) == len(final)
    assert DeltaLog(path).snapshot().version == 6
    assert sorted(r.v for r in spark.read.format("delta").load(path).collect()).count("u") == 5


def test_a_table_with_rows_cannot_turn_it_on(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    with pytest.raises(Exception, match="backfilled"):
        spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({ON})")
    assert DeltaLog(path).snapshot().version == 0


def test_changes_derived_without_the_feed_hold_only_the_changed_rows(spark, tmp_path):
    """A copy-on-write UPDATE and DELETE rewrite a 50-row file each; the change read back
    from the files they removed and added pairs the copied rows by id and drops them."""
    from headwater.engines.table_log import TableLog, read_changes

    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING) USING DELTA TBLPROPERTIES ({ON})")
    spark.range(50).selectExpr("id", "'a' AS v").coalesce(1).write.format("delta").mode(
        "append"
    ).save(path)
    spark.sql(f"UPDATE {t} SET v = 'b' WHERE id = 7")
    spark.sql(f"DELETE FROM {t} WHERE id = 9")
    rows = read_changes(spark, TableLog(path), 1, 3).collect()
    assert sorted((r.id, r.v, r._change_type) for r in rows) == [
        (7, "a", "delete"),
        (7, "b", "insert"),
        (9, "a", "delete"),
    ]
