"""MERGE's two plans (with or without the join that finds touched files first) give the same
commit: only files holding a matched row are rewritten, duplicates fail, nothing is left
behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable as RsTable
from pyspark.sql import functions as F

from headwater.delta.dml import merge as merge_module
from headwater.delta.dml import merge_plan
from headwater.delta.tables import DeltaTable
from headwater.errors import DeltaError


@pytest.fixture(params=["skip-touched-join", "touched-join-first"])
def plan(request, monkeypatch):
    if request.param == "touched-join-first":
        monkeypatch.setattr(merge_plan, "OPTIMISTIC_MIN_ROWS", 0)
        monkeypatch.setattr(merge_plan, "OPTIMISTIC_ROWS_PER_SOURCE_ROW", 0)
    return request.param


@pytest.fixture
def undone(monkeypatch) -> list[int]:
    """Files of each write MERGE undid (the real deletion still runs)."""
    calls: list[int] = []
    real = merge_module.discard_files

    def recording(root, adds):
        calls.append(len(adds))
        real(root, adds)

    monkeypatch.setattr(merge_module, "discard_files", recording)
    return calls


def _interleaved_table(spark, path: str) -> None:
    """Several files whose id ranges all overlap (rows spread by ``k = id % 7``), so the log's
    stats cannot tell which file holds a given id."""
    spark.range(700).selectExpr("id", "cast(id % 7 as int) as k", "'old' as v").repartition(
        4, "k"
    ).write.format("delta").save(path)


def _files(path: str) -> set[str]:
    return {f.rsplit("/", 1)[-1] for f in RsTable(path).file_uris()}


def _parquet_on_disk(path: str) -> set[str]:
    root = Path(path)
    return {p.name for p in root.rglob("*.parquet") if "_delta_log" not in p.parts}


def test_merge_rewrites_only_the_file_holding_matched_rows(spark, tmp_path, plan, undone):
    path = str(tmp_path / "t")
    _interleaved_table(spark, path)
    before = _files(path)
    assert len(before) >= 2
    by_file = {
        r[0].rsplit("/", 1)[-1]: (r[1], r[2])
        for r in spark.read.format("delta")
        .load(path)
        .groupBy("_metadata.file_path")
        .agg(F.count("*"), F.max(F.col("k") == 3))
        .collect()
    }
    holder = {f for f, (_, has_k3) in by_file.items() if has_k3}
    assert len(holder) == 1 and len(by_file) == len(before)
    source = spark.createDataFrame(
        [(3, 3, "new"), (10, 3, "new"), (1000, 6, "inserted")], "id long, k int, v string"
    )
    dt = DeltaTable.forPath(spark, path)
    dt.alias("t").merge(
        source.alias("s"), "t.id = s.id"
    ).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()

    after = _files(path)
    assert before - after == holder  # only the file with k = 3 was replaced
    m = dt.history(1).first().operationMetrics
    assert (m["numTargetRowsUpdated"], m["numTargetRowsInserted"]) == ("2", "1")
    assert m["numTargetFilesRemoved"] == "1"
    copied = by_file[next(iter(holder))][0] - 2
    assert m["numTargetRowsCopied"] == str(copied)  # the rest of that file, nothing more
    rows = spark.read.format("delta").load(path)
    assert rows.count() == 701
    assert sorted(r.id for r in rows.where("v <> 'old'").collect()) == [3, 10, 1000]
    # A write undone (a candidate file turned out untouched) leaves no file behind.
    assert len(undone) == (1 if plan == "skip-touched-join" else 0)
    assert _parquet_on_disk(path) == before | after


def test_merge_touching_every_candidate_file_writes_once(spark, tmp_path, plan, undone):
    path = str(tmp_path / "t")
    _interleaved_table(spark, path)
    before = _files(path)
    source = spark.range(0, 700, 50).selectExpr("id", "cast(id % 7 as int) as k", "'new' as v")
    dt = DeltaTable.forPath(spark, path)
    dt.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute()
    assert undone == []
    assert _files(path).isdisjoint(before)
    assert dt.toDF().where("v = 'new'").count() == 14


def test_merge_with_two_source_rows_for_one_target_row_fails_and_leaves_nothing(
    spark, tmp_path, plan
):
    path = str(tmp_path / "t")
    _interleaved_table(spark, path)
    before = _files(path)
    source = spark.createDataFrame(
        [(3, 3, "a"), (3, 3, "b"), (2000, 1, "c")], "id long, k int, v string"
    )
    with pytest.raises(DeltaError, match="MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW"):
        DeltaTable.forPath(spark, path).alias("t").merge(
            source.alias("s"), "t.id = s.id"
        ).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    assert RsTable(path).version() == 0
    assert _parquet_on_disk(path) == before


def test_duplicate_source_rows_that_match_nothing_are_inserted(spark, tmp_path, plan):
    """Only a target row matched twice is an error; unmatched duplicates are inserts."""
    path = str(tmp_path / "t")
    _interleaved_table(spark, path)
    source = spark.createDataFrame(
        [(5, 5, "u"), (900, 1, "x"), (900, 1, "x")], "id long, k int, v string"
    )
    dt = DeltaTable.forPath(spark, path)
    dt.alias("t").merge(
        source.alias("s"), "t.id = s.id"
    ).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    rows = spark.read.format("delta").load(path)
    assert rows.count() == 702
    assert rows.where("id = 900").count() == 2
    assert rows.where("id = 5").first().v == "u"
